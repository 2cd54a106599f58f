"""What topology-aware placement needs from the cluster, fed into the core's TAS placer.

The running manager places TAS workloads with the same :class:`TasPlacer` as ``simulate``;
this module keeps it current from three informers: Topologies, Nodes, and the bound pods
that are not terminated (a field selector, so the API sends only pods that use a node's
capacity; a pod that finishes leaves the selection and arrives as a deletion). The placer
keeps the objects and rebuilds a flavor's snapshot only when one of them changed, so no
cycle relists anything.

Node failure follows Kueue v0.19.2's node controller (``core.tas.node_health``, switched by
its feature gates): a deleted node, or one without a Ready condition, is lost to every
workload placed on it; a NotReady node, or one with a NoSchedule/NoExecute taint a PodSet
placed there does not tolerate, is lost to a workload once none of its pods there is still
progressing (bound, not terminated, not being deleted). The feed keeps those pods from the
same pod informer and asks again when one of them ends, when the node's readiness or
taints change, and when a delay the rules read expires. The placer records a lost node in
the workload's ``status.unhealthyNodes`` (and drops it when the node is healthy again for
it); its second pass rewrites the assignment with a replacement inside the required
domain, or the workload is evicted (``NodeFailures``) when none fits or when a second
node is lost. A NotReady node stops counting as capacity for new placements at once; one
that becomes Ready again counts again. The extender may also swap the node at bind time
when a replacement pod comes first; the manager then adopts that rewrite (``QueueManager``
follows stored topology assignments), so there is one assignment, whoever wrote it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from pykueue.api import keys
from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.kube import resources as res
from pykueue.kube.client import KubeClient
from pykueue.kube.informer import EventType, Informer
from pykueue.kube.resources import ResourceRef
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.tas.node_health import (
    Health,
    NodeFailureRules,
    has_scheduling_taints,
    lost_outright,
    recheck_after,
    workload_health,
)
from pykueue.manager.core.tas.nodes import is_ready
from pykueue.manager.core.tas_hook import TasPlacer

log = logging.getLogger(__name__)

# Bound and not terminated: the pods whose requests come off a node.
BOUND_PODS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
NODE_FAILURES = "NodeFailures"


# What the feed watches, and so its only calls (as RBAC, ``api.access``): a list and a watch of each.
WATCHED: tuple[ResourceRef, ResourceRef, ResourceRef] = (res.TOPOLOGIES, res.NODES, res.PODS)
API_ACCESS: tuple[ApiAccess, ...] = tuple(ref.access("list", "watch") for ref in WATCHED)


class TopologyFeed:
    """Topologies, Nodes and bound Pods into the TAS placer."""

    def __init__(self, client: KubeClient, tas: TasPlacer, core: QueueingCore,
                 changed: Callable[[], None], rules: NodeFailureRules | None = None) -> None:
        self.tas, self.core, self._changed = tas, core, changed
        self.rules = rules or NodeFailureRules()
        topologies, nodes, pods = WATCHED
        self.informers = (Informer(client, topologies), Informer(client, nodes),
                          Informer(client, pods, field_selector=BOUND_PODS))
        self._nodes: dict[str, JSON] = {}  # every node as last seen, Ready or not
        self._workload_pods: dict[str, dict[str, str]] = {}  # node -> pod key -> ns/workload slice
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
        self._rechecks.clear()
        for informer in self.informers:
            await informer.stop()

    def _on_event(self, event: EventType, obj: JSON, old: JSON | None) -> None:
        kind = str(obj.get("kind") or "")
        meta = obj.get("metadata") or {}
        name, namespace = str(meta.get("name") or ""), meta.get("namespace")
        if kind == "Node":
            changed = self._on_node(event, obj, name, old)
        else:
            if kind == "Pod":
                self._track_workload_pod(event, obj)
            if event == EventType.DELETED:
                changed = self.tas.delete(kind, namespace, name)
                if changed:
                    self.core.requeue_inadmissible()  # freed capacity or a changed topology
            else:
                changed = self.tas.apply(obj)
                if changed and kind == "Topology":
                    self.core.requeue_inadmissible()
        if changed:  # not for heartbeats and TAS pods: a poke starts a scheduling pass
            self._changed()

    # -- pods of workloads, per node ---------------------------------------------------------

    def _track_workload_pod(self, event: EventType, pod: JSON) -> None:
        """Keep the bound pods of Kueue workloads per node; when one ends (leaves the
        selection) or starts terminating, a node the rules watch is judged again."""
        meta = pod.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        owner = annotations.get(keys.WORKLOAD_SLICE_NAME) or annotations.get(keys.WORKLOAD_ANNOTATION)
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if not owner or not node:
            return
        pkey = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        on_node = self._workload_pods.setdefault(node, {})
        progressing = event != EventType.DELETED and not meta.get("deletionTimestamp") \
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        was = on_node.get(pkey)
        if progressing:
            on_node[pkey] = f"{meta.get('namespace') or 'default'}/{owner}"
        else:
            on_node.pop(pkey, None)
            if not on_node:
                del self._workload_pods[node]
        if was is not None and not progressing and self._watched(node) and self._evaluate(node):
            self._changed()

    def _progressing(self, node: str, key: str) -> bool:
        view = self.core.workload(key)
        namespace, _, name = key.partition("/")
        annotations = ((view.wl.source.get("metadata") or {}).get("annotations") or {}) if view else {}
        owner = f"{namespace}/{annotations.get(keys.WORKLOAD_SLICE_NAME) or name}"
        return owner in self._workload_pods.get(node, {}).values()

    def _tolerations(self, key: str, placed: list[tuple[str, str]]) -> list[list[JSON]]:
        """The effective tolerations of each of the workload's PodSets placed on a node: its
        template's, its flavor's and those its admission checks' podSetUpdates add."""
        view = self.core.workload(key)
        if view is None:
            return []
        source = view.wl.source
        podsets = {str(p.get("name")): p for p in (source.get("spec") or {}).get("podSets") or ()}
        updates: dict[str, list[JSON]] = {}
        for check in (source.get("status") or {}).get("admissionChecks") or ():
            for update in check.get("podSetUpdates") or ():
                updates.setdefault(str(update.get("name")), []).extend(update.get("tolerations") or ())
        flavors = self.core.flavors()
        out = []
        for podset, flavor in placed:
            spec = ((podsets.get(podset) or {}).get("template") or {}).get("spec") or {}
            fl = flavors.get(flavor)
            out.append([*(spec.get("tolerations") or ()), *(fl.tolerations if fl else ()),
                        *updates.get(podset, ())])
        return out

    # -- nodes -------------------------------------------------------------------------------

    def _watched(self, name: str) -> bool:
        """Whether a pod ending on the node may change a verdict: it is gone, NotReady or tainted."""
        node = self._nodes.get(name)
        return node is None or not is_ready(node) or has_scheduling_taints(node)

    def _on_node(self, event: EventType, node: JSON, name: str, old: JSON | None = None) -> bool:
        """False for an update that changed nothing placement reads."""
        if event == EventType.DELETED:
            self._nodes.pop(name, None)
            if self.tas.delete("Node", None, name):
                log.info("node %s is gone: no longer offered to new placements", name)
            self._cancel_recheck(name)
            self._fail(name, "deleted")
            return True
        self._nodes[name] = node
        judge = old is None or is_ready(old) != is_ready(node) or \
            (self.rules.node_taints and _taints(old) != _taints(node))
        if is_ready(node):
            self._cancel_recheck(name)
            changed = self.tas.apply(node)  # not for a heartbeat: requeueing every queue is costly
            if changed:
                self.core.requeue_inadmissible()
        else:
            changed = self.tas.delete("Node", None, name)
            if changed:
                log.info("node %s is not ready: no longer offered to new placements", name)
        if judge:
            changed = self._evaluate(name) or changed
        return changed

    def _evaluate(self, name: str) -> bool:
        """Judge the node for every workload placed on it (Kueue's node reconcile); True
        when a workload's unhealthy nodes changed or it was evicted."""
        node = self._nodes.get(name)
        now = datetime.now(UTC)
        affected = self.tas.workloads_on_node(name)
        evict: set[str] = set()
        changed = False
        if lost_outright(node, now, self.rules):
            for key in affected:
                before = self.tas.unhealthy_nodes(key)
                if self.tas.mark_unhealthy(key, name):
                    evict.add(key)
                changed = changed or before != self.tas.unhealthy_nodes(key)
        wait = recheck_after(node, now, self.rules)
        if wait is not None and name not in self._rechecks:
            self._schedule_recheck(name, wait)
        for key, placed in affected.items():
            if key in evict:
                continue
            health = workload_health(node, now, self.rules, progressing_pods=self._progressing(name, key),
                                     podset_tolerations=self._tolerations(key, placed))
            if health is Health.FAILED:
                before = self.tas.unhealthy_nodes(key)
                if self.tas.mark_unhealthy(key, name):
                    evict.add(key)
                elif before != self.tas.unhealthy_nodes(key):
                    log.info("node %s is lost to workload %s: it gets a replacement", name, key)
                    changed = True
            elif health is Health.HEALTHY and self.tas.clear_unhealthy(key, name):
                log.info("node %s is healthy again for workload %s", name, key)
                changed = True
        for key in sorted(evict):
            self.core.evict(key, NODE_FAILURES, self.tas.failure_note(key, name))
        return changed or bool(evict)

    def judge_nodes(self) -> None:
        """Judge every NotReady or tainted node once the workloads are known (after the
        informers synced: events that came earlier found no workload placed on them)."""
        changed = False
        for name in sorted(self._nodes):
            if self._watched(name):
                changed = self._evaluate(name) or changed
        if changed:
            self._changed()

    def _schedule_recheck(self, name: str, wait_s: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # driven without a loop (tests): no timers
            return
        self._rechecks[name] = loop.call_later(wait_s, self._recheck, name)

    def _cancel_recheck(self, name: str) -> None:
        handle = self._rechecks.pop(name, None)
        if handle is not None:
            handle.cancel()

    def _recheck(self, name: str) -> None:
        """A delay the rules read has passed: judge the node again."""
        self._rechecks.pop(name, None)
        if self._evaluate(name):
            self._changed()

    def _fail(self, name: str, why: str) -> None:
        evict = self.tas.fail_node(name, mark=self.rules.replacement)
        log.info("node %s is lost (%s): its TAS workloads get a replacement; %d have none", name, why,
                 len(evict))
        for key in evict:
            self.core.evict(key, NODE_FAILURES, self.tas.failure_note(key, name))


def _taints(node: JSON) -> list[JSON]:
    return list((node.get("spec") or {}).get("taints") or ())
