"""The third-party operators the dev cluster runs: Kubeflow's training operator and LWS.

pykueue integrates with PyTorchJob and LeaderWorkerSet, but it only suspends and resumes
those objects; their pods come from the operators. ``dev up`` therefore runs the real
controllers (built from the Go modules pinned under ``go/``) as host processes, the way it
runs pykueue itself:

* each connects with a client certificate of the cluster CA; its user name is bound to
  the ClusterRole of ``manifests/dev/operators-rbac.yaml``, so a right an operator lacks
  shows up as its error, never as a silent admin privilege;
* leader election is off, and metrics, health probes and the admission webhook server
  listen on free loopback ports;
* their admission webhooks are served with a certificate of the cluster CA for
  127.0.0.1 and registered with ``url`` client configs, after the operator reports ready,
  so the API server never calls a webhook that does not listen yet. The operators' own
  certificate rotation is off (LWS through its Configuration; the training operator runs
  behind our own main, ``go/training-operator/main.go``, which has none).

Each operator keeps its files in ``operators/<name>/`` of the state directory
(``ports.json``, ``kubeconfig``, ``certs/``, LWS's ``config.yaml``) and its process record
in ``state.json`` beside the others, so ``dev down`` stops it and ``dev status`` lists it; a
second ``dev up`` keeps an operator that runs and restarts one that died.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pykueue.devcluster import identity, kubeconfig, processes
from pykueue.devcluster.components import Layout
from pykueue.devcluster.health import http_ok, wait_for
from pykueue.devcluster.paths import DEV_MANIFESTS_DIR
from pykueue.devcluster.pki import Authority
from pykueue.devcluster.ports import LOOPBACK, free_ports
from pykueue.kube.blocking import BlockingClient

Report = Callable[[str], None]

RBAC_MANIFEST = DEV_MANIFESTS_DIR / "operators-rbac.yaml"
READY_DEADLINE_S = 90.0
USER_PREFIX = "pykueue-dev:"
# The names the dev cluster registers the operators' webhooks under.
WEBHOOK_CONFIG_PREFIX = "pykueue-dev-"

_ADMISSION = "/apis/admissionregistration.k8s.io/v1"
_CONFIG_PATHS = {"Mutating": f"{_ADMISSION}/mutatingwebhookconfigurations",
                 "Validating": f"{_ADMISSION}/validatingwebhookconfigurations"}


@dataclass(frozen=True)
class Webhook:
    """One admission webhook an operator serves, as its upstream release registers it."""

    name: str
    path: str
    group: str
    resource: str
    operations: tuple[str, ...]
    # Only objects carrying this label key are sent (LWS's pod webhooks).
    label_key: str | None = None

    def to_config(self, url: str, ca_bundle: str) -> dict[str, Any]:
        hook: dict[str, Any] = {
            "name": self.name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": url + self.path, "caBundle": ca_bundle},
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "rules": [{"apiGroups": [self.group], "apiVersions": ["v1"],
                       "operations": list(self.operations), "resources": [self.resource]}],
        }
        if self.label_key is not None:
            hook["objectSelector"] = {"matchExpressions": [{"key": self.label_key, "operator": "Exists"}]}
        return hook


@dataclass(frozen=True)
class OperatorPorts:
    metrics: int
    health: int
    webhook: int

    @classmethod
    def pick(cls) -> OperatorPorts:
        metrics, health, webhook = free_ports(3)
        return cls(metrics, health, webhook)


@dataclass(frozen=True)
class OperatorFiles:
    """An operator's files in the state directory."""

    root: Path

    @property
    def ports(self) -> Path:
        return self.root / "ports.json"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def cert_dir(self) -> Path:
        return self.root / "certs"

    @property
    def config(self) -> Path:
        return self.root / "config.yaml"


@dataclass(frozen=True)
class Operator:
    name: str
    """Process, binary and log name."""
    mutating: tuple[Webhook, ...]
    validating: tuple[Webhook, ...]
    metrics_scheme: str
    argv: Callable[[Path, OperatorFiles, OperatorPorts], list[str]]
    """The command line, given the binary; may write the operator's config file."""

    @property
    def user(self) -> str:
        return USER_PREFIX + self.name


def _training_operator_argv(binary: Path, files: OperatorFiles, ports: OperatorPorts) -> list[str]:
    return [str(binary),
            f"--kubeconfig={files.kubeconfig}",
            # The only kind pykueue integrates with; its CRD is the only one installed.
            "--enable-scheme=pytorchjob",
            f"--metrics-bind-address={LOOPBACK}:{ports.metrics}",
            f"--health-probe-bind-address={LOOPBACK}:{ports.health}",
            f"--webhook-bind-address={LOOPBACK}:{ports.webhook}",
            f"--cert-dir={files.cert_dir}",
            "--zap-devel=false"]


def _lws_argv(binary: Path, files: OperatorFiles, ports: OperatorPorts) -> list[str]:
    config = {
        "apiVersion": "config.lws.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        # The dev cluster hands it a certificate; its rotator would want a Secret and a
        # Service name the API server cannot reach.
        "internalCertManagement": {"enable": False},
        "webhook": {"host": LOOPBACK, "port": ports.webhook, "certDir": str(files.cert_dir)},
        "metrics": {"bindAddress": f"{LOOPBACK}:{ports.metrics}"},
        "health": {"healthProbeBindAddress": f"{LOOPBACK}:{ports.health}"},
    }
    files.config.write_text(yaml.safe_dump(config, sort_keys=False))
    return [str(binary), f"--kubeconfig={files.kubeconfig}", f"--config={files.config}",
            "--zap-devel=false"]


_LWS_GROUP = "leaderworkerset.x-k8s.io"
_LWS_POD_LABEL = "leaderworkerset.sigs.k8s.io/name"

OPERATORS: tuple[Operator, ...] = (
    Operator(
        "training-operator",
        mutating=(),
        validating=(Webhook("validator.pytorchjob.training-operator.kubeflow.org",
                            "/validate-kubeflow-org-v1-pytorchjob", "kubeflow.org", "pytorchjobs",
                            ("CREATE", "UPDATE")),),
        metrics_scheme="http",
        argv=_training_operator_argv,
    ),
    Operator(
        "lws-controller",
        mutating=(Webhook("mleaderworkerset.kb.io", "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
                          _LWS_GROUP, "leaderworkersets", ("CREATE", "UPDATE")),
                  Webhook("mpod.kb.io", "/mutate--v1-pod", "", "pods", ("CREATE", "UPDATE"),
                          label_key=_LWS_POD_LABEL)),
        validating=(Webhook("vleaderworkerset.kb.io", "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
                            _LWS_GROUP, "leaderworkersets", ("CREATE", "UPDATE")),
                    Webhook("vpod.kb.io", "/validate--v1-pod", "", "pods", ("CREATE", "UPDATE"),
                            label_key=_LWS_POD_LABEL)),
        # LWS serves metrics over TLS, authenticated by token (its own self-signed cert).
        metrics_scheme="https",
        argv=_lws_argv,
    ),
)
BINARY_NAMES = tuple(op.name for op in OPERATORS)


@dataclass(frozen=True)
class OperatorEndpoints:
    name: str
    webhook: str
    metrics: str
    health: str

    def line(self) -> str:
        return f"{self.name}: webhook {self.webhook}, metrics {self.metrics}, health {self.health}"


def files_of(layout: Layout, operator: Operator) -> OperatorFiles:
    return OperatorFiles(layout.root / "operators" / operator.name)


def webhook_configuration_name(operator: Operator, kind: str) -> str:
    return f"{WEBHOOK_CONFIG_PREFIX}{operator.name}-{kind.lower()}"


def webhook_configurations(operator: Operator, url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """The Mutating/ValidatingWebhookConfigurations pointing the API server at ``url``."""
    ca_bundle = base64.b64encode(ca_pem).decode()
    docs = []
    for kind, hooks in (("Mutating", operator.mutating), ("Validating", operator.validating)):
        if hooks:
            docs.append({"apiVersion": "admissionregistration.k8s.io/v1",
                         "kind": f"{kind}WebhookConfiguration",
                         "metadata": {"name": webhook_configuration_name(operator, kind)},
                         "webhooks": [h.to_config(url, ca_bundle) for h in hooks]})
    return docs


def install_rbac(client: BlockingClient, path: Path = RBAC_MANIFEST) -> None:
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict):
            client.apply(identity.object_path(doc), doc)


def _write_credentials(layout: Layout, operator: Operator, files: OperatorFiles, server: str) -> None:
    ca = Authority.load(layout.pem("ca"), layout.key("ca"))
    files.cert_dir.mkdir(parents=True, exist_ok=True)
    files.root.chmod(0o700)
    kubeconfig.write(files.kubeconfig, server, ca.cert_pem, operator.user,
                     ca.issue(operator.user, client=True))
    ca.issue(f"{operator.name}-webhook", dns_names=("localhost",), ip_addresses=(LOOPBACK,),
             server=True).write(files.cert_dir / "tls.crt", files.cert_dir / "tls.key")


def read_ports(files: OperatorFiles) -> OperatorPorts | None:
    try:
        data = json.loads(files.ports.read_text())
        return OperatorPorts(int(data["metrics"]), int(data["health"]), int(data["webhook"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def load_records(layout: Layout) -> dict[str, processes.ProcessRecord]:
    """The processes recorded in the dev cluster's state file, by name (``down`` stops them)."""
    try:
        state = json.loads(layout.state_file.read_text())
    except (OSError, ValueError):
        return {}
    return {str(p["name"]): processes.ProcessRecord.from_json(p) for p in state.get("processes") or ()}


def save_record(layout: Layout, record: processes.ProcessRecord) -> None:
    """Record (or replace) a process in the dev cluster's state file."""
    state = json.loads(layout.state_file.read_text())
    state["processes"] = [p for p in state["processes"] if p.get("name") != record.name]
    state["processes"].append(record.to_json())
    tmp = layout.state_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(layout.state_file)


def _serving(port: int, ca_file: Path) -> bool:
    """The webhook server completes a TLS handshake with the certificate we issued (a bare
    connect would also work, but the server logs every aborted handshake)."""
    context = ssl.create_default_context(cafile=str(ca_file))
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1) as raw, \
                context.wrap_socket(raw, server_hostname=LOOPBACK):
            return True
    except OSError:
        return False


def _readiness(ports: OperatorPorts, ca_file: Path) -> Callable[[], bool]:
    def ready() -> bool:
        return http_ok(f"http://{LOOPBACK}:{ports.health}/readyz") and _serving(ports.webhook, ca_file)
    return ready


def endpoints_of(operator: Operator, ports: OperatorPorts) -> OperatorEndpoints:
    return OperatorEndpoints(operator.name, f"https://{LOOPBACK}:{ports.webhook}",
                             f"{operator.metrics_scheme}://{LOOPBACK}:{ports.metrics}/metrics",
                             f"http://{LOOPBACK}:{ports.health}/readyz")


def start_operators(client: BlockingClient, layout: Layout, binaries: Mapping[str, Path],
                    report: Report = print, only: tuple[str, ...] | None = None) -> list[OperatorEndpoints]:
    """Start the operators that do not run (all of them on a fresh cluster, or those named in
    ``only``), wait until each is ready and serves its webhooks, then (re-)register their webhooks."""
    install_rbac(client)
    records = load_records(layout)
    started: list[tuple[Operator, processes.ProcessRecord, OperatorPorts]] = []
    running: list[tuple[Operator, processes.ProcessRecord, OperatorPorts]] = []
    for operator in OPERATORS:
        if only is not None and operator.name not in only:
            continue
        files = files_of(layout, operator)
        record = records.get(operator.name)
        ports = read_ports(files)
        if record is not None and ports is not None and processes.is_running(record):
            running.append((operator, record, ports))
            continue
        if record is not None:
            report(f"  {operator.name} is not running; restarting it")
        ports = OperatorPorts.pick()
        _write_credentials(layout, operator, files, client.server)
        argv = operator.argv(binaries[operator.name], files, ports)
        files.ports.write_text(json.dumps({"metrics": ports.metrics, "health": ports.health,
                                           "webhook": ports.webhook}))
        record = processes.spawn(operator.name, argv, layout.logs / f"{operator.name}.log")
        save_record(layout, record)
        started.append((operator, record, ports))
    for operator, record, ports in started:
        took = wait_for(f"{operator.name} readiness", _readiness(ports, layout.pem("ca")),
                        READY_DEADLINE_S, record)
        report(f"  {operator.name} ready in {took:.1f}s (pid {record.pid})")
    ca_pem = layout.pem("ca").read_bytes()
    result = []
    for operator, _record, ports in [*running, *started]:
        endpoints = endpoints_of(operator, ports)
        for doc in webhook_configurations(operator, endpoints.webhook, ca_pem):
            path = _CONFIG_PATHS[doc["kind"].removesuffix("WebhookConfiguration")]
            client.apply(f"{path}/{urllib.parse.quote(doc['metadata']['name'])}", doc)
        result.append(endpoints)
    order = {op.name: i for i, op in enumerate(OPERATORS)}
    return sorted(result, key=lambda e: order[e.name])
