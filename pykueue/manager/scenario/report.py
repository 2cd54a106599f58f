"""The result of a simulation, as the ``--json`` contract and as a readable table."""

from __future__ import annotations

from typing import Any

from pykueue.api.quantity import resource_quantity
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.tas_hook import TasPlacer
from pykueue.manager.core.tiers import record_tier
from pykueue.manager.core.workload_state import ADMITTED, PENDING, WorkloadView


def _podsets(core: QueueingCore, rec: WorkloadView) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tas = core.topology if isinstance(core.topology, TasPlacer) else None
    delayed = tas.status_fields(rec.key)[0] if tas is not None else {}
    if rec.holds_quota and rec.assignment is not None:
        for psa in rec.assignment.podsets:
            ta = psa.topology_assignment
            if ta and tas is not None:
                ta = tas.simple_view(ta, psa.flavors.values(), core.flavors())
            out[psa.name] = {"count": psa.count, "flavors": dict(sorted(psa.flavors.items())),
                             "topologyAssignment": ta}
            if psa.name in delayed:
                out[psa.name]["delayedTopologyRequest"] = delayed[psa.name]
        return out
    for ps in rec.wl.podsets:
        out[ps.name] = {"count": ps.count, "flavors": {}, "topologyAssignment": None}
    return out


def result(core: QueueingCore) -> dict[str, Any]:
    workloads: dict[str, Any] = {}
    records = core.all_workloads()
    tas = core.topology if isinstance(core.topology, TasPlacer) else None
    for key in sorted(records):
        rec = records[key]
        workloads[key] = {
            "status": rec.status,
            "clusterQueue": rec.cluster_queue or "",
            "owner": rec.wl.owner or "",
            "podSets": _podsets(core, rec),
            "evictions": list(rec.evictions),
            "reason": rec.reason if rec.status == PENDING else "",
            # KEP-10852's QuotaReserved=False reason (Misconfigured, WaitingForQuota, ...).
            "tier": record_tier(rec).value if rec.status == PENDING else "",
        }
        if rec.preemption_reasons:
            # Beside the contract's "evictions": why each "Preempted" eviction happened.
            workloads[key]["preemptionReasons"] = list(rec.preemption_reasons)
        if rec.checks:
            workloads[key]["admissionChecks"] = dict(rec.checks)
        unhealthy = tas.status_fields(key)[1] if tas is not None else []
        if unhealthy:
            workloads[key]["unhealthyNodes"] = unhealthy
    # One pass over the workloads for every queue's counts (a snapshot may hold thousands of each).
    pending_by: dict[str, int] = {}
    admitted_by: dict[str, int] = {}
    for r in records.values():
        if r.status == PENDING and not r.deactivated and r.cluster_queue:
            pending_by[r.cluster_queue] = pending_by.get(r.cluster_queue, 0) + 1
        elif r.status == ADMITTED and r.cluster_queue:
            admitted_by[r.cluster_queue] = admitted_by.get(r.cluster_queue, 0) + 1
    cqs: dict[str, Any] = {}
    cluster_queues = core.cluster_queues()
    for name in sorted(cluster_queues):
        used = core.usage_of(name)
        usage: dict[str, dict[str, str]] = {}
        for (flavor, res) in cluster_queues[name].quotas:
            usage.setdefault(flavor, {})[res] = str(resource_quantity(res, used.get((flavor, res), 0)))
        cqs[name] = {"usage": usage, "pending": pending_by.get(name, 0), "admitted": admitted_by.get(name, 0)}
    return {"workloads": workloads, "clusterQueues": cqs}


def table(data: dict[str, Any]) -> str:
    lines: list[str] = []
    rows: list[tuple[str, ...]] = [("WORKLOAD", "STATUS", "CLUSTERQUEUE", "PODSETS", "REASON")]
    for key, w in data["workloads"].items():
        podsets = " ".join(_podset_cell(n, p) for n, p in w["podSets"].items())
        ev = f" (evicted: {', '.join(w['evictions'])})" if w["evictions"] else ""
        rows.append((key, w["status"], w["clusterQueue"] or "-", podsets, (w["reason"] or "") + ev))
    lines.extend(_format(rows))
    lines.append("")
    rows = [("CLUSTERQUEUE", "PENDING", "ADMITTED", "USAGE")]
    for name, c in data["clusterQueues"].items():
        usage = " ".join(f"{f}:{r}={q}" for f, rs in c["usage"].items() for r, q in rs.items())
        rows.append((name, str(c["pending"]), str(c["admitted"]), usage))
    lines.extend(_format(rows))
    return "\n".join(lines)


def _podset_cell(name: str, p: dict[str, Any]) -> str:
    flavors = ",".join(sorted(set(p["flavors"].values())))
    return f"{name}x{p['count']}" + (f"[{flavors}]" if flavors else "")


def _format(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip() for r in rows]
