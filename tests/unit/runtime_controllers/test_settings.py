"""``pykueue manager``/``run`` settings: Kueue Configuration file, defaults, flags."""

from __future__ import annotations

import argparse
from pathlib import Path

from pykueue.manager.runtime import cli


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults_without_a_config_file(tmp_path: Path) -> None:
    s = cli.settings_from(_args("--config", str(tmp_path / "absent.yaml")))
    assert (s.config, s.metrics_address, s.leader_elect, s.namespace) == ({}, ":8080", True, "kueue-system")


def test_config_file_then_flags(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nnamespace: q\n"
                    "metrics: {bindAddress: ':9090'}\nleaderElection: {leaderElect: false}\n")
    s = cli.settings_from(_args("--config", str(path)))
    assert (s.metrics_address, s.leader_elect, s.namespace) == (":9090", False, "q")
    s = cli.settings_from(_args("--config", str(path), "--metrics-bind-address", "127.0.0.1:0",
                                "--leader-elect"))
    assert (s.metrics_address, s.leader_elect) == ("127.0.0.1:0", True)
    assert cli.split_address(":8080") == ("0.0.0.0", 8080)
