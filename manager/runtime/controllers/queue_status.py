"""ClusterQueue and LocalQueue status from the core's records (pure).

Counts and flavor usage are what ``kubectl get clusterqueue`` shows; they are derived
from the core alone, so a restarted manager writes the same values again.
"""

from __future__ import annotations

from typing import Any

from api.quantity import resource_quantity
from manager.core.engine import QueueingCore
from manager.core.workload_state import ADMITTED, PENDING

JSON = dict[str, Any]


def _flavors_usage(usage: dict[tuple[str, str], int]) -> list[JSON]:
    by_flavor: dict[str, list[JSON]] = {}
    for (flavor, resource), value in sorted(usage.items()):
        by_flavor.setdefault(flavor, []).append({"name": resource,
                                                 "total": str(resource_quantity(resource, value))})
    return [{"name": f, "resources": r} for f, r in by_flavor.items()]


def cluster_queue_status(core: QueueingCore, name: str) -> JSON:
    holding = core.holding.get(name, {}).values()
    cq = core.cq_defs.get(name)
    usage = core.usage_of(name)
    # Report every flavor/resource of the quotas, zeros included, like Kueue.
    if cq is not None:
        for fr in _quota_keys(cq):
            usage.setdefault(fr, 0)
    inactive = core.inactive.get(name)
    reason = "Terminating" if name in core.terminating else "Inactive" if inactive else "Ready"
    if name in core.terminating:
        inactive = "Can't admit new workloads; clusterQueue is terminating"
    return {
        "pendingWorkloads": sum(1 for _ in core.pending_in(name)),
        "reservingWorkloads": len(holding),
        "admittedWorkloads": sum(1 for r in holding if r.status == ADMITTED),
        "flavorsReservation": _flavors_usage(usage),
        "flavorsUsage": _flavors_usage(usage),
        "conditions": [{"type": "Active", "status": "False" if inactive else "True",
                        "reason": reason,
                        "message": inactive or "Can admit new workloads"}],
    }


def _quota_keys(cq: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key in getattr(cq, "quotas", {}) or {}:
        if isinstance(key, tuple) and len(key) == 2:
            out.append((str(key[0]), str(key[1])))
    return out


def local_queue_status(core: QueueingCore, namespace: str, name: str) -> JSON:
    pending = reserving = admitted = 0
    usage: dict[tuple[str, str], int] = {}
    for rec in core.workloads.values():
        if rec.wl.namespace != namespace or rec.wl.queue_name != name:
            continue
        if rec.status == PENDING and not rec.deactivated:
            pending += 1
        elif rec.holds_quota:
            reserving += 1
            admitted += rec.status == ADMITTED
            for fr, v in rec.usage.items():
                usage[fr] = usage.get(fr, 0) + v
    return {"pendingWorkloads": pending, "reservingWorkloads": reserving, "admittedWorkloads": admitted,
            "flavorsReservation": _flavors_usage(usage), "flavorsUsage": _flavors_usage(usage),
            "conditions": [{"type": "Active", "status": "True", "reason": "Ready",
                            "message": "Can submit new workloads to localQueue"}]}


def same_status(old: JSON, new: JSON) -> bool:
    """Equal ignoring condition timestamps (so an unchanged queue is not rewritten)."""
    def strip(s: JSON) -> JSON:
        return {**s, "conditions": [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                                    for c in s.get("conditions") or ()]}
    return strip(old) == strip(new)
