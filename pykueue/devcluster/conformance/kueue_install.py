"""What real Kueue needs in the API server before it starts, from its own module's sources.

The CRDs come from ``config/components/crd/bases``; the CRDs that Kueue's kustomize patches
give a conversion webhook get it here too, because Kueue's certificate rotator injects its
CA into exactly those and waits until that succeeds. The webhook configurations come from
``config/components/webhook/manifests.yaml``, kept only for Kueue's own kinds and the job
frameworks the harness enables (a hook for a framework that is off would answer 404 and
fail every create); their failure policy is Ignore (see ``webhook_configurations``).
Everything points at an ExternalName Service ``localhost``, so the API
server dials the Kueue process on loopback and checks the certificate Kueue issued for the
Service's name.
"""

from __future__ import annotations

import copy
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from pykueue.devcluster.aggregation import host_service
from pykueue.devcluster.conformance.kueue_config import FRAMEWORKS, NAMESPACE, WEBHOOK_SECRET, WEBHOOK_SERVICE
from pykueue.devcluster.health import wait_for
from pykueue.kube.blocking import BlockingClient
from pykueue.kube.client import ApiError

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_WEBHOOK_PATHS = {
    "MutatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
}
# Kueue's rotator names the configurations after the Service: <base>-<type>-webhook-configuration.
_WEBHOOK_BASE = WEBHOOK_SERVICE.removesuffix("-webhook-service")


def _yaml_documents(path: Path) -> Iterator[dict[str, Any]]:
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict):
            yield doc


def _service(port: int, path: str) -> dict[str, Any]:
    return {"namespace": NAMESPACE, "name": WEBHOOK_SERVICE, "port": port, "path": path}


def crds(source: Path, webhook_port: int) -> list[dict[str, Any]]:
    """Kueue's CRDs, with conversion webhooks where Kueue's deployment has them."""
    converted = set()
    for patch in sorted((source / "config/components/crd/patches").glob("webhook_in_*.yaml")):
        for doc in _yaml_documents(patch):
            converted.add(str(doc["metadata"]["name"]))
    out = []
    for path in sorted((source / "config/components/crd/bases").glob("*.yaml")):
        for doc in _yaml_documents(path):
            if doc.get("kind") != "CustomResourceDefinition":
                continue
            if doc["metadata"]["name"] in converted:
                doc["spec"]["conversion"] = {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": {"service": _service(webhook_port, "/convert")},
                        "conversionReviewVersions": ["v1"],
                    },
                }
            out.append(doc)
    return out


def _wanted(hook: dict[str, Any]) -> bool:
    groups = {g for rule in hook.get("rules") or () for g in rule.get("apiGroups") or ()}
    if groups == {"kueue.x-k8s.io"}:
        return True
    path = str(hook["clientConfig"]["service"]["path"])
    return any(path.endswith("-" + framework.replace("/", "-").replace(".", "-")) for framework in FRAMEWORKS)


def webhook_configurations(source: Path, webhook_port: int) -> list[dict[str, Any]]:
    out = []
    for doc in _yaml_documents(source / "config/components/webhook/manifests.yaml"):
        kind = str(doc.get("kind"))
        if kind not in _WEBHOOK_PATHS:
            continue
        doc = copy.deepcopy(doc)
        kept = [h for h in doc.get("webhooks") or () if _wanted(h)]
        for hook in kept:
            hook["clientConfig"] = {
                "service": _service(webhook_port, hook["clientConfig"]["service"]["path"])
            }
            # The harness restarts Kueue between a scenario's set-up and its run, and edits
            # queues while it is down; with Kueue up every request still goes through it.
            hook["failurePolicy"] = "Ignore"
        kind_word = "mutating" if kind.startswith("Mutating") else "validating"
        doc["metadata"] = {"name": f"{_WEBHOOK_BASE}-{kind_word}-webhook-configuration"}
        doc["webhooks"] = kept
        out.append(doc)
    return out


# Kueue's ProvisioningRequest admission check runs only where the API serves ProvisioningRequests;
# the CRD comes from the autoscaler's API module, at the version Kueue's go.mod names.
AUTOSCALER_APIS = "k8s.io/autoscaler/cluster-autoscaler/apis"


def provisioning_request_crds(autoscaler_apis: Path) -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted((autoscaler_apis / "config/crd").glob("*provisioningrequests*.yaml"))
        for doc in _yaml_documents(path)
        if doc.get("kind") == "CustomResourceDefinition"
    ]


def install(
    client: BlockingClient,
    source: Path,
    webhook_port: int,
    deadline_s: float = 60.0,
    extra_crds: list[dict[str, Any]] | None = None,
) -> None:
    """Namespace, webhook Service, CRDs (Kueue's and ``extra_crds``, waited for until
    Established and served), webhook configurations."""
    client.apply(
        f"/api/v1/namespaces/{NAMESPACE}",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
    )
    client.apply(
        f"/api/v1/namespaces/{NAMESPACE}/services/{WEBHOOK_SERVICE}",
        host_service(NAMESPACE, WEBHOOK_SERVICE, webhook_port),
    )
    # Kueue's rotator fills this Secret but does not create it (its manifests ship it empty).
    client.apply(
        f"/api/v1/namespaces/{NAMESPACE}/secrets/{WEBHOOK_SECRET}",
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": WEBHOOK_SECRET, "namespace": NAMESPACE}},
    )
    all_crds = [*crds(source, webhook_port), *(extra_crds or ())]
    names = []
    for crd in all_crds:
        name = crd["metadata"]["name"]
        client.apply(f"{CRD_PATH}/{urllib.parse.quote(name)}", crd)
        names.append(name)

    def established() -> bool:
        for name in names:
            conditions = (client.get(f"{CRD_PATH}/{urllib.parse.quote(name)}").get("status") or {}).get(
                "conditions"
            ) or []
            if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return False
        return True

    wait_for(f"{len(names)} Kueue CRDs to be Established", established, deadline_s)

    def listable() -> bool:
        # Established comes before the storage is ready: lists answer 429 for a moment.
        for crd in all_crds:
            try:
                client.get(
                    f"/apis/{crd['spec']['group']}/{_storage_version(crd)}/{crd['spec']['names']['plural']}"
                )
            except ApiError:
                return False
        return True

    wait_for("Kueue's resources to be served", listable, deadline_s)
    for doc in webhook_configurations(source, webhook_port):
        client.apply(f"{_WEBHOOK_PATHS[doc['kind']]}/{doc['metadata']['name']}", doc)


def _storage_version(crd: dict[str, Any]) -> str:
    return next(str(v["name"]) for v in crd["spec"]["versions"] if v.get("storage"))


def served_versions(client: BlockingClient) -> dict[str, str]:
    """Kind -> the version the API server prefers for each Kueue kind."""
    group = client.get("/apis/kueue.x-k8s.io")
    preferred = str((group.get("preferredVersion") or {}).get("version") or "v1beta2")
    listing = client.get(f"/apis/kueue.x-k8s.io/{preferred}")
    return {str(r["kind"]): preferred for r in listing.get("resources") or () if "/" not in str(r["name"])}
