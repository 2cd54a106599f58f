"""The command line exposes every subcommand of the design contract."""

from __future__ import annotations

import pytest

from pykueue.cli import COMMANDS, main

CONTRACT = {"run", "manager", "webhook", "extender", "simulate", "certs", "dev"}


def test_every_contract_command_is_registered() -> None:
    assert {c.name for c in COMMANDS} >= CONTRACT


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_each_command_has_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([name, "--help"])
    assert exc.value.code == 0
    assert "usage: pykueue " + name in capsys.readouterr().out


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err


def test_the_dashboard_listens_on_loopback_unless_a_host_is_named() -> None:
    from pykueue.run import dashboard_listen

    assert dashboard_listen(":8084") == ("127.0.0.1", 8084)
    assert dashboard_listen("127.0.0.1:0") == ("127.0.0.1", 0)
    assert dashboard_listen("0.0.0.0:8084") == ("0.0.0.0", 8084)  # every interface: asked for by name


def test_a_command_whose_package_is_absent_says_so(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The image leaves the dev cluster out: `pykueue dev` must then fail in one line."""
    import sys

    monkeypatch.setitem(sys.modules, "pykueue.devcluster.cli", None)  # import fails as if absent
    monkeypatch.setitem(sys.modules, "pykueue.devcluster", None)
    assert main(["dev"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "pykueue dev: not part of this installation (run it from a source checkout)"


def test_a_command_imports_only_its_own_module() -> None:
    """What another command needs stays out of a process: the manager loads neither the dev
    cluster, the webhook, the certificate library nor kubernetes-asyncio (tens of MB)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = ("import sys\n"
              "from pykueue.cli import build_parser\n"
              "build_parser(['manager', '--kubeconfig', 'k'])\n"
              "watched = {'pykueue.manager.runtime.cli', 'pykueue.devcluster', 'pykueue.webhook.cli', "
              "'pykueue.run', 'cryptography', 'kubernetes_asyncio'}\n"
              "print(sorted(m for m in sys.modules if m in watched))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert result.stdout.strip() == "['pykueue.manager.runtime.cli']"
