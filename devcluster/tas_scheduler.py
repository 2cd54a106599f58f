"""A second kube-scheduler wired to pykueue's TAS extender, beside a running dev cluster.

Extenders are global to a kube-scheduler process, so pykueue ships its extender as the
profile ``pykueue-tas-scheduler`` of a dedicated scheduler (``manifests/scheduler``). Tests
and benchmarks use the same arrangement here: ``start_extender`` runs ``pykueue extender``
on a loopback port and ``start_tas_scheduler`` runs one more kube-scheduler with the
shipped configuration pointed at it. The dev cluster's own default scheduler stays as it
is, so other users of the same cluster are not disturbed.

Neither process is recorded in the cluster's state file: the caller owns them and stops
them with ``stop`` (``dev down`` does not know about them).
"""

from __future__ import annotations

import ssl
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from devcluster.cluster import current_state, layout
from devcluster.components import Layout
from devcluster.health import StartupError, http_ok, wait_for
from devcluster.paths import MANIFESTS_DIR, REPO_DIR
from devcluster.ports import LOOPBACK, free_ports
from devcluster.processes import ProcessRecord, spawn, stop

SHIPPED_CONFIG = MANIFESTS_DIR / "scheduler" / "kube-scheduler-config.yaml"
START_DEADLINE_S = 60.0


@dataclass(frozen=True)
class Started:
    """A process started by this module, and where it can be reached."""

    record: ProcessRecord
    url: str

    def stop(self) -> bool:
        return stop(self.record)


def _cluster_layout() -> tuple[Layout, Path]:
    state = current_state()
    if state is None:
        raise StartupError("no dev cluster is running (run `pykueue dev up` first)")
    return layout(), state.binary_paths()["kube-scheduler"]


def start_extender(work_dir: Path, *, port: int | None = None, kubeconfig: Path | None = None) -> Started:
    """``pykueue extender`` on a loopback port (a free one unless given, e.g. to restart it
    where a scheduler already points), with the dev cluster's admin identity."""
    lay, _ = _cluster_layout()
    if port is None:
        (port,) = free_ports(1)
    argv = [sys.executable, "-m", "pykueue", "extender", f"--host={LOOPBACK}", f"--port={port}",
            f"--kubeconfig={kubeconfig or lay.admin_kubeconfig}"]
    record = spawn("pykueue-extender", argv, work_dir / "pykueue-extender.log", cwd=REPO_DIR)
    url = f"http://{LOOPBACK}:{port}"
    try:
        wait_for("the TAS extender's /healthz", lambda: http_ok(f"{url}/healthz"), START_DEADLINE_S, record)
    except BaseException:
        stop(record)
        raise
    return Started(record, url)


def tas_scheduler_config(lay: Layout, extender_url: str) -> dict[str, Any]:
    """The shipped configuration with the dev cluster's connection settings filled in.

    Changed from the manifest: the kubeconfig (the dev cluster's scheduler identity), the
    client rate limits (the default scheduler's, so throughput comparisons are fair), the
    extender URL, and no leader election (that identity may only renew the lease named
    ``kube-scheduler``; the caller runs a single instance).
    """
    config: dict[str, Any] = yaml.safe_load(SHIPPED_CONFIG.read_text())
    config["clientConnection"] = {"kubeconfig": str(lay.component_kubeconfig("kube-scheduler")),
                                  "qps": 200, "burst": 400}
    config["leaderElection"] = {"leaderElect": False}
    for extender in config.get("extenders") or []:
        extender["urlPrefix"] = extender_url
    return config


def start_tas_scheduler(work_dir: Path, extender_url: str) -> Started:
    """One more kube-scheduler serving the profile ``pykueue-tas-scheduler`` via the extender."""
    lay, kube_scheduler = _cluster_layout()
    work_dir.mkdir(parents=True, exist_ok=True)
    config_path = work_dir / "pykueue-tas-scheduler.yaml"
    config_path.write_text(yaml.safe_dump(tas_scheduler_config(lay, extender_url), sort_keys=False))
    (port,) = free_ports(1)
    kubeconfig = str(lay.component_kubeconfig("kube-scheduler"))
    argv = [
        str(kube_scheduler),
        f"--config={config_path}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={LOOPBACK}", f"--secure-port={port}",
        f"--tls-cert-file={lay.pem('kube-scheduler-serving')}",
        f"--tls-private-key-file={lay.key('kube-scheduler-serving')}",
    ]
    record = spawn("pykueue-tas-scheduler", argv, work_dir / "pykueue-tas-scheduler.log")
    url = f"https://{LOOPBACK}:{port}"
    context = ssl.create_default_context(cafile=str(lay.pem("ca")))
    try:
        wait_for("the TAS kube-scheduler's /healthz", lambda: http_ok(f"{url}/healthz", context),
                 START_DEADLINE_S, record)
    except BaseException:
        stop(record)
        raise
    return Started(record, url)
