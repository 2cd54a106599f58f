"""What ``dev up`` installs into the control plane once it is healthy.

Two parts: CustomResourceDefinitions (pykueue's own from ``manifests/crds/`` as soon as
that folder has YAML files, plus the CRDs of the operators pykueue integrates with from
``manifests/dev/crds/``, as their pinned releases ship them; ``operators.py`` runs those
operators), and the hook that runs pykueue itself against the dev cluster. CRDs are
applied server-side, so a second ``dev up`` updates them in place.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pykueue.certs.authority import CA_CRT, CA_PREVIOUS_CRT, join_pem
from pykueue.devcluster import identity, ports, processes, tas_scheduler
from pykueue.devcluster.aggregation import host_api_service_manifests
from pykueue.devcluster.components import Layout
from pykueue.devcluster.health import http_ok, wait_for
from pykueue.devcluster.paths import DEV_MANIFESTS_DIR, MANIFESTS_DIR
from pykueue.kube.blocking import BlockingClient
from pykueue.manager.jobs.registry import shipped_frameworks

CRD_DIRS = (MANIFESTS_DIR / "crds", DEV_MANIFESTS_DIR / "crds")
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NOT_RUNNING = "not running"
NAMESPACES_PATH = "/api/v1/namespaces"
PYKUEUE = "pykueue"
PYKUEUE_NAMESPACE = identity.NAMESPACE
PYKUEUE_DEADLINE_S = 60.0
REPO_ROOT = Path(__file__).resolve().parents[2]


# libyaml's parser when PyYAML has it: the operators' CRDs are megabytes of YAML, which
# the pure-Python parser takes seconds to read on every ``dev up``.
_YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# The digest of the manifest a CRD was last applied from, on the live CRD.
CRD_DIGEST_ANNOTATION = "pykueue.dev/applied-manifest-sha256"


def _documents(directories: tuple[Path, ...]) -> Iterator[dict[str, Any]]:
    for directory in directories:
        if not directory.is_dir():
            continue
        for path in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
            for doc in yaml.load_all(path.read_text(), Loader=_YAML_LOADER):
                if isinstance(doc, dict):
                    yield doc


def _established(crd: dict[str, Any]) -> bool:
    # A CRD just created has ``"conditions": null`` until the API server first looks at it
    # (the field has no omitempty); the large operator CRDs stay there long enough to be seen.
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def manifest_digest(doc: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def install_crds(client: BlockingClient, directories: tuple[Path, ...] = CRD_DIRS,
                 deadline_s: float = 60.0) -> list[str]:
    """Apply every CustomResourceDefinition found and wait until each is Established.

    A CRD whose live copy was applied from the same manifest (its digest annotation says so)
    and is Established is left alone: re-applying megabytes of unchanged schema on every
    ``dev up`` of a running cluster costs the API server seconds for nothing.
    """
    live = {str(c["metadata"]["name"]): c for c in client.get(CRD_PATH).get("items") or ()}
    names = []
    pending: set[str] = set()
    for doc in _documents(directories):
        if doc.get("kind") != "CustomResourceDefinition":
            continue
        name = doc["metadata"]["name"]
        current = live.get(name)
        _keep_loopback_conversion(doc, current)
        digest = manifest_digest(doc)
        names.append(name)
        applied = ((current or {}).get("metadata", {}).get("annotations") or {}).get(CRD_DIGEST_ANNOTATION)
        if current is not None and applied == digest and _established(current):
            continue
        doc.setdefault("metadata", {}).setdefault("annotations", {})[CRD_DIGEST_ANNOTATION] = digest
        client.apply(f"{CRD_PATH}/{urllib.parse.quote(name)}", doc)
        pending.add(name)

    def established() -> bool:
        for name in sorted(pending):
            if _established(client.get(f"{CRD_PATH}/{urllib.parse.quote(name)}")):
                pending.discard(name)
        return not pending

    if pending:
        wait_for(f"{len(pending)} CRDs to be Established", established, deadline_s)
    return names


@dataclass(frozen=True)
class PykueueEndpoints:
    """Where pykueue's servers listen in the dev cluster, or ``None`` when not running."""

    metrics: str | None = None
    webhook: str | None = None
    extender: str | None = None
    tas_scheduler: str | None = None
    # The web dashboard's link, with a dev-only token that signs the browser in.
    dashboard: str | None = None

    def lines(self) -> list[str]:
        return [f"{label}: {value or NOT_RUNNING}" for label, value in
                (("metrics", self.metrics), ("webhook", self.webhook), ("extender", self.extender),
                 ("tas-scheduler", self.tas_scheduler), ("dashboard", self.dashboard))]


def start_pykueue(client: BlockingClient, layout: Layout, config: dict[str, Any] | None = None,
                  with_tas_scheduler: bool = True) -> PykueueEndpoints:
    """Run ``pykueue run`` against the dev cluster on loopback ports, once.

    The process is recorded in the cluster's state file like the other components, so ``dev down``
    stops it; a second ``dev up`` reuses it while it runs and starts a new one when it died. Its log
    is ``logs/pykueue.log`` in the state directory. It campaigns for its Lease in ``pykueue-system``.
    It runs as the install manifests' ServiceAccount with their RBAC
    (``devcluster.identity``), so every e2e test proves those rights suffice. As in the install,
    it serves no extender (``--no-extender``): ``start_extender`` runs ``pykueue extender`` as a
    process of its own under the extender's ServiceAccount, and the TAS scheduler calls that.
    The admission webhook listens on loopback with a serving certificate for 127.0.0.1; the
    webhook configurations are registered here with ``url`` client configs pointing at it, and
    pykueue injects their caBundle itself before it reports ready. The CRD conversion stanzas
    point at the same loopback server (``v1beta1`` objects are converted by this process, as in
    an install). The visibility API listens on loopback too; its APIService goes through an
    ExternalName Service (``devcluster.aggregation``) and pykueue injects its certificate as
    caBundle.
    A running pykueue whose Configuration (``config``, default ``DEV_CONFIG``) changed is
    replaced. Without ``with_tas_scheduler`` (a MultiKueue worker) neither extender nor TAS
    scheduler runs.
    """
    client.apply(f"{NAMESPACES_PATH}/{PYKUEUE_NAMESPACE}",
                 {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PYKUEUE_NAMESPACE}})
    state = json.loads(layout.state_file.read_text()) if layout.state_file.exists() else None
    record = _process_record(state, PYKUEUE)
    running = record is not None and processes.is_running(record)
    config_file = layout.state_file.parent / "pykueue-config.yaml"
    wanted = json.dumps(DEV_CONFIG if config is None else config)
    same_config = config_file.exists() and config_file.read_text() == wanted
    # An older pykueue (no dashboard, the extender inside, another config) is replaced.
    current = record is not None and {"--dashboard-bind-address", "--no-extender"} <= set(record.argv)
    if record is None or not running or not current or not same_config:
        metrics, health, webhook, visibility, dashboard = ports.free_ports(5)
        config_file.write_text(wanted)
        kubeconfig = identity.service_account_kubeconfig(
            client, layout.state_file.parent / "pykueue-sa.kubeconfig", layout.pem("ca").read_bytes())
        identity.grant_dev_webhook_injection(client, dev_name("pykueue-mutating-webhook-configuration"),
                                             dev_name("pykueue-validating-webhook-configuration"))
        argv = [sys.executable, "-m", "pykueue", "run", "--kubeconfig", str(kubeconfig),
                "--config", str(config_file),
                "--metrics-bind-address", f"{ports.LOOPBACK}:{metrics}",
                "--health-probe-bind-address", f"{ports.LOOPBACK}:{health}",
                "--no-extender",
                "--webhook-bind-address", f"{ports.LOOPBACK}:{webhook}",
                "--webhook-cert-dir", str(layout.state_file.parent / "webhook-certs"),
                "--webhook-ip", ports.LOOPBACK,
                "--visibility-bind-address", f"{ports.LOOPBACK}:{visibility}",
                "--visibility-service-name", DEV_VISIBILITY_SERVICE,
                "--dashboard-bind-address", f"{ports.LOOPBACK}:{dashboard}"]
        if record is not None and running:
            processes.stop(record)
        # Registered before the process starts, so its first reconcile finds them to inject into.
        register_webhooks(client, f"https://{ports.LOOPBACK}:{webhook}")
        register_visibility(client, visibility)
        record = processes.spawn(PYKUEUE, argv, layout.logs / "pykueue.log", cwd=REPO_ROOT)
        _record_process(layout, state, record)
    addresses = _flag_values(record.argv)
    webhook_url = f"https://{addresses['--webhook-bind-address']}"
    ready = f"http://{addresses['--health-probe-bind-address']}/readyz"
    wait_for("pykueue readiness", lambda: http_ok(ready), PYKUEUE_DEADLINE_S, record)
    # Only once pykueue is ready is its CA in the Secret: pykueue injects the caBundle into
    # the install-named configurations, this copies it into the dev-named ones.
    register_webhooks(client, webhook_url)
    dashboard_url = f"http://{addresses['--dashboard-bind-address']}/#token={identity.dashboard_token(client)}"
    # /metrics wants a bearer token: the dev metrics reader is there to mint one
    # (``kubectl -n pykueue-system create token pykueue-dev-metrics``).
    identity.ensure_metrics_reader(client)
    extender_url = start_extender(client, layout) if with_tas_scheduler else None
    return PykueueEndpoints(metrics=f"http://{addresses['--metrics-bind-address']}/metrics",
                            webhook=webhook_url, extender=extender_url,
                            tas_scheduler=None if extender_url is None
                            else start_tas_scheduler(client, layout, extender_url),
                            dashboard=dashboard_url)


def _record_process(layout: Layout, state: dict[str, Any] | None, record: processes.ProcessRecord) -> None:
    """Put the process in the state file (replacing one of the same name), so `dev down` stops it."""
    if state is None:
        return
    state["processes"] = [p for p in state["processes"] if p.get("name") != record.name]
    state["processes"].append(record.to_json())
    tmp = layout.state_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(layout.state_file)


# The install's extender (Deployment pykueue-extender): its process name in the state file,
# its ServiceAccount and the Secret of its serving pair (the client pair's is the scheduler's).
EXTENDER = "pykueue-extender"
EXTENDER_SERVICE_ACCOUNT = "pykueue-extender"
EXTENDER_SECRET = "pykueue-extender-server-cert"


def start_extender(client: BlockingClient, layout: Layout) -> str:
    """Run the install's extender as one more process: ``pykueue extender`` keeping its
    certificates in the install's Secrets (``--cert-secret``), as the ``pykueue-extender``
    ServiceAccount with the manifests' RBAC (a token minted as pykueue's is), on loopback.
    Reused while it runs; recorded in the state file, so ``dev down`` stops it. Returns its
    URL once it is ready (its certificates, and the scheduler's client pair, are in place)."""
    state = json.loads(layout.state_file.read_text()) if layout.state_file.exists() else None
    record = _process_record(state, EXTENDER)
    if record is None or not processes.is_running(record) or "--cert-secret" not in record.argv:
        if record is not None:
            processes.stop(record)
        port, health = ports.free_ports(2)
        kubeconfig = identity.service_account_kubeconfig(
            client, layout.state_file.parent / "extender-sa.kubeconfig", layout.pem("ca").read_bytes(),
            EXTENDER_SERVICE_ACCOUNT)
        argv = [sys.executable, "-m", "pykueue", "extender", "--kubeconfig", str(kubeconfig),
                "--host", ports.LOOPBACK, "--port", str(port),
                "--cert-secret", EXTENDER_SECRET, "--namespace", PYKUEUE_NAMESPACE,
                "--health-probe-bind-address", f"{ports.LOOPBACK}:{health}"]
        record = processes.spawn(EXTENDER, argv, layout.logs / f"{EXTENDER}.log", cwd=REPO_ROOT)
        _record_process(layout, state, record)
    flags = _flag_values(record.argv)
    ready = f"http://{flags['--health-probe-bind-address']}/readyz"
    wait_for("the extender's readiness", lambda: http_ok(ready), PYKUEUE_DEADLINE_S, record)
    return f"https://{flags['--host']}:{flags['--port']}"


def start_tas_scheduler(client: BlockingClient, layout: Layout, extender_url: str) -> str:
    """Run the install's TAS scheduler (``manifests/09-tas-scheduler.yaml``) as one more
    process: its configuration with loopback addresses, its ServiceAccount and RBAC, and the
    client certificate the extender keeps for it. Reused while it runs with the same
    configuration; restarted when the extender moved (a new extender process). Returns its URL."""
    root = layout.state_file.parent
    state = json.loads(layout.state_file.read_text()) if layout.state_file.exists() else None
    tls = tas_scheduler.write_client_secret(client, root / "tas-scheduler-client", PYKUEUE_NAMESPACE)
    kubeconfig = root / "tas-scheduler.kubeconfig"
    config_path = root / "tas-scheduler.yaml"
    config = yaml.safe_dump(tas_scheduler.dev_config(extender_url, tls, kubeconfig), sort_keys=False)
    record = next((processes.ProcessRecord.from_json(p) for p in (state or {}).get("processes") or ()
                   if p.get("name") == tas_scheduler.TAS_SCHEDULER), None)
    reuse = record is not None and processes.is_running(record) and config_path.exists() \
        and config_path.read_text() == config
    if not reuse:
        if record is not None:
            processes.stop(record)
        identity.service_account_kubeconfig(client, kubeconfig, layout.pem("ca").read_bytes(),
                                            tas_scheduler.TAS_SCHEDULER, (tas_scheduler.TAS_MANIFEST,))
        config_path.write_text(config)
        binary = Path(((state or {}).get("binaries") or {})["kube-scheduler"])
        (port,) = ports.free_ports(1)
        argv = tas_scheduler.scheduler_argv(binary, config_path, kubeconfig, layout, port)
        record = processes.spawn(tas_scheduler.TAS_SCHEDULER, argv, layout.logs / "tas-scheduler.log")
        _record_process(layout, state, record)
    assert record is not None
    flags = dict(a.removeprefix("--").split("=", 1) for a in record.argv if a.startswith("--") and "=" in a)
    url = f"https://{flags['bind-address']}:{flags['secure-port']}"
    tas_scheduler.wait_healthy(record, url, layout)
    return url


WEBHOOK_SECRET = "pykueue-webhook-server-cert"
# pykueue's Configuration in the dev cluster: every job kind pykueue runs (the dev CRDs
# provide them all), plain pods included, which Kueue's default Configuration enables too.
DEV_CONFIG: dict[str, Any] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", "namespace": PYKUEUE_NAMESPACE,
    "internalCertManagement": {"enable": True, "webhookServiceName": "pykueue-webhook-service",
                               "webhookSecretName": WEBHOOK_SECRET},
    "integrations": {"frameworks": shipped_frameworks()},
    # The optional per-flavor quota/usage gauges too, so tests can compare them with the API.
    "metrics": {"enableClusterQueueResources": True},
    # Kueue v0.19.2 leaves the tiered pending reasons off; the dev cluster shows them (the
    # tests of the tiers, the what-if and the dashboard read them off live Workloads).
    "featureGates": {"UnadmittedWorkloadsObservability": True},
}
WEBHOOK_CONFIG_PATHS = {
    "MutatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
}


def register_webhooks(client: BlockingClient, base_url: str) -> None:
    """Apply the install manifests' webhook configurations, renamed with a ``-dev`` suffix
    (so applying the install manifests themselves never conflicts), with ``url`` client
    configs on loopback and the dev namespace excluded instead of ``pykueue-system``; and
    point pykueue's CRDs' conversion at the same server, so ``v1beta1`` objects (Kueue
    v0.12 manifests) can be created and read. The caBundle is pykueue's CA from its Secret
    once that exists (so a re-apply keeps it); before that pykueue injects it at start-up."""
    ca_bundle = _webhook_ca(client)
    for doc in _documents((MANIFESTS_DIR / "crds",)):
        webhook = _conversion_webhook(doc)
        if webhook is None:
            continue
        path_part = webhook["clientConfig"]["service"]["path"]
        webhook["clientConfig"] = _client_config(base_url + path_part, ca_bundle)
        # The digest ``install_crds`` computes of the same CRD on the next ``dev up``, so it
        # is not applied again while it does not change (this apply owns the annotation now).
        digest = manifest_digest(doc)
        doc["metadata"].setdefault("annotations", {})[CRD_DIGEST_ANNOTATION] = digest
        client.apply(f"{CRD_PATH}/{urllib.parse.quote(doc['metadata']['name'])}", doc)
    for doc in _documents((MANIFESTS_DIR,)):
        path = WEBHOOK_CONFIG_PATHS.get(str(doc.get("kind")))
        if path is None:
            continue
        for hook in doc.get("webhooks") or ():
            path_part = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = _client_config(base_url + path_part, ca_bundle)
            for expr in (hook.get("namespaceSelector") or {}).get("matchExpressions") or ():
                expr["values"] = [PYKUEUE_NAMESPACE if v == "pykueue-system" else v for v in expr["values"]]
        doc["metadata"]["name"] = dev_name(doc["metadata"]["name"])
        client.apply(f"{path}/{urllib.parse.quote(doc['metadata']['name'])}", doc)


VISIBILITY_SERVICE = "pykueue-visibility-server"
VISIBILITY_VERSION = "v1beta2"
# Every version pykueue serves (Kueue's two), one APIService each.
VISIBILITY_VERSIONS = (VISIBILITY_VERSION, "v1beta1")
# The dev cluster's ExternalName Service lives beside the install manifests' Service (same
# namespace), so it takes its own name; the serving certificate is issued for it.
DEV_VISIBILITY_SERVICE = f"{VISIBILITY_SERVICE}-dev"


def register_visibility(client: BlockingClient, port: int) -> None:
    """(Re)create the visibility APIServices (one per version) for a pykueue about to listen
    on ``port``.

    Deleted first: the previous process's caBundle must go (an APIService may not carry a
    caBundle and skip verification at once), and the new process injects its own.
    """
    group = "visibility.kueue.x-k8s.io"
    for version in VISIBILITY_VERSIONS:
        service, api_service = host_api_service_manifests(group, version, PYKUEUE_NAMESPACE,
                                                          DEV_VISIBILITY_SERVICE, port)[1:]
        client.apply(f"/api/v1/namespaces/{PYKUEUE_NAMESPACE}/services/{DEV_VISIBILITY_SERVICE}", service)
        path = f"/apis/apiregistration.k8s.io/v1/apiservices/{api_service['metadata']['name']}"
        if client.get_or_none(path) is not None:
            client.request("DELETE", path)
        client.apply(path, api_service)


def _conversion_stanza(crd: dict[str, Any] | None) -> dict[str, Any]:
    """A CRD's ``spec.conversion.webhook`` (empty when it has none)."""
    webhook = (((crd or {}).get("spec") or {}).get("conversion") or {}).get("webhook")
    return webhook if isinstance(webhook, dict) else {}


def _conversion_webhook(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The conversion webhook stanza of a CRD that names a Service, else None."""
    webhook = _conversion_stanza(doc) if doc.get("kind") == "CustomResourceDefinition" else {}
    return webhook if "service" in (webhook.get("clientConfig") or {}) else None


def _keep_loopback_conversion(doc: dict[str, Any], live: dict[str, Any] | None) -> None:
    """Re-applying a CRD keeps the loopback conversion URL ``register_webhooks`` gave it.

    The install manifests name a Service that the dev cluster does not have. Applying them as
    they are would send conversions there until pykueue's registration ran again, and
    rebuild the CRD's storage twice on every ``dev up`` of a running cluster.
    """
    webhook = _conversion_webhook(doc)
    live_config = _conversion_stanza(live).get("clientConfig") or {}
    if webhook is not None and live_config.get("url"):
        webhook["clientConfig"] = _client_config(live_config["url"], live_config.get("caBundle"))


def dev_name(name: str) -> str:
    return f"{name}-dev"


def _client_config(url: str, ca_bundle: str | None) -> dict[str, str]:
    return {"url": url, "caBundle": ca_bundle} if ca_bundle else {"url": url}


def _webhook_ca(client: BlockingClient) -> str | None:
    """The caBundle pykueue publishes: its CA, and the one it replaced while they overlap (a
    one-CA bundle here would undo the overlap until pykueue's next check)."""
    secret = client.get_or_none(f"/api/v1/namespaces/{PYKUEUE_NAMESPACE}/secrets/{WEBHOOK_SECRET}")
    data = (secret or {}).get("data") or {}
    if not data.get(CA_CRT):
        return None
    try:
        previous = base64.b64decode(data[CA_PREVIOUS_CRT]) if data.get(CA_PREVIOUS_CRT) else None
        return base64.b64encode(join_pem(base64.b64decode(data[CA_CRT]), previous)).decode()
    except (ValueError, TypeError):
        return str(data[CA_CRT])


def _process_record(state: dict[str, Any] | None, name: str) -> processes.ProcessRecord | None:
    for entry in (state or {}).get("processes") or ():
        if entry.get("name") == name:
            return processes.ProcessRecord.from_json(entry)
    return None


def _flag_values(argv: tuple[str, ...]) -> dict[str, str]:
    return {flag: value for flag, value in itertools.pairwise(argv) if flag.startswith("--")}


def wait_default_service_account(client: BlockingClient, deadline_s: float = 60.0) -> None:
    """Pods are rejected until their namespace's ``default`` ServiceAccount exists."""
    path = "/api/v1/namespaces/default/serviceaccounts/default"
    wait_for("the default ServiceAccount", lambda: client.get_or_none(path) is not None, deadline_s)

