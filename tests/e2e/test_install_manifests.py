"""The install manifests are accepted by a real kube-apiserver (server-side dry run)."""

from __future__ import annotations

import pytest
import yaml

from pykueue.devcluster.cluster import FIELD_MANAGER
from tests.e2e.conftest import REPO, DevCluster

pytestmark = pytest.mark.e2e

MANIFESTS = REPO / "manifests"
CRDS = MANIFESTS / "01-crds.yaml"


def _documents() -> list[dict[str, object]]:
    docs: list[dict[str, object]] = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def test_every_install_object_passes_server_side_dry_run(dev_cluster: DevCluster) -> None:
    # A dry run creates nothing, so the namespace the other objects live in must exist for real.
    dev_cluster.kubectl("apply", "--server-side", "-f", str(MANIFESTS / "00-namespace.yaml"))
    # The dev cluster registered its own visibility APIService (same name, loopback Service);
    # forcing ownership in a dry run changes nothing and still validates every object.
    others = [arg for path in sorted(MANIFESTS.glob("*.yaml")) if path.name != CRDS.name
              for arg in ("-f", str(path))]
    result = dev_cluster.kubectl("apply", "--server-side", "--dry-run=server", "--field-manager=pykueue-e2e",
                                 "--force-conflicts", *others, check=False, timeout_s=120)
    assert result.returncode == 0, result.stderr
    # The dev cluster points the CRDs' conversion at a loopback URL; applied by another field
    # manager the install's Service reference would sit beside it (invalid: one of the two).
    # As the dev cluster's own field manager the dry run replaces the URL, as an install does.
    crds = dev_cluster.kubectl("apply", "--server-side", "--dry-run=server",
                               f"--field-manager={FIELD_MANAGER}", "--force-conflicts", "-f", str(CRDS),
                               check=False, timeout_s=120)
    assert crds.returncode == 0, crds.stderr
    output = result.stdout + crds.stdout
    applied = [line for line in output.splitlines() if line.endswith("(server dry run)")]
    assert len(applied) == len(_documents()), output


def test_a_broken_manifest_is_refused_by_the_same_dry_run(dev_cluster: DevCluster) -> None:
    # Guards the test above: the dry run really validates (a wrong field type is rejected).
    bad = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "broken", "namespace": "pykueue-system"},
           "spec": {"minAvailable": {"nested": "object"}}}
    dev_cluster.kubectl("apply", "--server-side", "-f", str(MANIFESTS / "00-namespace.yaml"))
    result = dev_cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-",
                                 stdin=yaml.safe_dump(bad), check=False)
    assert result.returncode != 0


MANAGER = "system:serviceaccount:pykueue-system:pykueue-controller-manager"

# What the manager must be able to do (verb, resource, namespace or None) ...
NEEDED = [
    ("watch", "jobs.batch", "team-a"), ("update", "jobs.batch", "team-a"),
    ("create", "workloads.kueue.x-k8s.io", "team-a"), ("patch", "workloads.kueue.x-k8s.io/status", "team-a"),
    ("update", "clusterqueues.kueue.x-k8s.io/status", None), ("list", "nodes", None),
    ("update", "pods", "team-a"), ("delete", "pods", "team-a"),
    *((verb, resource, "pykueue-system") for verb in ("get", "create", "update")
      for resource in ("leases.coordination.k8s.io", "secrets")),
    ("create", "events.events.k8s.io", "team-a"), ("patch", "events.events.k8s.io", "team-a"),
    ("watch", "leaderworkersets.leaderworkerset.x-k8s.io", "team-a"),
    ("create", "tokenreviews.authentication.k8s.io", None),
    # Workloads block their job's deletion: OwnerReferencesPermissionEnforcement asks for this
    ("update", "jobs.batch/finalizers", "team-a"),
    # the resource-in-use finalizer of deleted ClusterQueues and ResourceFlavors is released
    ("patch", "clusterqueues.kueue.x-k8s.io", None), ("patch", "resourceflavors.kueue.x-k8s.io", None),
]
# ... and what least privilege forbids (rights no code path uses, some granted once).
FORBIDDEN = [
    ("get", "secrets", "team-a"), ("delete", "nodes", None), ("create", "pods", "team-a"),
    ("update", "clusterroles.rbac.authorization.k8s.io", None),
    ("update", "customresourcedefinitions.apiextensions.k8s.io", None),
    ("delete", "namespaces", None), ("create", "jobs.batch", "team-a"),
    # the CA keys are in pykueue's Secrets: read by name only, never listed or watched
    ("list", "secrets", "pykueue-system"), ("watch", "secrets", "pykueue-system"),
    ("delete", "leases.coordination.k8s.io", "pykueue-system"),
    ("list", "leases.coordination.k8s.io", "pykueue-system"),
    ("patch", "pods", "team-a"), ("patch", "pods/status", "team-a"), ("patch", "jobs.batch", "team-a"),
    ("update", "leaderworkersets.leaderworkerset.x-k8s.io", "team-a"), ("create", "events", "team-a"),
    ("list", "mutatingwebhookconfigurations.admissionregistration.k8s.io", None),
    ("list", "limitranges", "team-a"), ("list", "priorityclasses.scheduling.k8s.io", None),
    ("update", "clusterqueues.kueue.x-k8s.io", None),
    # binding pods, and what it takes (rewriting an assignment, reading a node), is the
    # extender's, under its own ServiceAccount
    ("create", "pods/binding", "team-a"), ("create", "bindings", "team-a"),
    ("update", "workloads.kueue.x-k8s.io/status", "team-a"), ("get", "nodes", None),
]

EXTENDER = "system:serviceaccount:pykueue-system:pykueue-extender"
EXTENDER_NEEDED = [
    ("create", "pods/binding", "team-a"), ("get", "pods", "team-a"), ("list", "pods", None),
    ("get", "nodes", None), ("list", "nodes", None), ("get", "workloads.kueue.x-k8s.io", "team-a"),
    ("list", "workloads.kueue.x-k8s.io", None), ("patch", "workloads.kueue.x-k8s.io", "team-a"),
    ("update", "workloads.kueue.x-k8s.io/status", "team-a"), ("get", "resourceflavors.kueue.x-k8s.io", None),
    ("get", "topologies.kueue.x-k8s.io", None), ("create", "secrets", "pykueue-system"),
]
EXTENDER_FORBIDDEN = [
    ("watch", "pods", None), ("update", "pods", "team-a"), ("delete", "pods", "team-a"),
    ("create", "workloads.kueue.x-k8s.io", "team-a"), ("update", "workloads.kueue.x-k8s.io", "team-a"),
    ("patch", "workloads.kueue.x-k8s.io/status", "team-a"), ("list", "secrets", "pykueue-system"),
    ("get", "secrets", "team-a"), ("create", "secrets", "team-a"),
    ("update", "leases.coordination.k8s.io", "pykueue-system"),
    ("list", "resourceflavors.kueue.x-k8s.io", None), ("patch", "nodes", None),
    ("update", "clusterqueues.kueue.x-k8s.io/status", None), ("create", "events", "team-a"),
]


def _can_i(dev_cluster: DevCluster, verb: str, resource: str, namespace: str | None,
           who: str = MANAGER) -> bool:
    scope = ["-n", namespace] if namespace else []
    resource, _, sub = resource.partition("/")
    if sub:
        scope.append(f"--subresource={sub}")
    result = dev_cluster.kubectl("auth", "can-i", verb, resource, f"--as={who}", *scope, check=False)
    return result.stdout.strip() == "yes"


def test_manager_service_account_has_exactly_the_rights_it_needs(dev_cluster: DevCluster) -> None:
    # RBAC objects are inert, so applying them for real cannot disturb other tests.
    dev_cluster.kubectl("apply", "--server-side", "-f", str(MANIFESTS / "00-namespace.yaml"),
                        "-f", str(MANIFESTS / "02-rbac.yaml"))
    missing = [n for n in NEEDED if not _can_i(dev_cluster, *n)]
    excess = [f for f in FORBIDDEN if _can_i(dev_cluster, *f)]
    assert not missing, f"the manager lacks: {missing}"
    assert not excess, f"the manager may: {excess}"


def test_the_extender_service_account_may_bind_and_little_else(dev_cluster: DevCluster) -> None:
    dev_cluster.kubectl("apply", "--server-side", "-f", str(MANIFESTS / "00-namespace.yaml"),
                        "-f", str(MANIFESTS / "02-rbac.yaml"))
    missing = [n for n in EXTENDER_NEEDED if not _can_i(dev_cluster, *n, who=EXTENDER)]
    excess = [f for f in EXTENDER_FORBIDDEN if _can_i(dev_cluster, *f, who=EXTENDER)]
    assert not missing, f"the extender lacks: {missing}"
    assert not excess, f"the extender may: {excess}"
    # Its two Secrets by name, and no other one.
    secrets = [(verb, name) for verb in ("get", "update")
               for name in ("pykueue-extender-server-cert", "pykueue-tas-scheduler-client-cert",
                            "pykueue-webhook-server-cert")
               if dev_cluster.kubectl("auth", "can-i", verb, f"secrets/{name}", f"--as={EXTENDER}",
                                      "-n", "pykueue-system", check=False).stdout.strip() == "yes"]
    assert secrets == [(verb, name) for verb in ("get", "update")
                       for name in ("pykueue-extender-server-cert", "pykueue-tas-scheduler-client-cert")]
