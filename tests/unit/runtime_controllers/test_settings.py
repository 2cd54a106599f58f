"""``pykueue manager``/``run`` settings: Kueue Configuration file, defaults, flags."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pykueue.kube.startup import StartupError
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


def test_the_lease_is_named_and_timed_as_the_configuration_says(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("namespace: q\nleaderElection: {resourceName: my-lease, resourceNamespace: elsewhere,\n"
                    "  leaseDuration: 30s, renewDeadline: 20s, retryPeriod: 5s}\n")
    lease = cli.settings_from(_args("--config", str(path))).lease
    assert lease == cli.LeaseSettings("my-lease", "elsewhere", 30.0, 20.0, 5.0)
    default = cli.settings_from(_args("--config", str(tmp_path / "absent.yaml"))).lease
    assert (default.name, default.namespace, default.duration_s) == ("c1f6bfd2.kueue.x-k8s.io", None, 15.0)


@pytest.mark.parametrize("section", ["{leaseDuration: 10s, renewDeadline: 10s}",
                                     "{renewDeadline: 2s, retryPeriod: 2s}", "{leaseDuration: soon}"])
def test_impossible_lease_timings_stop_the_start_with_one_line(tmp_path: Path, section: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"leaderElection: {section}\n")
    with pytest.raises(StartupError, match=r"^--config leaderElection: ") as err:
        cli.settings_from(_args("--config", str(path)))
    assert "\n" not in str(err.value)
