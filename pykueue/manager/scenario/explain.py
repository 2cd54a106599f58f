"""Why a workload waits, from the core that schedules it, over a live snapshot.

``explain`` applies the cluster's objects to a fresh core at the time they were read and
schedules until idle, as the manager does, then reads one workload's record: its status and
tier, the ClusterQueue and its place in the queue, per pod set and flavor what it requests
against the queue's nominal quota, what it could borrow and what is free (and how much more
it needs), the admitted workloads the queue's preemption policy would let it preempt, and for
topology-aware pod sets the placer's explanation.
"""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.api.quantity import resource_quantity
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.objects import FR
from pykueue.manager.core.preemption.classical import ClassicalPreemption
from pykueue.manager.core.tas_hook import TasPlacer, tas_only
from pykueue.manager.core.tiers import record_tier
from pykueue.manager.core.workload_state import PENDING, WorkloadView
from pykueue.manager.jobs.provisioning.names import attempt_of

from .cluster_snapshot import ClusterListing, apply_snapshot, snapshot_scenario
from .gc_pause import paused_collection
from .runner import Simulation


def _q(resource: str, value: int) -> str:
    return str(resource_quantity(resource, value))


def _flavor_rows(core: QueueingCore, rec: WorkloadView, cq_name: str, requests: dict[str, int],
                 assigned: dict[str, str], before: dict[FR, int]) -> dict[str, Any]:
    """Per flavor of the ClusterQueue that covers the pod set's resources: the numbers.
    ``before``: what the workload's earlier pod sets would take of each flavor (pod sets are
    assigned in order, each charging the quota for the next), updated here."""
    cq = core.cluster_queue(cq_name)
    node = core.quota_tree().cluster_queues.get(cq_name)
    out: dict[str, Any] = {}
    if cq is None or node is None:
        return out
    usage = core.usage_at(node)
    for group in cq.groups:
        wanted = [r for r in requests if r in group.covered]
        if not wanted:
            continue
        for flavor in group.flavors:
            if assigned and flavor not in assigned.values():
                continue
            resources: dict[str, Any] = {}
            for res in wanted:
                fr: FR = (flavor, res)
                quota = node.quota(fr)
                free, local = core.headroom(cq_name, fr)
                borrowable = max(0, free - local)
                requested = requests[res]
                resources[res] = {
                    "requested": _q(res, requested),
                    "nominal": _q(res, quota.nominal),
                    "used": _q(res, usage.get(fr, 0)),
                    "borrowable": _q(res, borrowable),
                    "free": _q(res, max(0, free)),
                }
                if rec.status == PENDING:  # what it lacks; an admitted one's request is in "used"
                    resources[res]["needed"] = _q(res, max(0, before.get(fr, 0) + requested - max(0, free)))
                    before[fr] = before.get(fr, 0) + requested
            out[flavor] = resources
    return out


def _podsets(core: QueueingCore, rec: WorkloadView, cq_name: str) -> dict[str, Any]:
    assigned = {psa.name: psa.flavors for psa in (rec.assignment.podsets if rec.assignment else ())}
    out: dict[str, Any] = {}
    before: dict[FR, int] = {}
    for ps in rec.wl.podsets:
        requests = {r: v * ps.count for r, v in ps.requests.items()}
        out[ps.name] = {
            "count": ps.count,
            "requests": {r: _q(r, v) for r, v in sorted(requests.items())},
            "assignedFlavors": dict(sorted(assigned.get(ps.name, {}).items())),
            "flavors": _flavor_rows(core, rec, cq_name, requests, assigned.get(ps.name, {}), before),
        }
    if rec.pending is not None:
        for miss in rec.pending.podsets:
            if miss.podset in out:
                out[miss.podset]["verdicts"] = [v.message() for v in miss.verdicts]
        _closest_domains(core, rec, cq_name, out)
    return out


def _closest_domains(core: QueueingCore, rec: WorkloadView, cq_name: str, out: dict[str, Any]) -> None:
    """For a pending workload, per pod set and topology-aware flavor: where it comes closest."""
    cq = core.cluster_queue(cq_name)
    tas = core.topology
    if not isinstance(tas, TasPlacer) or cq is None:
        return
    flavors = core.flavors()
    implied = tas_only(cq, flavors)
    for ps in rec.wl.podsets:
        found: dict[str, Any] = {}
        for group in cq.groups:
            if not any(r in group.covered for r in ps.requests):
                continue
            for name in group.flavors:
                flavor = flavors.get(name)
                if flavor is None or not flavor.topology_name:
                    continue
                closest = tas.closest_domains(rec.wl, flavor, ps.name, implied)
                if closest:
                    found[name] = closest
        if found:
            out[ps.name]["closestDomains"] = found


def _preemptible(core: QueueingCore, rec: WorkloadView, cq_name: str) -> dict[str, list[str]]:
    """Per flavor, the workloads holding quota that the queue's policy lets it preempt."""
    cq = core.cluster_queue(cq_name)
    if cq is None or cq_name not in core.quota_tree().cluster_queues or rec.status != PENDING:
        return {}
    snap = core.snapshot()
    search = ClassicalPreemption()
    out: dict[str, list[str]] = {}
    for group in cq.groups:
        for flavor in group.flavors:
            request: dict[FR, int] = {}
            for ps in rec.wl.podsets:
                for res, v in ps.requests.items():
                    if res in group.covered:
                        request[(flavor, res)] = request.get((flavor, res), 0) + v * ps.count
            if not request:
                continue
            found = search.candidates(snap, cq_name, rec.priority, rec.queue_ts, request, frozenset(request))
            keys = sorted({c.key for c in found if c.key != rec.key})
            if keys:
                out[flavor] = keys
    return out


def explain_record(core: QueueingCore, key: str) -> dict[str, Any]:
    rec = core.workload(key)
    if rec is None:
        raise KeyError(key)
    cq_name = rec.cluster_queue or ""
    place = core.queue_position(key)
    pending = rec.status == PENDING
    out: dict[str, Any] = {
        "workload": key,
        "owner": rec.wl.owner or "",
        "status": rec.status,
        "reason": record_tier(rec).value if pending else "",
        "message": rec.reason if pending else "",
        "clusterQueue": cq_name,
        "localQueue": rec.wl.queue_name,
        "priority": rec.priority,
        "position": place[0] if place else None,
        "queueLength": place[1] if place else None,
        "podSets": _podsets(core, rec, cq_name),
        "preemptionCandidates": _preemptible(core, rec, cq_name),
    }
    tas = core.topology
    if isinstance(tas, TasPlacer) and pending:
        topology = tas.explain(key)
        if topology:
            out["topology"] = topology
    return out


def explain(listing: ClusterListing, keys: list[str]) -> list[dict[str, Any]]:
    """The explanation of each workload (``ns/name``); raises KeyError for one not found."""
    with paused_collection():
        scenario = snapshot_scenario(listing)
        sim = Simulation(scenario, start=listing.now, evaluate_each=True, live=True)
        apply_snapshot(sim, scenario.objects)
        missing = [k for k in keys if sim.core.workload(k) is None]
        if missing:
            raise KeyError(missing[0])
        entries = [explain_record(sim.core, k) for k in keys]
    for entry in entries:
        checks = admission_checks(listing, entry["workload"])
        if checks:
            entry["admissionChecks"] = checks
    return entries


def admission_checks(listing: ClusterListing, key: str) -> list[dict[str, Any]]:
    """The Workload's admission checks as stored: state and message, and for a
    ProvisioningRequest check the request of its latest attempt and what its conditions say."""
    namespace, name = key.split("/", 1)
    workload = next((w for w in listing.items.get("Workload") or ()
                     if (w.get("metadata") or {}).get("namespace") == namespace
                     and (w.get("metadata") or {}).get("name") == name), None)
    if workload is None:
        return []
    controllers = {str((c.get("metadata") or {}).get("name")): (c.get("spec") or {}).get("controllerName")
                   for c in listing.items.get("AdmissionCheck") or ()}
    out: list[dict[str, Any]] = []
    for entry in (workload.get("status") or {}).get("admissionChecks") or ():
        check = str(entry.get("name"))
        item: dict[str, Any] = {"name": check, "state": str(entry.get("state") or "Pending"),
                                "message": str(entry.get("message") or "")}
        if controllers.get(check) == keys.PROVISIONING_REQUEST_CONTROLLER:
            request = _latest_request(listing, namespace, name, check)
            if request is not None:
                item["provisioningRequest"] = request
        out.append(item)
    return out


def _latest_request(listing: ClusterListing, namespace: str, workload: str,
                    check: str) -> dict[str, Any] | None:
    best: tuple[int, dict[str, Any]] | None = None
    for req in listing.items.get("ProvisioningRequest") or ():
        meta = req.get("metadata") or {}
        attempt = attempt_of(str(meta.get("name")), workload, check)
        if meta.get("namespace") != namespace or attempt is None or (best is not None and attempt <= best[0]):
            continue
        conditions = {str(c.get("type")): c for c in (req.get("status") or {}).get("conditions") or ()}
        state, message = "Pending", "the autoscaler has not answered yet"
        provisioned = conditions.get("Provisioned")
        accepted = conditions.get("Accepted")
        for kind in ("Failed", "CapacityRevoked", "BookingExpired", "Provisioned"):
            cond = conditions.get(kind)
            if cond is not None and cond.get("status") == "True":
                state, message = kind, str(cond.get("message") or "")
                break
        else:
            if provisioned is not None:  # False: what the autoscaler is still trying
                state = f"NotProvisioned ({provisioned.get('reason') or ''})"
                message = str(provisioned.get("message") or "")
            elif accepted is not None and accepted.get("status") == "True":
                state, message = "Accepted", str(accepted.get("message") or "")
        best = (attempt, {"name": str(meta.get("name")), "attempt": attempt, "state": state,
                          "message": message})
    return None if best is None else best[1]


def text(entry: dict[str, Any]) -> str:
    """The explanation as lines for a terminal."""
    owner = f"  (owner {entry['owner']})" if entry["owner"] else ""
    lines = [f"Workload:      {entry['workload']}{owner}",
             f"Status:        {entry['status']}" + (f" ({entry['reason']})" if entry["reason"] else "")]
    if entry["message"]:
        lines.append(f"Message:       {entry['message']}")
    lines.append(f"ClusterQueue:  {entry['clusterQueue'] or '-'} (LocalQueue {entry['localQueue'] or '-'})")
    if entry["position"] is not None:
        lines.append(f"Position:      {entry['position']} of {entry['queueLength']} pending")
    for name, ps in entry["podSets"].items():
        reqs = ", ".join(f"{r}={q}" for r, q in ps["requests"].items())
        lines.append(f"PodSet {name}: {ps['count']} pod(s), requests {reqs}")
        if ps["assignedFlavors"]:
            lines.append("  assigned: " + ", ".join(f"{r}->{f}" for r, f in ps["assignedFlavors"].items()))
        for flavor, resources in ps["flavors"].items():
            for res, n in resources.items():
                needed = f", needed {n['needed']}" if "needed" in n else ""
                lines.append(f"  flavor {flavor} {res}: requested {n['requested']}, nominal {n['nominal']}, "
                             f"used {n['used']}, borrowable {n['borrowable']}, free {n['free']}{needed}")
        for verdict in ps.get("verdicts") or ():
            lines.append(f"  - {verdict}")
        for flavor, closest in (ps.get("closestDomains") or {}).items():
            domains = ", ".join(f"{'/'.join(d['values'])} ({d['fit']} of {ps['count']})"
                                for d in closest["domains"])
            lines.append(f"  closest {'/'.join(closest['levels'])} domains in {flavor}: {domains}")
    if entry["preemptionCandidates"]:
        for flavor, victims in entry["preemptionCandidates"].items():
            lines.append(f"Could preempt in {flavor}: {', '.join(victims)}")
    elif entry["status"] == PENDING and entry["clusterQueue"]:
        lines.append("Could preempt: none under the ClusterQueue's preemption policy")
    if entry.get("topology"):
        lines.append(f"Topology:      {entry['topology']}")
    for check in entry.get("admissionChecks") or ():
        said = f": {check['message']}" if check["message"] else ""
        lines.append(f"Admission check {check['name']}: {check['state']}{said}")
        request = check.get("provisioningRequest")
        if request is not None:
            said = f": {request['message']}" if request["message"] else ""
            lines.append(f"  ProvisioningRequest {request['name']} (attempt {request['attempt']}): "
                         f"{request['state']}{said}")
    return "\n".join(lines)
