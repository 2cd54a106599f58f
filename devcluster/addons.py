"""What ``dev up`` installs into the control plane once it is healthy.

Two parts: CustomResourceDefinitions (pykueue's own from ``manifests/crds/`` as soon as
that folder has YAML files, plus the minimal third-party CRDs from ``manifests/dev/crds/``
that pykueue integrates with), and the hook that will run pykueue itself inside the dev
cluster. CRDs are applied server-side, so a second ``dev up`` updates them in place.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from devcluster.components import Layout
from devcluster.health import wait_for
from devcluster.paths import DEV_MANIFESTS_DIR, MANIFESTS_DIR
from devcluster.restclient import AdminClient

CRD_DIRS = (MANIFESTS_DIR / "crds", DEV_MANIFESTS_DIR / "crds")
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NOT_RUNNING = "not running"


def _documents(directories: tuple[Path, ...]) -> Iterator[dict[str, Any]]:
    for directory in directories:
        if not directory.is_dir():
            continue
        for path in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
            for doc in yaml.safe_load_all(path.read_text()):
                if isinstance(doc, dict):
                    yield doc


def install_crds(client: AdminClient, directories: tuple[Path, ...] = CRD_DIRS,
                 deadline_s: float = 60.0) -> list[str]:
    """Apply every CustomResourceDefinition found and wait until each is Established."""
    names = []
    for doc in _documents(directories):
        if doc.get("kind") != "CustomResourceDefinition":
            continue
        name = doc["metadata"]["name"]
        client.apply(f"{CRD_PATH}/{urllib.parse.quote(name)}", doc)
        names.append(name)

    def established() -> bool:
        for name in names:
            crd = client.get(f"{CRD_PATH}/{urllib.parse.quote(name)}")
            conditions = crd.get("status", {}).get("conditions", [])
            if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return False
        return True

    if names:
        wait_for(f"{len(names)} CRDs to be Established", established, deadline_s)
    return names


@dataclass(frozen=True)
class PykueueEndpoints:
    """Where pykueue's servers listen in the dev cluster, or ``None`` when not running."""

    metrics: str | None = None
    webhook: str | None = None
    extender: str | None = None

    def lines(self) -> list[str]:
        return [f"{label}: {value or NOT_RUNNING}" for label, value in
                (("metrics", self.metrics), ("webhook", self.webhook), ("extender", self.extender))]


def start_pykueue(client: AdminClient, layout: Layout) -> PykueueEndpoints:
    """HOOK: run pykueue inside the dev cluster. Not wired yet: pykueue's manager is not built.

    When ``pykueue run`` exists, this is where it goes, in this order:

    1. pick three loopback ports (``ports.free_ports``) for metrics, webhook and extender;
    2. start ``python -m pykueue run --kubeconfig <layout.admin_kubeconfig> --config F`` with
       ``processes.spawn("pykueue", ...)`` and record it in the state file like the other
       components, so ``dev down`` stops it and ``dev up`` restarts it when it died;
    3. apply ``manifests/06-webhooks.yaml`` rewritten from ``clientConfig.service`` to
       ``clientConfig.url: https://127.0.0.1:<webhook port>/<path>`` with the caBundle of
       pykueue's serving CA (the API server calls webhooks over loopback here);
    4. wait for the webhook's and the metrics endpoint's health with ``health.wait_for``;
    5. to have kube-scheduler call the extender, ``dev up --extender-url`` already writes it
       into the KubeSchedulerConfiguration (``components.Extender``);
    6. register the visibility API (pykueue's fourth loopback port) with
       ``aggregation.host_api_service_manifests(VISIBILITY_GROUP, "v1beta2", "pykueue-system",
       "pykueue-visibility-server", port, ca_bundle_pem=<its serving cert>)``: an ExternalName
       Service ``localhost`` plus the APIService, which the aggregator reaches on loopback.

    CRDs are installed before this hook runs (``install_crds``).
    """
    del client, layout
    return PykueueEndpoints()


def wait_default_service_account(client: AdminClient, deadline_s: float = 60.0) -> None:
    """Pods are rejected until their namespace's ``default`` ServiceAccount exists."""
    path = "/api/v1/namespaces/default/serviceaccounts/default"
    wait_for("the default ServiceAccount", lambda: client.get_or_none(path) is not None, deadline_s)

