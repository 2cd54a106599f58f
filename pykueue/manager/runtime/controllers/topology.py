"""What topology-aware placement needs from the cluster, fed into the core's TAS placer.

The running manager places TAS workloads with the same :class:`TasPlacer` as ``simulate``;
this module keeps it current from three informers: Topologies, Nodes, and the bound pods
that are not terminated (a field selector, so the API sends only pods that use a node's
capacity; a pod that finishes leaves the selection and arrives as a deletion). The placer
keeps the objects and rebuilds a flavor's snapshot only when one of them changed, so no
cycle relists anything.

Node failure is Kueue's rule for TAS: a node that is deleted, or NotReady for
``NODE_FAILURE_DELAY_S``, is lost to the workloads placed on it. The placer records it in
their ``status.unhealthyNodes`` and its second pass rewrites the assignment with a
replacement inside the required domain, or the workload is evicted (``NodeFailures``) when
none fits. A NotReady node stops counting as capacity for new placements at once; one that
becomes Ready again counts again. The extender may also swap the node at bind time when a
replacement pod comes first; the manager then adopts that rewrite (``QueueManager``
follows stored topology assignments), so there is one assignment, whoever wrote it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import datetime

from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.kube import resources as res
from pykueue.kube.client import KubeClient
from pykueue.kube.informer import EventType, Informer
from pykueue.kube.resources import ResourceRef
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.tas.nodes import is_ready
from pykueue.manager.core.tas_hook import TasPlacer

log = logging.getLogger(__name__)

# Bound and not terminated: the pods whose requests come off a node.
BOUND_PODS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
NODE_FAILURES = "NodeFailures"
NODE_FAILURE_DELAY_S = 30.0  # Kueue's: how long a node may be NotReady before it counts as lost


def not_ready_for(node: JSON, now: float) -> float:
    """Seconds since the node's Ready condition left True (0 when unknown)."""
    for cond in (node.get("status") or {}).get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == "Ready" and cond.get("lastTransitionTime"):
            try:
                since = datetime.fromisoformat(str(cond["lastTransitionTime"]).replace("Z", "+00:00"))
            except ValueError:
                return 0.0
            return max(0.0, now - since.timestamp())
    return 0.0


# What the feed watches, and so its only calls (as RBAC, ``api.access``): a list and a watch of each.
WATCHED: tuple[ResourceRef, ResourceRef, ResourceRef] = (res.TOPOLOGIES, res.NODES, res.PODS)
API_ACCESS: tuple[ApiAccess, ...] = tuple(ref.access("list", "watch") for ref in WATCHED)


class TopologyFeed:
    """Topologies, Nodes and bound Pods into the TAS placer."""

    def __init__(self, client: KubeClient, tas: TasPlacer, core: QueueingCore,
                 changed: Callable[[], None]) -> None:
        self.tas, self.core, self._changed = tas, core, changed
        topologies, nodes, pods = WATCHED
        self.informers = (Informer(client, topologies), Informer(client, nodes),
                          Informer(client, pods, field_selector=BOUND_PODS))
        self._nodes = self.informers[1]
        self._lost: set[str] = set()  # nodes already handed to the placer as failed
        self._rechecks: dict[str, asyncio.TimerHandle] = {}
        for informer in self.informers:
            informer.add_handler(self._on_event)

    def start(self) -> None:
        for informer in self.informers:
            informer.start()

    async def wait_synced(self, timeout_s: float | None = None) -> None:
        for informer in self.informers:
            await informer.wait_synced(timeout_s)

    async def stop(self) -> None:
        for handle in self._rechecks.values():
            handle.cancel()
        for informer in self.informers:
            await informer.stop()

    def _on_event(self, event: EventType, obj: JSON, old: JSON | None) -> None:
        kind = str(obj.get("kind") or "")
        meta = obj.get("metadata") or {}
        name, namespace = str(meta.get("name") or ""), meta.get("namespace")
        if kind == "Node":
            changed = self._on_node(event, obj, name)
        elif event == EventType.DELETED:
            changed = self.tas.delete(kind, namespace, name)
            if changed:
                self.core.requeue_inadmissible()  # freed capacity or a changed topology
        else:
            changed = self.tas.apply(obj)
            if changed and kind == "Topology":
                self.core.requeue_inadmissible()
        if changed:  # not for heartbeats and TAS pods: a poke starts a scheduling pass
            self._changed()

    def _on_node(self, event: EventType, node: JSON, name: str) -> bool:
        """False for an update that changed nothing placement reads."""
        if event != EventType.DELETED and is_ready(node):
            self._lost.discard(name)
            handle = self._rechecks.pop(name, None)
            if handle is not None:
                handle.cancel()
            if self.tas.apply(node):  # not for a heartbeat: requeueing every queue is costly
                self.core.requeue_inadmissible()
                return True
            return False
        if self.tas.delete("Node", None, name):
            log.info("node %s is %s: no longer offered to new placements", name,
                     "gone" if event == EventType.DELETED else "not ready")
        if event == EventType.DELETED:
            self._fail(name, "deleted")
            return True
        wait = NODE_FAILURE_DELAY_S - not_ready_for(node, time.time())
        if wait <= 0:
            self._fail(name, f"not ready for {NODE_FAILURE_DELAY_S:.0f}s")
        elif name not in self._rechecks:
            self._rechecks[name] = asyncio.get_running_loop().call_later(wait, self._recheck, name)
        return True

    def _recheck(self, name: str) -> None:
        """The NotReady delay has passed: lost unless it came back (or went) meanwhile."""
        self._rechecks.pop(name, None)
        node = self._nodes.get_by_name(name)
        if node is not None and not is_ready(node):
            self._on_node(EventType.MODIFIED, node, name)
            self._changed()

    def _fail(self, name: str, why: str) -> None:
        if name in self._lost:
            return
        self._lost.add(name)
        evict = self.tas.fail_node(name)
        log.info("node %s is lost (%s): its TAS workloads get a replacement; %d have none", name, why,
                 len(evict))
        for key in evict:
            self.core.evict(key, NODE_FAILURES, self.tas.failure_note(key, name))
