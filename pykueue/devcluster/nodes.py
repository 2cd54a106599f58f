"""The eight fake nodes of the dev cluster and how ``dev up`` keeps them as declared.

Nodes ``kwok-node-0..7`` form two topology blocks of two racks each (two nodes per
rack), the shape pykueue's topology-aware scheduling tests rely on. They carry the labels
of Kueue's topology-aware examples (``tas/kind-cluster.yaml``: node group ``tas-group``,
block and rack), so ``tas/sample-queues.yaml`` and its Jobs run on them unchanged. They are written
with server-side apply: creating a missing node and undoing changes to our labels,
capacity and allocatable are the same call, which makes ``dev up`` idempotent.
"""

from __future__ import annotations

from typing import Any

from pykueue.kube.blocking import BlockingClient

NODE_COUNT = 8
NODES_PER_RACK = 2
RACKS_PER_BLOCK = 2
BLOCK_LABEL = "cloud.provider.com/topology-block"
RACK_LABEL = "cloud.provider.com/topology-rack"
NODE_GROUP_LABEL = "cloud.provider.com/node-group"
NODE_GROUP = "tas-group"  # the node group of Kueue's topology-aware examples
HOSTNAME_LABEL = "kubernetes.io/hostname"
KWOK_SELECTOR_LABEL = "type"  # kwok manages nodes with type=kwok
CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110"}


def node_name(index: int) -> str:
    return f"kwok-node-{index}"


def node_labels(index: int) -> dict[str, str]:
    rack = index // NODES_PER_RACK
    block = rack // RACKS_PER_BLOCK
    name = node_name(index)
    return {
        BLOCK_LABEL: f"b{block}",
        RACK_LABEL: f"r{rack}",
        HOSTNAME_LABEL: name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "instance-type": "on-demand",
        NODE_GROUP_LABEL: NODE_GROUP,
        KWOK_SELECTOR_LABEL: "kwok",
    }


def node_manifest(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node_name(index),
            "labels": node_labels(index),
            # Tells humans (and kwok's own tooling) that no kubelet stands behind this node.
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {},
    }


def node_status(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node_name(index)},
        "status": {"capacity": dict(CAPACITY), "allocatable": dict(CAPACITY)},
    }


def ensure_nodes(client: BlockingClient) -> list[str]:
    """Apply all nodes; returns the names that did not exist before (re-created)."""
    created: list[str] = []
    for index in range(NODE_COUNT):
        name = node_name(index)
        if client.get_or_none(f"/api/v1/nodes/{name}") is None:
            created.append(name)
        client.apply(f"/api/v1/nodes/{name}", node_manifest(index))
        client.apply(f"/api/v1/nodes/{name}/status", node_status(index))
    return created


def ready_node_names(client: BlockingClient) -> set[str]:
    items = client.get(f"/api/v1/nodes?labelSelector={KWOK_SELECTOR_LABEL}%3Dkwok")["items"]
    ready: set[str] = set()
    for node in items:
        conditions = node.get("status", {}).get("conditions", [])
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            ready.add(node["metadata"]["name"])
    return ready


def all_nodes_ready(client: BlockingClient) -> bool:
    return {node_name(i) for i in range(NODE_COUNT)} <= ready_node_names(client)
