"""Which Kubernetes Events a Workload status write stands for, as Kueue records them.

Kueue records its Workload events right after the write that makes them true: the
scheduler after reserving quota (``QuotaReserved``, and ``Admitted`` when no check waits),
after evicting a preemption target (``EvictedDueToPreempted``, ``Preempted`` and, on the
preemptor, ``PreemptedWorkload``) and after writing why a workload stays pending
(``Pending``, Warning); the workload controller after admitting once the checks are Ready
and after its evictions (``EvictedDueTo<Reason>``). Here the same events are read off the
transition one status write made (the stored object before, the API's answer after), so
nothing is recorded for a decision the core took back before it was written (a withdrawn
reservation) and nothing twice for a write that changed nothing.

Pure: the caller passes the clock and the core's record of the workload (the preemption
and eviction details a status does not hold); the runtime hands the values to its
recorder. Texts, reasons, types and reporting controllers are Kueue v0.19's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.events import WARNING, EventRecord, ObjectReference

from . import max_execution
from .objects import parse_time
from .reasons import SCHEDULER, SCHEDULER_VERDICTS, WORKLOAD_CONTROLLER
from .workload_state import WorkloadView

WORKLOAD_API_VERSION = keys.API_VERSION


def workload_events(before: Mapping[str, Any], after: Mapping[str, Any], rec: WorkloadView | None,
                    now: float, *, tiered: bool = True) -> list[EventRecord]:
    """The events of one status write of a Workload: ``before`` is the stored object the
    write went over, ``after`` the object the API returned. ``tiered``: Kueue's
    UnadmittedWorkloadsObservability (the Pending event's reason is the tier, else Pending)."""
    regarding = ObjectReference.of(after)
    old, new = _conditions(before), _conditions(after)
    out: list[EventRecord] = []
    out += _evicted(regarding, old, new, rec)
    reserved_before = _true(old, keys.WorkloadCondition.QUOTA_RESERVED)
    cq = str(((after.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")
    if _true(new, keys.WorkloadCondition.QUOTA_RESERVED) and not reserved_before:
        queued = _queued_since(before, old, new)
        out.append(EventRecord(regarding, "QuotaReserved",
                               f"Quota reserved in ClusterQueue {cq}, wait time since queued was "
                               f"{_seconds(now, queued)}s", SCHEDULER))
    if _true(new, keys.WorkloadCondition.ADMITTED) and not _true(old, keys.WorkloadCondition.ADMITTED):
        out += _admitted(regarding, before, old, cq, now, reserved_before)
    out += _pending(regarding, old, new, rec, tiered)
    finished = new.get(keys.WorkloadCondition.FINISHED)
    if finished is not None and _true(new, keys.WorkloadCondition.FINISHED) \
            and not _true(old, keys.WorkloadCondition.FINISHED) \
            and finished.get("reason") == keys.Reason.WORKLOAD_SLICE_REPLACED:
        out.append(EventRecord(regarding, keys.Reason.WORKLOAD_SLICE_REPLACED,
                               str(finished.get("message") or ""), SCHEDULER, action="Replaced"))
    return out


def evicted_event_reason(condition_reason: str) -> str:
    """Kueue's ``EvictedDueTo<reason>``: ``EvictedDueToDeactivated`` for a deactivation by the
    user, the cause kept for one by Kueue (``EvictedDueToDeactivatedDueToAdmissionCheck``)."""
    return f"EvictedDueTo{condition_reason}"


def retention_deleted(workload: Mapping[str, Any]) -> EventRecord:
    """The workload controller deleted a finished Workload whose retention ran out."""
    return EventRecord(ObjectReference.of(workload, with_version=False), "Deleted",
                       "Deleted finished workload due to elapsed retention", WORKLOAD_CONTROLLER)


# -- the parts -------------------------------------------------------------------------------


def _evicted(regarding: ObjectReference, old: Mapping[str, Mapping[str, Any]],
             new: Mapping[str, Mapping[str, Any]], rec: WorkloadView | None) -> list[EventRecord]:
    cond = new.get(keys.WorkloadCondition.EVICTED)
    if cond is None or cond.get("status") != "True" or _true(old, keys.WorkloadCondition.EVICTED):
        return []
    reason = str(cond.get("reason") or "")
    message = str(cond.get("message") or "")
    note = rec.eviction_note if rec is not None else None
    reporter = note.reporter if note is not None else (
        SCHEDULER if reason == keys.Reason.PREEMPTED else WORKLOAD_CONTROLLER)
    out: list[EventRecord] = []
    detail = note.deactivation_detail if note is not None else ""
    if reason == keys.Reason.DEACTIVATED_DUE_TO_ADMISSION_CHECK and detail:
        # The workload controller tells first why it deactivates, then evicts.
        out.append(EventRecord(regarding, "AdmissionCheckRejected", f"Deactivated due to {detail}",
                               WORKLOAD_CONTROLLER, WARNING))
    limit = max_execution.limit_of(rec.wl.source.get("spec") or {}) if rec is not None else None
    if reason == keys.Reason.DEACTIVATED_DUE_TO_MAXIMUM_EXECUTION_TIME_EXCEEDED and limit is not None:
        # The workload controller tells first that the time is up, then deactivates.
        out.append(EventRecord(regarding, max_execution.CAUSE,
                               f"The maximum execution time ({limit}s) exceeded", WORKLOAD_CONTROLLER,
                               WARNING))
    event_reason = evicted_event_reason(reason)
    out.append(EventRecord(regarding, event_reason, message, reporter))
    preemption = rec.preemption if rec is not None else None
    if reason == keys.Reason.PREEMPTED and preemption is not None:
        out.append(EventRecord(regarding, "Preempted", message + preemption.priorities(), SCHEDULER))
        if preemption.preemptor:
            namespace, _, name = preemption.preemptor.partition("/")
            preemptor = ObjectReference(WORKLOAD_API_VERSION, "Workload", name, namespace,
                                        preemption.preemptor_uid)
            cq = str(rec.cluster_queue or "") if rec is not None else ""
            out.append(EventRecord(preemptor, "PreemptedWorkload",
                                   f"Preempted workload {regarding.namespace}/{regarding.name} "
                                   f"(UID: {regarding.uid}) in ClusterQueue {cq}{preemption.priorities()}",
                                   SCHEDULER))
    return out


def _admitted(regarding: ObjectReference, before: Mapping[str, Any], old: Mapping[str, Mapping[str, Any]],
              cq: str, now: float, reserved_before: bool) -> list[EventRecord]:
    status = before.get("status") or {}
    if reserved_before and status.get("unhealthyNodes"):
        return []  # a failed node replaced: the scheduler admits again without an event
    if not reserved_before or _topology_was_delayed(status):
        # Admitted by the scheduler in the write that reserved (or placed) it.
        return [EventRecord(regarding, "Admitted",
                            f"Admitted by ClusterQueue {cq}, wait time since reservation was 0s", SCHEDULER)]
    reserved = parse_time((old.get(keys.WorkloadCondition.QUOTA_RESERVED) or {}).get("lastTransitionTime"))
    return [EventRecord(regarding, "Admitted",
                        f"Admitted by ClusterQueue {cq}, wait time since reservation was "
                        f"{_seconds(now, reserved)}s", WORKLOAD_CONTROLLER)]


def _pending(regarding: ObjectReference, old: Mapping[str, Mapping[str, Any]],
             new: Mapping[str, Mapping[str, Any]], rec: WorkloadView | None,
             tiered: bool) -> list[EventRecord]:
    """A scheduling verdict written on a workload left pending: Kueue's scheduler records it
    as a Warning whose reason is the QuotaReserved condition's (the tier), Pending without
    the tiers. Only a verdict that changes what the condition says is recorded: the same
    verdict again is no new write here (Kueue records it each cycle, and client-go folds
    those into one Event per reason)."""
    cond = new.get(keys.WorkloadCondition.QUOTA_RESERVED)
    if cond is None or cond.get("status") != "False" or rec is None or rec.pending is None \
            or rec.pending.kind not in SCHEDULER_VERDICTS:
        return []
    before = old.get(keys.WorkloadCondition.QUOTA_RESERVED) or {}
    said = (cond.get("reason"), cond.get("message"))
    if before.get("status") == "False" and (before.get("reason"), before.get("message")) == said:
        return []
    reason = str(cond.get("reason") or keys.Reason.PENDING) if tiered else keys.Reason.PENDING
    return [EventRecord(regarding, reason, str(cond.get("message") or ""), SCHEDULER, WARNING)]


def _conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(c.get("type")): c for c in (obj.get("status") or {}).get("conditions") or ()
            if isinstance(c, Mapping)}


def _true(conds: Mapping[str, Mapping[str, Any]], kind: str) -> bool:
    return (conds.get(kind) or {}).get("status") == "True"


def _queued_since(before: Mapping[str, Any], old: Mapping[str, Mapping[str, Any]],
                  new: Mapping[str, Mapping[str, Any]]) -> float | None:
    """Kueue's QueuedWaitTime start: the Requeued condition's transition, else creation."""
    requeued = old.get(keys.WorkloadCondition.REQUEUED) or new.get(keys.WorkloadCondition.REQUEUED)
    if requeued is not None and requeued.get("lastTransitionTime"):
        return parse_time(requeued.get("lastTransitionTime"))
    return parse_time((before.get("metadata") or {}).get("creationTimestamp"))


def _topology_was_delayed(status: Mapping[str, Any]) -> bool:
    """The reservation waited for a delayed topology assignment, which the scheduler's
    second pass has just made (and admits in the same write)."""
    return any(psa.get("delayedTopologyRequest") == "Pending"
               for psa in (status.get("admission") or {}).get("podSetAssignments") or ())


def _seconds(now: float, since: float | None) -> str:
    """Go's %.0f of the seconds since ``since`` (0 when unknown or in the future)."""
    return f"{max(0.0, now - since) if since is not None else 0.0:.0f}"
