"""Start-up failures of the long-running commands: one line and exit code 1, no traceback."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest
import yaml

from kube.startup import StartupError, check_kubeconfig, exit_code, one_line, starting
from pykueue.cli import main


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
