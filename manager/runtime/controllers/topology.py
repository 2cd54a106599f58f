"""What topology-aware placement needs from the cluster, fed into the core's TAS placer.

The running manager places TAS workloads with the same :class:`TasPlacer` as ``simulate``;
this module keeps it current from three informers: Topologies, Nodes, and the bound pods
that are not terminated (a field selector, so the API sends only pods that use a node's
capacity; a pod that finishes leaves the selection and arrives as a deletion). The placer
keeps the objects and rebuilds a flavor's snapshot only when one of them changed, so no
cycle relists anything.

Node health is Kueue's node failure rule for TAS: a node that is deleted, or no longer
Ready, is lost to the workloads placed on it. The placer records it in their
``status.unhealthyNodes`` and its second pass finds a replacement inside the required
domain, or the workload is evicted (``NodeFailures``) when none fits. A node that becomes
Ready again is usable for new placements.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from api.wire import JSON
from kube import resources as res
from kube.client import KubeClient
from kube.informer import EventType, Informer
from manager.core.engine import QueueingCore
from manager.core.tas_hook import TasPlacer

log = logging.getLogger(__name__)

# Bound and not terminated: the pods whose requests come off a node.
BOUND_PODS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
NODE_FAILURES = "NodeFailures"


def node_ready(node: JSON) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


class TopologyFeed:
    """Topologies, Nodes and bound Pods into the TAS placer; lost nodes into evictions."""

    def __init__(self, client: KubeClient, tas: TasPlacer, core: QueueingCore,
                 changed: Callable[[], None]) -> None:
        self.tas, self.core, self._changed = tas, core, changed
        self.informers = (Informer(client, res.TOPOLOGIES), Informer(client, res.NODES),
                          Informer(client, res.PODS, field_selector=BOUND_PODS))
        self._lost: set[str] = set()  # nodes already handed to the placer as failed
        for informer in self.informers:
            informer.add_handler(self._on_event)

    def start(self) -> None:
        for informer in self.informers:
            informer.start()

    async def wait_synced(self, timeout_s: float | None = None) -> None:
        for informer in self.informers:
            await informer.wait_synced(timeout_s)

    async def stop(self) -> None:
        for informer in self.informers:
            await informer.stop()

    def _on_event(self, event: EventType, obj: JSON, old: JSON | None) -> None:
        kind = str(obj.get("kind") or "")
        meta = obj.get("metadata") or {}
        name, namespace = str(meta.get("name") or ""), meta.get("namespace")
        if kind == "Node":
            self._on_node(event, obj, name)
        elif event == EventType.DELETED:
            if self.tas.delete(kind, namespace, name):
                self.core.requeue_inadmissible()  # freed capacity or a changed topology
        elif self.tas.apply(obj) and kind == "Topology":
            self.core.requeue_inadmissible()
        self._changed()

    def _on_node(self, event: EventType, node: JSON, name: str) -> None:
        if event != EventType.DELETED and node_ready(node):
            self._lost.discard(name)
            self.tas.apply(node)
            self.core.requeue_inadmissible()
            return
        if name in self._lost:
            return
        self._lost.add(name)
        evict = self.tas.fail_node(name)
        log.info("node %s is %s: %d workload(s) placed there have no replacement", name,
                 "gone" if event == EventType.DELETED else "not ready", len(evict))
        for key in evict:
            self.core.evict(key, NODE_FAILURES)
