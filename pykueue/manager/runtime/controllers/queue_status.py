"""ClusterQueue and LocalQueue status from the core's records (pure).

Counts and flavor usage are what ``kubectl get clusterqueue`` shows; they are derived
from the core alone, so a restarted manager writes the same values again.

A status pass indexes the workloads by queue once (:class:`QueueIndex`) instead of
scanning every workload for every queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pykueue.api.quantity import resource_quantity
from pykueue.api.wire import JSON
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.queue_activity import CLUSTER_QUEUE_READY, ActiveCondition, local_queue_active
from pykueue.manager.core.workload_state import ADMITTED, PENDING


def _flavors_usage(usage: dict[tuple[str, str], int]) -> list[JSON]:
    by_flavor: dict[str, list[JSON]] = {}
    for (flavor, resource), value in sorted(usage.items()):
        by_flavor.setdefault(flavor, []).append({"name": resource,
                                                 "total": str(resource_quantity(resource, value))})
    return [{"name": f, "resources": r} for f, r in by_flavor.items()]


@dataclass
class LocalQueueCounts:
    pending: int = 0
    reserving: int = 0
    admitted: int = 0
    usage: dict[tuple[str, str], int] = field(default_factory=dict)


@dataclass
class QueueIndex:
    """Per-queue figures of one pass over the core's workloads."""

    pending_by_cq: dict[str, int] = field(default_factory=dict)
    local_queues: dict[tuple[str, str], LocalQueueCounts] = field(default_factory=dict)

    @classmethod
    def build(cls, core: QueueingCore) -> QueueIndex:
        index = cls()
        for rec in core.all_workloads().values():
            pending = rec.status == PENDING and not rec.deactivated
            if not pending and not rec.holds_quota:
                continue
            if pending and rec.cluster_queue:
                index.pending_by_cq[rec.cluster_queue] = index.pending_by_cq.get(rec.cluster_queue, 0) + 1
            lq = index.local_queues.setdefault((rec.wl.namespace, rec.wl.queue_name), LocalQueueCounts())
            if pending:
                lq.pending += 1
            else:
                lq.reserving += 1
                lq.admitted += rec.status == ADMITTED
                for fr, v in rec.usage.items():
                    lq.usage[fr] = lq.usage.get(fr, 0) + v
        return index


def cluster_queue_status(core: QueueingCore, name: str, index: QueueIndex | None = None) -> JSON:
    index = index if index is not None else QueueIndex.build(core)
    holding = core.holders(name).values()
    cq = core.cluster_queue(name)
    usage = core.usage_of(name)
    # Report every flavor/resource of the quotas, zeros included, like Kueue.
    if cq is not None:
        for fr in _quota_keys(cq):
            usage.setdefault(fr, 0)
    active = core.cluster_queue_condition(name) or CLUSTER_QUEUE_READY
    return {
        "pendingWorkloads": index.pending_by_cq.get(name, 0),
        "reservingWorkloads": len(holding),
        "admittedWorkloads": sum(1 for r in holding if r.status == ADMITTED),
        "flavorsReservation": _flavors_usage(usage),
        "flavorsUsage": _flavors_usage(usage),
        "conditions": [_condition(active)],
    }


def _condition(active: ActiveCondition) -> JSON:
    return {"type": "Active", "status": "True" if active.active else "False",
            "reason": active.reason, "message": active.message}


def _quota_keys(cq: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key in getattr(cq, "quotas", {}) or {}:
        if isinstance(key, tuple) and len(key) == 2:
            out.append((str(key[0]), str(key[1])))
    return out


def local_queue_status(core: QueueingCore, namespace: str, name: str,
                       index: QueueIndex | None = None) -> JSON:
    index = index if index is not None else QueueIndex.build(core)
    lq = index.local_queues.get((namespace, name)) or LocalQueueCounts()
    spec = core.local_queue(f"{namespace}/{name}")
    stop_policy = spec.stop_policy if spec is not None else "None"
    active = local_queue_active(stop_policy, core.cluster_queue_condition(spec.cluster_queue)
                                if spec is not None else None)
    # Kueue counts nothing pending in a stopped LocalQueue.
    pending = 0 if stop_policy != "None" else lq.pending
    return {"pendingWorkloads": pending, "reservingWorkloads": lq.reserving,
            "admittedWorkloads": lq.admitted,
            "flavorsReservation": _flavors_usage(lq.usage), "flavorsUsage": _flavors_usage(lq.usage),
            "conditions": [_condition(active)]}


def same_status(old: JSON, new: JSON) -> bool:
    """Equal ignoring condition timestamps (so an unchanged queue is not rewritten)."""
    def strip(s: JSON) -> JSON:
        return {**s, "conditions": [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                                    for c in s.get("conditions") or ()]}
    return strip(old) == strip(new)
