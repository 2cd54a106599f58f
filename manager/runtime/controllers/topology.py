"""What topology-aware placement needs from the cluster, fed into the core's TAS placer.

The running manager places TAS workloads with the same :class:`TasPlacer` as ``simulate``;
this module keeps it current from three informers: Topologies, Nodes, and the bound pods
that are not terminated (a field selector, so the API sends only pods that use a node's
capacity; a pod that finishes leaves the selection and arrives as a deletion). The placer
keeps the objects and rebuilds a flavor's snapshot only when one of them changed, so no
cycle relists anything.

A node that is deleted, or no longer Ready, stops counting as capacity for new placements;
one that becomes Ready again counts again. Marking it in the ``status.unhealthyNodes`` of the
workloads placed on it is not done here yet: the extender replaces a failed node at bind time
and rewrites the assignment, and until the manager adopts such rewrites (it would otherwise
write its own, older assignment back) the two must not both act on one failure.
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


def node_ready(node: JSON) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


class TopologyFeed:
    """Topologies, Nodes and bound Pods into the TAS placer."""

    def __init__(self, client: KubeClient, tas: TasPlacer, core: QueueingCore,
                 changed: Callable[[], None]) -> None:
        self.tas, self.core, self._changed = tas, core, changed
        self.informers = (Informer(client, res.TOPOLOGIES), Informer(client, res.NODES),
                          Informer(client, res.PODS, field_selector=BOUND_PODS))
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
            self.tas.apply(node)
            self.core.requeue_inadmissible()
        elif self.tas.delete("Node", None, name):
            log.info("node %s is %s: no longer offered to new placements", name,
                     "gone" if event == EventType.DELETED else "not ready")
