"""Start-up failures of the long-running commands: one line and exit code 1, no traceback."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest
import yaml

from pykueue.certs.authority import issue_serving, new_ca
from pykueue.cli import main
from pykueue.kube.startup import StartupError, check_kubeconfig, exit_code, one_line, starting


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # nothing listens on it once the socket is closed


def _kubeconfig(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def test_one_line_joins_lines_and_names_silent_exceptions() -> None:
    assert one_line(ValueError("first\n  second\n\n")) == "first; second"
    assert one_line(OSError()) == "OSError"


def test_one_line_gives_a_yaml_errors_problem_and_position() -> None:
    with pytest.raises(yaml.YAMLError) as caught:
        yaml.safe_load("a: [\n")
    assert one_line(caught.value) == "expected the node content, but found '<stream end>' (line 2, column 1)"


def test_starting_names_the_step_of_an_environment_failure() -> None:
    with pytest.raises(StartupError, match=r"^reading x: \[Errno 2\] gone$"), starting("reading x"):
        raise FileNotFoundError(2, "gone")


def test_starting_leaves_a_bug_its_traceback() -> None:
    with pytest.raises(KeyError), starting("reading x"):
        raise KeyError("bug")


def test_check_kubeconfig(tmp_path: Path) -> None:
    check_kubeconfig(None)  # in-cluster or $KUBECONFIG: the library decides
    check_kubeconfig(str(_kubeconfig(tmp_path, "https://127.0.0.1:1")))
    with pytest.raises(StartupError, match=r"^kubeconfig .*/absent not found$"):
        check_kubeconfig(str(tmp_path / "absent"))
    with pytest.raises(LookupError, match=r"^kubeconfig .*/absent not found$"):  # a caller's own error
        check_kubeconfig(str(tmp_path / "absent"), LookupError)


def test_exit_code_logs_one_line_for_a_startup_failure(caplog: pytest.LogCaptureFixture) -> None:
    def fails() -> int:
        raise StartupError("loading the kubeconfig: no such context")
    assert exit_code(lambda: 0) == 0
    with caplog.at_level(logging.ERROR):
        assert exit_code(fails) == 1
    assert [r.getMessage() for r in caplog.records] == [
        "cannot start: loading the kubeconfig: no such context"]


@pytest.mark.parametrize("command", ["manager", "run", "webhook"])
def test_an_absent_kubeconfig_exits_1(command: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        assert main([command, "--kubeconfig", str(tmp_path / "absent")]) == 1
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [
        f"cannot start: kubeconfig {tmp_path / 'absent'} not found"]


def test_a_malformed_config_file_exits_1(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("a: [\n")
    with caplog.at_level(logging.ERROR):
        assert main(["manager", "--config", str(config)]) == 1
    assert f"cannot start: --config {config}: expected the node content" in caplog.text


def test_an_unreachable_api_server_exits_1(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    port = _closed_port()
    kubeconfig = _kubeconfig(tmp_path, f"https://127.0.0.1:{port}")
    with caplog.at_level(logging.ERROR):
        assert main(["manager", "--kubeconfig", str(kubeconfig), "--metrics-bind-address", "127.0.0.1:0",
                     "--health-probe-bind-address", "127.0.0.1:0", "--no-leader-elect"]) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].startswith("cannot start: starting against the API server: Cannot connect to host "
                                f"127.0.0.1:{port}")


# The kubeconfig is checked first: these files are never read.
UNREAD_TLS_FILES = ["--tls-cert-file", "tls.crt", "--tls-private-key-file", "tls.key",
                    "--client-ca-file", "ca.crt"]


def _extender_files(tmp_path: Path) -> list[str]:
    """The extender's TLS flags over a fresh CA and serving pair, and a kubeconfig (never contacted)."""
    ca_crt, ca_key = new_ca()
    tls_crt, tls_key = issue_serving(ca_crt, ca_key, ["localhost"], ["127.0.0.1"])
    for name, data in (("ca.crt", ca_crt), ("tls.crt", tls_crt), ("tls.key", tls_key)):
        (tmp_path / name).write_bytes(data)
    return ["--kubeconfig", str(_kubeconfig(tmp_path, "https://127.0.0.1:1")),
            "--tls-cert-file", str(tmp_path / "tls.crt"), "--tls-private-key-file", str(tmp_path / "tls.key"),
            "--client-ca-file", str(tmp_path / "ca.crt"), "--host", "127.0.0.1"]


def _errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def test_the_extender_with_an_absent_kubeconfig_exits_1(tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    absent = tmp_path / "absent"
    with caplog.at_level(logging.ERROR):
        assert main(["extender", "--kubeconfig", str(absent), *UNREAD_TLS_FILES]) == 1
    assert _errors(caplog) == [f"cannot start: kubeconfig {absent} not found"]
    assert all(r.exc_info is None for r in caplog.records)


def test_the_extender_keeps_the_traceback_at_debug(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    absent = tmp_path / "absent"
    with caplog.at_level(logging.DEBUG):
        assert main(["extender", "--kubeconfig", str(absent), *UNREAD_TLS_FILES, "--log-level", "DEBUG"]) == 1
    assert _errors(caplog) == [f"cannot start: kubeconfig {absent} not found"]
    assert [type(r.exc_info[1]) for r in caplog.records if r.exc_info] == [StartupError]


@pytest.mark.parametrize("flag", ["--tls-cert-file", "--client-ca-file"])
def test_the_extender_names_an_absent_tls_file(flag: str, tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    args = _extender_files(tmp_path)
    absent = tmp_path / "absent.pem"
    args[args.index(flag) + 1] = str(absent)
    with caplog.at_level(logging.ERROR):
        assert main(["extender", *args]) == 1
    errors = _errors(caplog)
    assert len(errors) == 1
    assert errors[0].startswith(f"cannot start: {flag} {absent}")
    assert "No such file or directory" in errors[0]


def test_the_extender_on_a_taken_port_exits_1(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    args = _extender_files(tmp_path)
    with socket.socket() as taken, caplog.at_level(logging.ERROR):
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["extender", *args, "--port", str(port)]) == 1
    errors = _errors(caplog)
    assert len(errors) == 1
    assert errors[0].startswith(f"cannot start: listening on 127.0.0.1:{port}: ")
    assert "address already in use" in errors[0]
