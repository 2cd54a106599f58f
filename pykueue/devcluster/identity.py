"""pykueue in the dev cluster runs as its install ServiceAccount, not as the admin.

``dev up`` applies the namespace and the RBAC of the install manifests
(``manifests/00-namespace.yaml``, ``manifests/02-rbac.yaml``), asks the TokenRequest API for
a token of the ``pykueue-controller-manager`` ServiceAccount and writes a kubeconfig that
carries only that token; the extender and the TAS scheduler get theirs the same way, for
their own ServiceAccounts. Every e2e test then exercises the manifests' RBAC: a right a
component needs but its role lacks shows up as a failing test, never as a silent admin
privilege. A token is requested again whenever its component is (re)started.
"""

from __future__ import annotations

import base64
import urllib.parse
from pathlib import Path
from typing import Any

import yaml

from pykueue.devcluster.kubeconfig import CLUSTER_NAME
from pykueue.devcluster.paths import MANIFESTS_DIR
from pykueue.kube.blocking import BlockingClient

NAMESPACE = "pykueue-system"
SERVICE_ACCOUNT = "pykueue-controller-manager"
RBAC_MANIFESTS = (MANIFESTS_DIR / "00-namespace.yaml", MANIFESTS_DIR / "02-rbac.yaml")
# A week: a dev cluster that lives longer gets a fresh token when pykueue restarts.
TOKEN_SECONDS = 7 * 24 * 3600

_PATHS = {
    ("v1", "Namespace"): "/api/v1/namespaces",
    ("v1", "ServiceAccount"): "/api/v1/namespaces/{ns}/serviceaccounts",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"):
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    ("rbac.authorization.k8s.io/v1", "Role"): "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"):
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
}


def object_path(doc: dict[str, Any]) -> str:
    """The API path of one namespace or RBAC object of the install manifests."""
    meta = doc.get("metadata") or {}
    template = _PATHS.get((str(doc.get("apiVersion")), str(doc.get("kind"))))
    if template is None:
        raise ValueError(f"not a namespace or RBAC object: {doc.get('apiVersion')} {doc.get('kind')}")
    collection = template.format(ns=urllib.parse.quote(str(meta.get("namespace", ""))))
    return f"{collection}/{urllib.parse.quote(str(meta['name']))}"


def install_rbac(client: BlockingClient, files: tuple[Path, ...] = RBAC_MANIFESTS) -> int:
    """Server-side apply the namespace, ServiceAccount and RBAC objects of these manifests
    (others in the same files, such as a Deployment, are not for the dev cluster); returns
    how many objects."""
    count = 0
    for path in files:
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and (str(doc.get("apiVersion")), str(doc.get("kind"))) in _PATHS:
                client.apply(object_path(doc), doc)
                count += 1
    return count


def request_token(client: BlockingClient, seconds: int = TOKEN_SECONDS,
                  service_account: str = SERVICE_ACCOUNT) -> str:
    path = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{service_account}/token"
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds}}
    return str(client.request("POST", path, body)["status"]["token"])


def write_token_kubeconfig(path: Path, server: str, ca_pem: bytes, token: str,
                           service_account: str = SERVICE_ACCOUNT) -> None:
    user = f"system:serviceaccount:{NAMESPACE}:{service_account}"
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": CLUSTER_NAME, "cluster": {
            "server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": f"pykueue@{CLUSTER_NAME}", "context": {"cluster": CLUSTER_NAME, "user": user}}],
        "current-context": f"pykueue@{CLUSTER_NAME}",
    }
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


DEV_WEBHOOK_ROLE = "pykueue-dev-webhook-injection"


def grant_dev_webhook_injection(client: BlockingClient, mutating: str, validating: str) -> None:
    """The dev cluster registers its webhook configurations under its own names (next to the
    install manifests' ones); the install ClusterRole only names the install objects, so the
    dev cluster grants the same caBundle rights on its own names, and nothing more."""
    rules = [
        {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["mutatingwebhookconfigurations"],
         "resourceNames": [mutating], "verbs": ["get", "update", "patch"]},
        {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations"],
         "resourceNames": [validating], "verbs": ["get", "update", "patch"]},
    ]
    rbac = "rbac.authorization.k8s.io/v1"
    role = {"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": DEV_WEBHOOK_ROLE}, "rules": rules}
    binding = {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": DEV_WEBHOOK_ROLE},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": DEV_WEBHOOK_ROLE},
               "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}]}
    for doc in (role, binding):
        client.apply(object_path(doc), doc)


def service_account_kubeconfig(client: BlockingClient, path: Path, ca_pem: bytes,
                               service_account: str = SERVICE_ACCOUNT,
                               files: tuple[Path, ...] = RBAC_MANIFESTS) -> Path:
    """Install the RBAC, mint a token and write the kubeconfig a component runs with
    (pykueue's by default)."""
    install_rbac(client, files)
    token = request_token(client, service_account=service_account)
    write_token_kubeconfig(path, client.server, ca_pem, token, service_account)
    return path


def _bind_dev_account(client: BlockingClient, name: str, cluster_role: str) -> None:
    """Apply a dev-only ServiceAccount ``name`` and a ClusterRoleBinding of the same name that
    grants it ``cluster_role``."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": name, "namespace": NAMESPACE}}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": cluster_role},
               "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]}
    for doc in (account, binding):
        client.apply(object_path(doc), doc)


DASHBOARD_VIEWER = "pykueue-dev-dashboard"


def dashboard_token(client: BlockingClient) -> str:
    """A token for the ``dashboard:`` link ``dev up`` prints: a dev-only ServiceAccount bound
    to ``cluster-admin`` (the dashboard shows every namespace, and the dev cluster has no
    users of its own). A fresh TokenRequest on each ``dev up``; never used by pykueue itself."""
    _bind_dev_account(client, DASHBOARD_VIEWER, "cluster-admin")
    return request_token(client, service_account=DASHBOARD_VIEWER)


METRICS_READER = "pykueue-dev-metrics"
# The install's role for scrapers (``manifests/02-rbac.yaml``): ``get`` on ``/metrics``, nothing else.
METRICS_READER_ROLE = "pykueue-metrics-reader"


def ensure_metrics_reader(client: BlockingClient, files: tuple[Path, ...] = RBAC_MANIFESTS) -> None:
    """A dev-only ServiceAccount that may read pykueue's ``/metrics`` and nothing else: bound
    to the install's ``pykueue-metrics-reader`` ClusterRole, which is applied from the
    manifests too (a cluster that only has the namespace is enough)."""
    role = next(doc for path in files for doc in yaml.safe_load_all(path.read_text())
                if isinstance(doc, dict) and doc.get("kind") == "ClusterRole"
                and (doc.get("metadata") or {}).get("name") == METRICS_READER_ROLE)
    client.apply(object_path(role), role)
    _bind_dev_account(client, METRICS_READER, METRICS_READER_ROLE)


def metrics_token(client: BlockingClient, seconds: int = TOKEN_SECONDS) -> str:
    """A fresh token of the dev metrics reader (:func:`ensure_metrics_reader`), for
    ``Authorization: Bearer`` on pykueue's ``/metrics``."""
    ensure_metrics_reader(client)
    return request_token(client, seconds, METRICS_READER)
