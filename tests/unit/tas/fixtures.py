"""Small object builders shaped like the dev cluster: 8 kwok nodes, 2 blocks x 2 racks x 2 hosts."""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.manager.core.tas import PodSetRequest, TopologySnapshot

BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
HOST = keys.HOSTNAME_LABEL
LEVELS = [BLOCK, RACK, HOST]


def topology(levels: list[str] | None = None, name: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": k} for k in (levels or LEVELS)]},
    }


def flavor(
    name: str = "tas-flavor",
    node_labels: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    node_taints: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"topologyName": "default", "nodeLabels": node_labels or {"pool": "kwok"}}
    if tolerations:
        spec["tolerations"] = tolerations
    if node_taints:
        spec["nodeTaints"] = node_taints
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": spec,
    }


def node(
    i: int,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    pods: str = "110",
    ready: str = "True",
    unschedulable: bool = False,
    taints: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    transition: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    name = f"kwok-node-{i}"
    all_labels = {
        "pool": "kwok",
        BLOCK: f"b{i // 4}",
        RACK: f"r{i // 2}",
        HOST: name,
    }
    all_labels.update(labels or {})
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": spec,
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
            "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": transition}],
        },
    }


def nodes(n: int = 8, **kw: Any) -> list[dict[str, Any]]:
    return [node(i, **kw) for i in range(n)]


def pod(
    name: str,
    node_name: str | None,
    cpu: str = "1",
    phase: str = "Running",
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
        "spec": spec,
        "status": {"phase": phase},
    }


def podset_dict(
    name: str = "main",
    count: int = 1,
    cpu: str = "1",
    annotations: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    affinity: dict[str, Any] | None = None,
    memory: str | None = None,
) -> dict[str, Any]:
    requests = {"cpu": cpu}
    if memory:
        requests["memory"] = memory
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    if affinity:
        spec["affinity"] = affinity
    return {
        "name": name,
        "count": count,
        "template": {"metadata": {"annotations": annotations or {}}, "spec": spec},
    }


def podset(**kw: Any) -> PodSetRequest:
    implied = kw.pop("implied", False)
    return PodSetRequest.from_podset(podset_dict(**kw), implied=implied)


def required(level: str) -> dict[str, str]:
    return {keys.PODSET_REQUIRED_TOPOLOGY: level}


def preferred(level: str) -> dict[str, str]:
    return {keys.PODSET_PREFERRED_TOPOLOGY: level}


UNCONSTRAINED = {keys.PODSET_UNCONSTRAINED_TOPOLOGY: "true"}


def snapshot(node_list: list[dict[str, Any]] | None = None, **kw: Any) -> TopologySnapshot:
    pods = kw.pop("pods", ())
    levels = kw.pop("levels", None)
    synced = kw.pop("synced", True)
    return TopologySnapshot.build(
        topology(levels), flavor(**kw), nodes() if node_list is None else node_list, pods, synced=synced
    )


def counts(result: Any, name: str = "main") -> dict[str, int]:
    """Assignment of a Placed result as {lowest-level value: count}."""
    assert result, getattr(result, "reason", result)
    return dict(result.assignments[name].leaf_values())
