"""The TAS scheduler: a kube-scheduler wired to pykueue's TAS extender, in the dev cluster.

Extenders are global to a kube-scheduler process, so pykueue ships its extender as the
profile ``pykueue-tas-scheduler`` of a dedicated scheduler (``manifests/09-tas-scheduler.yaml``:
ServiceAccount, RBAC, the configuration in a ConfigMap, the Deployment). ``dev up`` runs
that configuration as one more process against the dev cluster's extender, itself the
install's ``pykueue extender`` run as a process (``dev_config`` and friends below;
``devcluster.addons`` starts both). Tests and benchmarks
that need an extender of their own (to stop it, or to measure it alone) use
``start_extender``, which runs ``pykueue extender`` on a loopback port, and
``start_tas_scheduler``, which runs one more kube-scheduler with the shipped configuration
under a profile name of their choosing. The dev cluster's default scheduler stays as it is.

The extender speaks mutual TLS only: ``start_extender`` issues a private CA, a serving pair
for loopback and the scheduler's client pair into the work directory (kept for a restart
on the same port), and the scheduler's configuration names the client pair.

Neither process is recorded in the cluster's state file: the caller owns them and stops
them with ``stop`` (``dev down`` does not know about them).
"""

from __future__ import annotations

import base64
import ssl
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pykueue.certs.authority import issue_client, issue_serving, new_ca
from pykueue.devcluster.components import Layout
from pykueue.devcluster.health import StartupError, http_ok, wait_for
from pykueue.devcluster.paths import MANIFESTS_DIR, REPO_DIR
from pykueue.devcluster.ports import LOOPBACK, free_ports
from pykueue.devcluster.processes import ProcessRecord, spawn, stop
from pykueue.kube.blocking import BlockingClient

# The install's TAS scheduler: ServiceAccount, RBAC, configuration, Deployment.
TAS_MANIFEST = MANIFESTS_DIR / "09-tas-scheduler.yaml"
START_DEADLINE_S = 60.0
TAS_SCHEDULER = "pykueue-tas-scheduler"


def shipped_documents() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(TAS_MANIFEST.read_text()) if isinstance(d, dict)]


def shipped_config() -> dict[str, Any]:
    """The KubeSchedulerConfiguration of the install's ConfigMap."""
    (config_map,) = (d for d in shipped_documents() if d.get("kind") == "ConfigMap")
    config: dict[str, Any] = yaml.safe_load(config_map["data"]["config.yaml"])
    return config


@dataclass(frozen=True)
class ClientTLS:
    """The files a caller of the extender needs: the CA to verify it, its client pair."""

    ca_file: Path
    cert_file: Path
    key_file: Path

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        context.load_cert_chain(str(self.cert_file), str(self.key_file))
        return context


@dataclass(frozen=True)
class Started:
    """A process started by this module, where it can be reached, and how to call it."""

    record: ProcessRecord
    url: str
    tls: ClientTLS | None = None

    def stop(self) -> bool:
        return stop(self.record)


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def extender_pki(directory: Path, client: str = TAS_SCHEDULER) -> tuple[Path, Path, ClientTLS]:
    """(serving cert, serving key, the client's TLS files) under ``directory``, issued once."""
    serving_crt, serving_key = directory / "serving.crt", directory / "serving.key"
    tls = ClientTLS(directory / "ca.crt", directory / "client.crt", directory / "client.key")
    if not all(p.exists() for p in (serving_crt, serving_key, tls.ca_file, tls.cert_file, tls.key_file)):
        ca_crt, ca_key = new_ca()
        crt, key = issue_serving(ca_crt, ca_key, ["localhost"], [LOOPBACK])
        client_crt, client_key = issue_client(ca_crt, ca_key, client)
        for path, data in ((serving_crt, crt), (serving_key, key), (tls.ca_file, ca_crt),
                           (tls.cert_file, client_crt), (tls.key_file, client_key)):
            _write(path, data)
    return serving_crt, serving_key, tls


def _cluster_layout() -> tuple[Layout, Path]:
    from pykueue.devcluster.cluster import current_state, layout  # the cluster module starts ours too

    state = current_state()
    if state is None:
        raise StartupError("no dev cluster is running (run `pykueue dev up` first)")
    return layout(), state.binary_paths()["kube-scheduler"]


def start_extender(work_dir: Path, *, port: int | None = None, kubeconfig: Path | None = None,
                   profile: str = TAS_SCHEDULER) -> Started:
    """``pykueue extender`` on a loopback port (a free one unless given, e.g. to restart it
    where a scheduler already points), with the dev cluster's admin identity, over mutual
    TLS with the certificates of ``extender_pki``, binding pods of scheduler ``profile``."""
    lay, _ = _cluster_layout()
    if port is None:
        (port,) = free_ports(1)
    serving_crt, serving_key, tls = extender_pki(work_dir / "extender-pki")
    argv = [sys.executable, "-m", "pykueue", "extender", f"--host={LOOPBACK}", f"--port={port}",
            f"--kubeconfig={kubeconfig or lay.admin_kubeconfig}",
            f"--tls-cert-file={serving_crt}", f"--tls-private-key-file={serving_key}",
            f"--client-ca-file={tls.ca_file}", f"--scheduler-name={profile}"]
    record = spawn("pykueue-extender", argv, work_dir / "pykueue-extender.log", cwd=REPO_DIR)
    url = f"https://{LOOPBACK}:{port}"
    try:
        wait_for("the TAS extender's /healthz", lambda: http_ok(f"{url}/healthz", tls.context()),
                 START_DEADLINE_S, record)
    except BaseException:
        stop(record)
        raise
    return Started(record, url, tls)


def _wired_to(config: dict[str, Any], extender_url: str, tls: ClientTLS) -> dict[str, Any]:
    """The configuration's extender at ``extender_url``, called with the client pair ``tls``."""
    for extender in config.get("extenders") or []:
        extender["urlPrefix"] = extender_url
        extender["tlsConfig"] = {"caFile": str(tls.ca_file), "certFile": str(tls.cert_file),
                                 "keyFile": str(tls.key_file)}
    return config


def tas_scheduler_config(lay: Layout, extender_url: str, tls: ClientTLS,
                         profile: str = TAS_SCHEDULER) -> dict[str, Any]:
    """The shipped configuration with the dev cluster's connection settings filled in.

    Changed from the manifest: the kubeconfig (the dev cluster's scheduler identity), the
    client rate limits (the default scheduler's, so throughput comparisons are fair), the
    extender URL and TLS files, the profile name (the dev cluster's own TAS scheduler serves
    the shipped one), and no leader election (that identity may only renew the lease named
    ``kube-scheduler``; the caller runs a single instance).
    """
    config = shipped_config()
    config["profiles"] = [{**p, "schedulerName": profile} for p in config.get("profiles") or []]
    config["clientConnection"] = {"kubeconfig": str(lay.component_kubeconfig("kube-scheduler")),
                                  "qps": 200, "burst": 400}
    config["leaderElection"] = {"leaderElect": False}
    return _wired_to(config, extender_url, tls)


def start_tas_scheduler(work_dir: Path, extender_url: str, tls: ClientTLS, profile: str) -> Started:
    """One more kube-scheduler serving the scheduler ``profile`` via the extender (a name
    of its own: the dev cluster's TAS scheduler already serves the shipped one)."""
    lay, kube_scheduler = _cluster_layout()
    work_dir.mkdir(parents=True, exist_ok=True)
    config_path = work_dir / "pykueue-tas-scheduler.yaml"
    config = tas_scheduler_config(lay, extender_url, tls, profile)
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    (port,) = free_ports(1)
    argv = scheduler_argv(kube_scheduler, config_path, lay.component_kubeconfig("kube-scheduler"), lay, port)
    record = spawn("pykueue-tas-scheduler", argv, work_dir / "pykueue-tas-scheduler.log")
    url = f"https://{LOOPBACK}:{port}"
    try:
        wait_healthy(record, url, lay)
    except BaseException:
        stop(record)
        raise
    return Started(record, url)


# -- the dev cluster's own TAS scheduler (`pykueue dev up`) ---------------------------------

CLIENT_SECRET = "pykueue-tas-scheduler-client-cert"


def dev_config(extender_url: str, tls: ClientTLS, kubeconfig: Path) -> dict[str, Any]:
    """The install's configuration with the dev cluster's connection filled in: the
    ServiceAccount's kubeconfig, the extender on loopback and the client pair's files.
    Leader election, lease and everything else stay as shipped."""
    config = shipped_config()
    config["clientConnection"] = {**(config.get("clientConnection") or {}), "kubeconfig": str(kubeconfig)}
    return _wired_to(config, extender_url, tls)


def write_client_secret(client: BlockingClient, directory: Path, namespace: str) -> ClientTLS:
    """Copy the client pair the extender keeps for the TAS scheduler (what the install mounts)."""
    secret = client.get(f"/api/v1/namespaces/{namespace}/secrets/{CLIENT_SECRET}")
    data = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
    tls = ClientTLS(directory / "ca.crt", directory / "tls.crt", directory / "tls.key")
    for path, key in ((tls.ca_file, "ca.crt"), (tls.cert_file, "tls.crt"), (tls.key_file, "tls.key")):
        _write(path, data[key])
    return tls


def scheduler_argv(kube_scheduler: Path, config_path: Path, kubeconfig: Path, lay: Layout,
                       port: int) -> list[str]:
    """kube-scheduler serving on loopback with the dev cluster's scheduler certificate."""
    return [
        str(kube_scheduler),
        f"--config={config_path}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={LOOPBACK}", f"--secure-port={port}",
        f"--tls-cert-file={lay.pem('kube-scheduler-serving')}",
        f"--tls-private-key-file={lay.key('kube-scheduler-serving')}",
    ]


def wait_healthy(record: ProcessRecord, url: str, lay: Layout) -> None:
    context = ssl.create_default_context(cafile=str(lay.pem("ca")))
    wait_for("the TAS kube-scheduler's /healthz", lambda: http_ok(f"{url}/healthz", context),
             START_DEADLINE_S, record)
