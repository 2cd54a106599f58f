"""Installing pykueue breaks no workload that is not Kueue's.

A user's first command after installing: an ordinary Deployment in a fresh namespace. Its
pods pass the pod webhook (which walks each pod's owners: ReplicaSet, then Deployment) and
run; pykueue runs here as the install manifests' ServiceAccount with their RBAC, so this also
proves the shipped role lets the walk read what it reads.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pykueue.api import keys

from .conftest import DevCluster, wait_until

pytestmark = pytest.mark.e2e


def _pods(dev_cluster: DevCluster, namespace: str) -> list[dict[str, Any]]:
    return list(dev_cluster.get_json("pods", "-n", namespace, "-l", "app=web")["items"])


def test_an_unlabelled_deployment_runs_its_pods(dev_cluster: DevCluster, namespace: str) -> None:
    dev_cluster.kubectl("-n", namespace, "create", "deployment", "web", "--image=nginx", "--replicas=2")

    def running() -> list[dict[str, Any]]:
        pods = _pods(dev_cluster, namespace)
        ok = len(pods) == 2 and all((p.get("status") or {}).get("phase") == "Running" for p in pods)
        return pods if ok else []

    pods = wait_until("the Deployment's 2 pods to run", running, 90.0)
    for pod in pods:
        meta = pod["metadata"]
        assert keys.MANAGED not in (meta.get("labels") or {}), "an unlabelled pod is not Kueue's"
        assert keys.MANAGED_POD_FINALIZER not in (meta.get("finalizers") or [])
        gates = (pod.get("spec") or {}).get("schedulingGates") or []
        assert not gates, json.dumps(gates)
    replica_sets = dev_cluster.get_json("replicasets", "-n", namespace)["items"]
    events = dev_cluster.get_json("events", "-n", namespace,
                                  "--field-selector", "reason=FailedCreate")["items"]
    assert len(replica_sets) == 1 and not events, [e.get("message") for e in events]
