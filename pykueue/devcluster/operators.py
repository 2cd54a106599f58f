"""The third-party operators the dev cluster runs: Kubeflow's training operator, LWS,
JobSet, Kubeflow Trainer (v2), the MPI operator, the AppWrapper controller and KubeRay, at the
versions Kueue v0.19.2 pins.

pykueue integrates with the training operator's kinds (PyTorchJob, TFJob, XGBoostJob, PaddleJob,
JAXJob), LeaderWorkerSet, JobSet, TrainJob, MPIJob, AppWrapper and KubeRay's RayJob, RayCluster
and RayService, but it only suspends and resumes those objects; their pods come from the
operators. ``dev up`` therefore runs the real controllers (built from the Go modules pinned under
``go/``) as host processes, the way it runs pykueue itself:

* each connects with a client certificate of the cluster CA; its user name is bound to
  the ClusterRole of ``manifests/dev/operators-rbac.yaml``, so a right an operator lacks
  shows up as its error, never as a silent admin privilege;
* leader election is off, and metrics, health probes and the admission webhook server
  listen on free loopback ports;
* their admission webhooks are served with a certificate of the cluster CA for
  127.0.0.1 and registered with ``url`` client configs, after the operator reports ready,
  so the API server never calls a webhook that does not listen yet. The operators' own
  certificate rotation is off (LWS, JobSet and Trainer through their Configuration files;
  the training operator runs behind our own main, ``go/training-operator/main.go``, which
  has none). The MPI operator serves no webhook; it runs behind our own main too
  (``go/mpi-operator/main.go``), since its command always elects a leader; so does the
  AppWrapper controller (``go/appwrapper/main.go``), whose command reads its configuration
  from a ConfigMap and serves its webhooks on a fixed port of every interface. KubeRay runs
  its own command, without webhooks as its release deploys it;
* objects an operator's release installs with it (Trainer's ``torch-distributed``
  ClusterTrainingRuntime) are applied once its webhooks are registered.

Each operator keeps its files in ``operators/<name>/`` of the state directory
(``ports.json``, ``kubeconfig``, ``certs/``, a ``config.yaml`` for those configured by file)
and its process record in ``state.json`` beside the others, so ``dev down`` stops it and
``dev status`` lists it; a second ``dev up`` keeps an operator that runs and restarts one
that died.
"""

from __future__ import annotations

import base64
import json
import os
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
    # Only objects carrying this label key are sent (LWS's and JobSet's pod webhooks).
    label_key: str | None = None
    version: str = "v1"

    def to_config(self, url: str, ca_bundle: str) -> dict[str, Any]:
        hook: dict[str, Any] = {
            "name": self.name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": url + self.path, "caBundle": ca_bundle},
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "rules": [{"apiGroups": [self.group], "apiVersions": [self.version],
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

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"


@dataclass(frozen=True)
class ClusterObjects:
    """Cluster-scoped custom objects of one resource that an operator's release installs
    with it, from a manifest under ``manifests/dev/``."""

    manifest: Path
    plural: str

    def documents(self) -> list[tuple[str, dict[str, Any]]]:
        """(API path, object) of each object of the manifest."""
        result = []
        for doc in yaml.safe_load_all(self.manifest.read_text()):
            if isinstance(doc, dict):
                name = urllib.parse.quote(str(doc["metadata"]["name"]))
                result.append((f"/apis/{doc['apiVersion']}/{self.plural}/{name}", doc))
        return result


@dataclass(frozen=True)
class Operator:
    name: str
    """Process, binary and log name."""
    mutating: tuple[Webhook, ...]
    validating: tuple[Webhook, ...]
    metrics_scheme: str
    argv: Callable[[Path, OperatorFiles, OperatorPorts], list[str]]
    """The command line, given the binary; may write the operator's config file."""
    tmpdir_certs: bool = False
    """Its command offers no setting for the webhook certificates' directory, so it reads
    them from controller-runtime's default, ``$TMPDIR/k8s-webhook-server/serving-certs``:
    the dev cluster points TMPDIR at the operator's own ``tmp/`` and puts them there."""
    installs: tuple[ClusterObjects, ...] = ()

    @property
    def user(self) -> str:
        return USER_PREFIX + self.name

    @property
    def has_webhooks(self) -> bool:
        return bool(self.mutating or self.validating)

    def cert_dir(self, files: OperatorFiles) -> Path:
        """Where it reads its webhook serving certificate (``tls.crt``, ``tls.key``)."""
        if self.tmpdir_certs:
            return files.tmp / "k8s-webhook-server" / "serving-certs"
        return files.cert_dir

    def env(self, files: OperatorFiles) -> dict[str, str] | None:
        """Its environment: ours, with TMPDIR moved when it reads its certificates there."""
        if not self.tmpdir_certs:
            return None
        return {**os.environ, "TMPDIR": str(files.tmp)}


# The training operator's kinds pykueue integrates with, whose CRDs the dev cluster installs;
# not its MPIJob (kubeflow.org/v1): the MPI operator runs MPIJobs, of v2beta1.
TRAINING_OPERATOR_KINDS = ("pytorchjob", "tfjob", "xgboostjob", "paddlejob", "jaxjob")


def _training_operator_argv(binary: Path, files: OperatorFiles, ports: OperatorPorts) -> list[str]:
    return [str(binary),
            f"--kubeconfig={files.kubeconfig}",
            *(f"--enable-scheme={kind}" for kind in TRAINING_OPERATOR_KINDS),
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


def _jobset_argv(binary: Path, files: OperatorFiles, ports: OperatorPorts) -> list[str]:
    config = {
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        # As for LWS: the dev cluster hands it its certificates.
        "internalCertManagement": {"enable": False},
        "webhook": {"host": LOOPBACK, "port": ports.webhook, "certDir": str(files.cert_dir)},
        # Metrics are served over TLS with the same certificate, authenticated by token.
        "metrics": {"bindAddress": f"{LOOPBACK}:{ports.metrics}", "certDir": str(files.cert_dir)},
        "health": {"healthProbeBindAddress": f"{LOOPBACK}:{ports.health}"},
    }
    files.config.write_text(yaml.safe_dump(config, sort_keys=False))
    return [str(binary), f"--kubeconfig={files.kubeconfig}", f"--config={files.config}",
            "--zap-devel=false"]


def _trainer_argv(binary: Path, files: OperatorFiles, ports: OperatorPorts) -> list[str]:
    config = {
        "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        # Its certificate rotator would keep its CA in a Secret and patch the webhook
        # configurations of the install; the dev cluster hands it a certificate instead
        # (in the directory ``Operator.tmpdir_certs`` describes).
        "certManagement": {"enable": False},
        "webhook": {"host": LOOPBACK, "port": ports.webhook},
        # Plain HTTP: with TLS it would serve a self-signed certificate, and its metrics
        # endpoint authenticates nobody either way.
        "metrics": {"bindAddress": f"{LOOPBACK}:{ports.metrics}", "secureServing": False},
        "health": {"healthProbeBindAddress": f"{LOOPBACK}:{ports.health}"},
    }
    files.config.write_text(yaml.safe_dump(config, sort_keys=False))
    return [str(binary), f"--kubeconfig={files.kubeconfig}", f"--config={files.config}"]


def _kuberay_argv(binary: Path, files: OperatorFiles, ports: OperatorPorts) -> list[str]:
    # Its release's flags (RayClusterStatusConditions is on by default since v1.3), with
    # leader election off and probes and metrics on loopback; no webhooks, as its release
    # deploys it (they need ENABLE_WEBHOOKS and a fixed port 9443).
    return [str(binary), f"--kubeconfig={files.kubeconfig}",
            "--enable-leader-election=false",
            f"--metrics-addr={LOOPBACK}:{ports.metrics}",
            f"--health-probe-bind-address={LOOPBACK}:{ports.health}",
            "--log-stdout-encoder=console"]


def _mpi_operator_argv(binary: Path, files: OperatorFiles, ports: OperatorPorts) -> list[str]:
    return [str(binary), f"--kubeconfig={files.kubeconfig}",
            f"--metrics-bind-address={LOOPBACK}:{ports.metrics}",
            f"--health-probe-bind-address={LOOPBACK}:{ports.health}"]


def _appwrapper_argv(binary: Path, files: OperatorFiles, ports: OperatorPorts) -> list[str]:
    # The release's AppWrapper configuration, except its node health monitor (it watches every
    # Node for Autopilot's GPU health labels, which no dev cluster node carries).
    files.config.write_text(yaml.safe_dump({"autopilot": {"monitorNodes": False}}, sort_keys=False))
    return [str(binary), f"--kubeconfig={files.kubeconfig}", f"--config={files.config}",
            f"--metrics-bind-address={LOOPBACK}:{ports.metrics}",
            f"--health-probe-bind-address={LOOPBACK}:{ports.health}",
            f"--webhook-bind-address={LOOPBACK}:{ports.webhook}",
            f"--cert-dir={files.cert_dir}",
            "--zap-devel=false"]


_AW_GROUP = "workload.codeflare.dev"
_AW_HOOK = "workload-codeflare-dev-v1beta2-appwrapper"
_LWS_GROUP = "leaderworkerset.x-k8s.io"
_LWS_POD_LABEL = "leaderworkerset.sigs.k8s.io/name"
_JOBSET_GROUP = "jobset.x-k8s.io"
_JOBSET_POD_LABEL = "jobset.sigs.k8s.io/jobset-name"
_TRAINER_GROUP = "trainer.kubeflow.org"
# The ClusterTrainingRuntimes of the Trainer release the dev cluster installs.
TRAINER_RUNTIMES = DEV_MANIFESTS_DIR / "trainer-runtimes.yaml"


def _trainer_validator(resource: str) -> Webhook:
    kind = resource.removesuffix("s")
    return Webhook(f"validator.{kind}.{_TRAINER_GROUP}",
                   f"/validate-trainer-kubeflow-org-v1alpha1-{kind}", _TRAINER_GROUP, resource,
                   ("CREATE", "UPDATE"), version="v1alpha1")

OPERATORS: tuple[Operator, ...] = (
    Operator(
        "training-operator",
        mutating=(),
        validating=tuple(Webhook(f"validator.{kind}.training-operator.kubeflow.org",
                                 f"/validate-kubeflow-org-v1-{kind}", "kubeflow.org", f"{kind}s",
                                 ("CREATE", "UPDATE")) for kind in TRAINING_OPERATOR_KINDS),
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
    Operator(
        "jobset-controller",
        mutating=(Webhook("mjobset.kb.io", "/mutate-jobset-x-k8s-io-v1alpha2-jobset", _JOBSET_GROUP,
                          "jobsets", ("CREATE",), version="v1alpha2"),
                  Webhook("mpod.kb.io", "/mutate--v1-pod", "", "pods", ("CREATE",),
                          label_key=_JOBSET_POD_LABEL)),
        validating=(Webhook("vjobset.kb.io", "/validate-jobset-x-k8s-io-v1alpha2-jobset", _JOBSET_GROUP,
                            "jobsets", ("CREATE", "UPDATE"), version="v1alpha2"),
                    Webhook("vpod.kb.io", "/validate--v1-pod", "", "pods", ("CREATE",),
                            label_key=_JOBSET_POD_LABEL)),
        metrics_scheme="https",
        argv=_jobset_argv,
    ),
    Operator(
        "trainer-controller",
        mutating=(Webhook(f"defaulter.trainjob.{_TRAINER_GROUP}",
                          "/mutate-trainer-kubeflow-org-v1alpha1-trainjob", _TRAINER_GROUP, "trainjobs",
                          ("CREATE", "UPDATE"), version="v1alpha1"),),
        validating=tuple(_trainer_validator(r) for r in
                         ("clustertrainingruntimes", "trainingruntimes", "trainjobs")),
        metrics_scheme="http",
        argv=_trainer_argv,
        tmpdir_certs=True,
        installs=(ClusterObjects(TRAINER_RUNTIMES, "clustertrainingruntimes"),),
    ),
    Operator(
        "mpi-operator",
        mutating=(),
        validating=(),
        metrics_scheme="http",
        argv=_mpi_operator_argv,
    ),
    Operator(
        "appwrapper-controller",
        mutating=(Webhook("mappwrapper.kb.io", f"/mutate-{_AW_HOOK}", _AW_GROUP, "appwrappers", ("CREATE",),
                          version="v1beta2"),),
        validating=(Webhook("vappwrapper.kb.io", f"/validate-{_AW_HOOK}", _AW_GROUP, "appwrappers",
                            ("CREATE", "UPDATE"), version="v1beta2"),),
        metrics_scheme="http",
        argv=_appwrapper_argv,
    ),
    Operator(
        "kuberay-operator",
        mutating=(),
        validating=(),
        metrics_scheme="http",
        argv=_kuberay_argv,
    ),
)
BINARY_NAMES = tuple(op.name for op in OPERATORS)


@dataclass(frozen=True)
class OperatorEndpoints:
    name: str
    webhook: str | None
    """None for an operator without admission webhooks (the MPI operator)."""
    metrics: str
    health: str

    def line(self) -> str:
        webhook = f"webhook {self.webhook}, " if self.webhook is not None else ""
        return f"{self.name}: {webhook}metrics {self.metrics}, health {self.health}"


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
    cert_dir = operator.cert_dir(files)
    cert_dir.mkdir(parents=True, exist_ok=True)
    files.root.chmod(0o700)
    kubeconfig.write(files.kubeconfig, server, ca.cert_pem, operator.user,
                     ca.issue(operator.user, client=True))
    ca.issue(f"{operator.name}-webhook", dns_names=("localhost",), ip_addresses=(LOOPBACK,),
             server=True).write(cert_dir / "tls.crt", cert_dir / "tls.key")


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


def _readiness(operator: Operator, ports: OperatorPorts, ca_file: Path) -> Callable[[], bool]:
    def ready() -> bool:
        return http_ok(f"http://{LOOPBACK}:{ports.health}/readyz") and \
            (not operator.has_webhooks or _serving(ports.webhook, ca_file))
    return ready


def endpoints_of(operator: Operator, ports: OperatorPorts) -> OperatorEndpoints:
    return OperatorEndpoints(operator.name,
                             f"https://{LOOPBACK}:{ports.webhook}" if operator.has_webhooks else None,
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
        record = processes.spawn(operator.name, argv, layout.logs / f"{operator.name}.log",
                                 env=operator.env(files))
        save_record(layout, record)
        started.append((operator, record, ports))
    for operator, record, ports in started:
        took = wait_for(f"{operator.name} readiness", _readiness(operator, ports, layout.pem("ca")),
                        READY_DEADLINE_S, record)
        report(f"  {operator.name} ready in {took:.1f}s (pid {record.pid})")
    ca_pem = layout.pem("ca").read_bytes()
    result = []
    for operator, _record, ports in [*running, *started]:
        endpoints = endpoints_of(operator, ports)
        if endpoints.webhook is not None:
            for doc in webhook_configurations(operator, endpoints.webhook, ca_pem):
                path = _CONFIG_PATHS[doc["kind"].removesuffix("WebhookConfiguration")]
                client.apply(f"{path}/{urllib.parse.quote(doc['metadata']['name'])}", doc)
        result.append(endpoints)
    # Once every webhook is registered, so the operators' own admission checks them.
    for operator, _record, _ports in [*running, *started]:
        for objects in operator.installs:
            for path, doc in objects.documents():
                client.apply(path, doc)
    order = {op.name: i for i, op in enumerate(OPERATORS)}
    return sorted(result, key=lambda e: order[e.name])
