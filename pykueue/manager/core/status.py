"""The Workload ``status`` Kueue would write for a workload record.

The runtime patches this onto the Workload object; the simulator can show it. Built
from the record alone (a pure function of the record and the time), so a restart that
rebuilds records from the API writes the same status again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pykueue.api.keys import Reason, WorkloadCondition
from pykueue.api.quantity import resource_quantity

from . import max_execution
from .objects import format_time, parse_time
from .reasons import PREEMPTION_WORDING, Pending, eviction_cause
from .tas_hook import DELAYED_PENDING
from .tiers import AdmittedReason, admitted_reason, record_tier
from .workload_state import ADMITTED, FINISHED, PENDING, WorkloadView


def _condition(kind: str, status: bool, reason: str, message: str, now: float) -> dict[str, Any]:
    return {"type": kind, "status": "True" if status else "False", "reason": reason,
            "message": message, "lastTransitionTime": format_time(now)}


# Kueue's messages for the evictions of a stopped queue, and whether the workload, pending
# since, still waits for that queue to run again (its Requeued condition False until then).
_STOPPED = {
    Reason.CLUSTER_QUEUE_STOPPED: ("The ClusterQueue is stopped", Reason.CLUSTER_QUEUE_RESTARTED,
                                   "The ClusterQueue was restarted after being stopped"),
    Reason.LOCAL_QUEUE_STOPPED: ("The LocalQueue is stopped", Reason.LOCAL_QUEUE_RESTARTED,
                                 "The LocalQueue was restarted after being stopped"),
}


def _still_stopped(rec: WorkloadView, reason: str) -> bool:
    p = rec.pending
    if p is None:
        return False
    if reason == Reason.LOCAL_QUEUE_STOPPED:
        return p.kind is Pending.LOCAL_QUEUE_STOPPED
    return p.kind is Pending.CLUSTER_QUEUE_INACTIVE and p.detail == "Stopped"


def _eviction_conditions(rec: WorkloadView, now: float) -> list[dict[str, Any]]:
    """Evicted (and, after a preemption, Preempted and Requeued; after a stopped queue's
    drain, Requeued) for the latest eviction.

    While the workload waits they are True (a drained workload's Requeued is False until
    its queue runs again); once it reserves quota again Kueue flips Evicted and Preempted
    to False with reason QuotaReserved and the old message after "Previously: ".
    """
    last = rec.evictions[-1]
    preempted = last == Reason.PREEMPTED and bool(rec.preemption_reasons)
    why = rec.preemption_reasons[-1] if preempted else ""
    stopped = _STOPPED.get(last)
    if rec.eviction_note is not None and rec.eviction_note.message:
        message = rec.eviction_note.message  # Kueue's wording, chosen when it was evicted
    elif stopped is not None:
        message = stopped[0]
    elif not preempted:
        message = f"Evicted: {last}"
    elif rec.preemption is not None:
        message = rec.preemption.message()
    else:  # adopted from the API without its preemptor
        message = f"Preempted to accommodate a workload due to {PREEMPTION_WORDING.get(why, why)}"
    out: list[dict[str, Any]] = []
    if rec.stopping is not None:  # its job is stopping: quota still held, not requeued yet
        out.append(_condition(WorkloadCondition.EVICTED, True, last, message, now))
        if preempted:
            out.append(_condition(WorkloadCondition.PREEMPTED, True, why, message, now))
        return out
    if rec.holds_quota:
        out.append(_condition(WorkloadCondition.EVICTED, False, Reason.QUOTA_RESERVED,
                              f"Previously: {message}", now))
        if preempted:
            out.append(_condition(WorkloadCondition.PREEMPTED, False, Reason.QUOTA_RESERVED,
                                  f"Previously: {message}", now))
        return out
    if rec.status != PENDING:
        return out
    out.append(_condition(WorkloadCondition.EVICTED, True, last, message, now))
    if stopped is not None:
        if _still_stopped(rec, last):
            out.append(_condition(WorkloadCondition.REQUEUED, False, last, message, now))
        else:
            out.append(_condition(WorkloadCondition.REQUEUED, True, stopped[1], stopped[2], now))
    if preempted:
        out.append(_condition(WorkloadCondition.PREEMPTED, True, why, message, now))
        out.append(_condition(WorkloadCondition.REQUEUED, True, Reason.PREEMPTED, message, now))
    return out


# QuotaReserved=False reasons Kueue writes without the tiers, besides Pending and Inadmissible.
_LEGACY: dict[Pending | None, str] = {Pending.ADMISSION_GATED: "AdmissionGated",
                                      Pending.WAITING_FOR_PODS_READY: Reason.WAITING,
                                      Pending.ON_HOLD: "OnHold"}

# Admitted=False messages, as Kueue writes them.
_ADMITTED_FALSE = {
    AdmittedReason.NO_RESERVATION: "The workload has no reservation",
    AdmittedReason.UNSATISFIED_CHECKS: "The workload has not all checks ready",
    AdmittedReason.PENDING_DELAYED_TOPOLOGY: "There are pending delayed topology requests",
}


def _not_admitted(reason: AdmittedReason, now: float) -> dict[str, Any]:
    return _condition(WorkloadCondition.ADMITTED, False, reason, _ADMITTED_FALSE[reason], now)


def workload_status(rec: WorkloadView, now: float, *, delayed_topology: Mapping[str, str] | None = None,
                    unhealthy_nodes: Sequence[str] = (), tiered: bool = True) -> dict[str, Any]:
    """``delayed_topology`` (podset -> Pending/Ready) and ``unhealthy_nodes`` come from the TAS tracker.

    ``tiered``: Kueue's UnadmittedWorkloadsObservability gate (on by default at Kueue's HEAD):
    the QuotaReserved=False reason is the workload's tier and Admitted=False is written beside
    it; off, the legacy Pending / Inadmissible and no Admitted condition until a reservation."""
    status: dict[str, Any] = {}
    delayed = delayed_topology or {}
    conditions: list[dict[str, Any]] = []
    cq = rec.cluster_queue or ""
    if rec.holds_quota and rec.assignment is not None:
        status["admission"] = {"clusterQueue": cq, "podSetAssignments": [
            {"name": ps.name, "flavors": dict(ps.flavors), "count": ps.count,
             # Kueue lists the resources that got a flavor: not one skipped as undeclared.
             "resourceUsage": {r: str(resource_quantity(r, v)) for r, v in ps.usage.items()
                               if r in ps.flavors},
             **({"topologyAssignment": ps.topology_assignment} if ps.topology_assignment else {}),
             **({"delayedTopologyRequest": delayed[ps.name]} if ps.name in delayed else {})}
            for ps in rec.assignment.podsets]}
        conditions.append(_condition(WorkloadCondition.QUOTA_RESERVED, True, Reason.QUOTA_RESERVED,
                                     f"Quota reserved in ClusterQueue {cq}", rec.reserved_at or now))
        if rec.status == ADMITTED:
            conditions.append(_condition(WorkloadCondition.ADMITTED, True, Reason.ADMITTED,
                                         "The workload is admitted", rec.admitted_at or now))
        elif not tiered:
            pass  # Kueue writes Admitted only when it flips (see legacy_admitted)
        else:
            waits = any(v == DELAYED_PENDING for v in delayed.values())
            conditions.append(_not_admitted(admitted_reason(rec, waits) or AdmittedReason.UNSATISFIED_CHECKS,
                                            now))
    elif rec.status == PENDING and tiered:
        conditions.append(_condition(WorkloadCondition.QUOTA_RESERVED, False, record_tier(rec), rec.reason,
                                     now))
        conditions.append(_not_admitted(AdmittedReason.NO_RESERVATION, now))
    elif rec.status == PENDING:
        kind = rec.pending.kind if rec.pending is not None else None
        inadmissible = rec.pending is not None and rec.pending.queue_problem
        reason = Reason.INADMISSIBLE if inadmissible else _LEGACY.get(kind, Reason.PENDING)
        conditions.append(_condition(WorkloadCondition.QUOTA_RESERVED, False, reason, rec.reason, now))
    if rec.evictions:
        conditions.extend(_eviction_conditions(rec, now))
        counts: dict[tuple[str, str], int] = {}
        for r in rec.evictions:
            key = eviction_cause(r)
            counts[key] = counts.get(key, 0) + 1
        # underlyingCause is required by the CRD (list-map key with reason); empty when none.
        status["schedulingStats"] = {"evictions": [{"reason": r, "underlyingCause": c, "count": n}
                                                   for (r, c), n in counts.items()]}
    if rec.status == FINISHED:
        reason, message = rec.finished_as or (Reason.SUCCEEDED, "Job finished")
        conditions.append(_condition(WorkloadCondition.FINISHED, True, reason, message, now))
    if rec.checks:
        status["admissionChecks"] = [{"name": n, "state": s, "lastTransitionTime": format_time(now),
                                      "message": ""} for n, s in sorted(rec.checks.items())]
    if rec.requeue_count or rec.requeue_at is not None:
        status["requeueState"] = {"count": rec.requeue_count,
                                  **({"requeueAt": format_time(rec.requeue_at)} if rec.requeue_at else {})}
    if unhealthy_nodes and rec.holds_quota:
        status["unhealthyNodes"] = [{"name": n} for n in unhealthy_nodes]
    if rec.status == PENDING and rec.requests_reported:
        status["resourceRequests"] = resource_requests(rec)
    status["conditions"] = conditions
    return status


# Admitted=False as Kueue writes it without UnadmittedWorkloadsObservability, by (reservation
# held, checks all Ready); delayed topology requests come after both.
_LEGACY_NOT_ADMITTED = {
    (False, False): ("NoReservationUnsatisfiedChecks",
                     "The workload has no reservation and not all checks ready"),
    (False, True): ("NoReservation", "The workload has no reservation"),
    (True, False): (Reason.UNSATISFIED_CHECKS, "The workload has not all checks ready"),
}


def legacy_admitted(stored: Mapping[str, Any], rendered: Mapping[str, Any], now: float) -> dict[str, Any]:
    """The ``Admitted`` condition without Kueue's UnadmittedWorkloadsObservability: written
    only when admission flips. A workload never admitted has none; once admitted, the
    condition stays, turned False (with why) when the admission ends, and then kept as it is
    until the workload is admitted again. ``rendered`` is :func:`workload_status` with
    ``tiered=False``, ``stored`` the status it is written over."""
    conditions = list(rendered.get("conditions") or ())
    if any(c.get("type") == WorkloadCondition.ADMITTED for c in conditions):
        return dict(rendered)
    was = next((c for c in stored.get("conditions") or ()
                if c.get("type") == WorkloadCondition.ADMITTED), None)
    if was is None:
        return dict(rendered)
    if was.get("status") != "True":
        conditions.append(dict(was))
        return {**rendered, "conditions": conditions}
    reserved = any(c.get("type") == WorkloadCondition.QUOTA_RESERVED and c.get("status") == "True"
                   for c in conditions)
    ready = all(c.get("state") == "Ready" for c in rendered.get("admissionChecks") or ())
    if reserved and ready:
        reason, message = "PendingDelayedTopologyRequests", "There are pending delayed topology requests"
    else:
        reason, message = _LEGACY_NOT_ADMITTED[(reserved, ready)]
    conditions.append(_condition(WorkloadCondition.ADMITTED, False, reason, message, now))
    return {**rendered, "conditions": conditions}


def resource_requests(rec: WorkloadView) -> list[dict[str, Any]]:
    """Kueue's ``status.resourceRequests``: each pod set's requests times its pod count, after
    the configured transformations and exclusions, as the scheduler saw them."""
    out: list[dict[str, Any]] = []
    for ps in rec.wl.podsets:
        entry: dict[str, Any] = {"name": ps.name}
        if ps.requests:
            entry["resources"] = {r: str(resource_quantity(r, max(0, v) * ps.count))
                                  for r, v in sorted(ps.requests.items())}
        out.append(entry)
    return out


def carry_check_details(stored: Sequence[Mapping[str, Any]], rendered: Sequence[Mapping[str, Any]],
                        now: float) -> list[dict[str, Any]]:
    """The admission check entries to write: the core decides each check's state, its
    controller the rest. An entry whose state is unchanged keeps what its controller wrote
    (message, podSetUpdates, retryCount, requeueAfterSeconds, its transition time); one reset
    to Pending by an eviction says so as Kueue does, counting a Retry in ``retryCount``."""
    before = {str(e.get("name")): e for e in stored}
    out: list[dict[str, Any]] = []
    for entry in rendered:
        old = before.get(str(entry.get("name")))
        if old is None:
            out.append(dict(entry))
        elif old.get("state") == entry.get("state"):
            out.append(dict(old))
        elif entry.get("state") == "Pending":
            previously = f"Reset to Pending after eviction. Previously: {old.get('state')}"
            reset: dict[str, Any] = {"name": entry["name"], "state": "Pending", "message": previously,
                                     "lastTransitionTime": format_time(now)}
            if old.get("requeueAfterSeconds") is not None:
                reset["requeueAfterSeconds"] = old["requeueAfterSeconds"]
            if old.get("state") == "Retry":
                reset["retryCount"] = int(old.get("retryCount") or 0) + 1
            out.append(reset)
        else:  # changed by the core itself: nothing its controller said still applies
            out.append(dict(entry))
    return out


PAST_EXECUTION = max_execution.PAST


def _evicted_for_max_execution(status: Mapping[str, Any]) -> bool:
    return any(c.get("type") == WorkloadCondition.EVICTED and c.get("status") == "True"
               and c.get("reason") == Reason.DEACTIVATED_DUE_TO_MAXIMUM_EXECUTION_TIME_EXCEEDED
               for c in status.get("conditions") or ())


def accumulate_execution(stored: Mapping[str, Any], rendered: Mapping[str, Any],
                         now: float) -> dict[str, Any]:
    """Kueue's running total of time admitted before the current admission, against the
    maximum execution time: kept as stored, plus the seconds since ``Admitted`` turned True
    when this write turns it off (an eviction), so a requeued job runs only what is left.
    The write that deactivates a workload for exceeding its maximum execution time starts
    the total afresh, as Kueue clears it then (the time of this admission is still added
    once Admitted turns off)."""
    out = dict(rendered)
    past = stored.get(PAST_EXECUTION)
    if _evicted_for_max_execution(rendered) and not _evicted_for_max_execution(stored):
        past = None
    admitted = WorkloadCondition.ADMITTED
    was = next((c for c in stored.get("conditions") or () if c.get("type") == admitted), None)
    still = any(c.get("type") == admitted and c.get("status") == "True"
                for c in rendered.get("conditions") or ())
    if was is not None and was.get("status") == "True" and not still:
        since = parse_time(was.get("lastTransitionTime"))
        if since is not None:
            past = int(past or 0) + max(0, int(now - since))
    if isinstance(past, int) and not isinstance(past, bool):
        out[PAST_EXECUTION] = past
    else:
        out.pop(PAST_EXECUTION, None)
    return out
