"""The Events Kueue's job reconciler records on the jobs it runs, as values.

Kueue's jobframework reconciler, after each action on a job: ``CreatedWorkload`` once it
created the job's Workload, ``Started`` once it unsuspended the job (on each pod for pods),
``Stopped`` once it suspended it again (why: the Workload's eviction message, or that it is
not admitted, or missing), ``FinishedWorkload`` once it declared the Workload finished,
``DeletedWorkload`` for a Workload that no longer matches the job, ``UpdatedWorkload`` when the
job's admission gates were copied to its Workload, ``UpdatedAdmissionCheck``
with what the pending admission checks of a suspended job's Workload say, and ``Deleted``
once it deleted a job whose Workload it had deactivated (``afterDeactivatedByKueue``). All
Normal; the reporting controller is ``<integration name>-kueue-controller``
(``batch/job-kueue-controller``).

The reconciler decides the action; these functions only word the event for the objects the
action wrote, so a kind's events follow from its lifecycle without the reconciler asking
which kind it holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from pykueue.api.events import EventRecord, ObjectReference
from pykueue.api.wire import meta
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.lifecycle import Action

NOT_ADMITTED: Final = "Not admitted by cluster queue"
MISSING_WORKLOAD: Final = "Missing Workload; unable to restore pod templates"


def reporter(integration: Integration) -> str:
    """Kueue's event recorder name for an integration's reconciler."""
    return f"{integration.name}-kueue-controller"


def workload_key(workload: Mapping[str, Any]) -> str:
    m = meta(workload)
    return f"{m.get('namespace') or ''}/{m.get('name') or ''}"


def created_workload(integration: Integration, subject: Mapping[str, Any],
                     workload: Mapping[str, Any]) -> EventRecord:
    return EventRecord(_ref(subject), "CreatedWorkload", f"Created Workload: {workload_key(workload)}",
                       reporter(integration))


def deleted_workload(integration: Integration, subject: Mapping[str, Any],
                     workload: Mapping[str, Any]) -> EventRecord:
    return EventRecord(_ref(subject), "DeletedWorkload",
                       f"Deleted not matching Workload: {workload_key(workload)}", reporter(integration))


def updated_admission_gates(integration: Integration, subject: Mapping[str, Any], value: str) -> EventRecord:
    """The job's admission gates were copied to its Workload (Kueue's UpdatedWorkload)."""
    return EventRecord(_ref(subject), "UpdatedWorkload", f'Updated workload AdmissionGatedBy to "{value}"',
                       reporter(integration))


def finished_workload(integration: Integration, subject: Mapping[str, Any], workload_key: str) -> EventRecord:
    return EventRecord(_ref(subject), "FinishedWorkload", f"Workload '{workload_key}' is declared finished",
                       reporter(integration))


def deleted_after_deactivation(integration: Integration, subject: Mapping[str, Any]) -> EventRecord:
    """The job of a Workload Kueue deactivated was deleted: objectRetentionPolicies'
    afterDeactivatedByKueue ran out."""
    return EventRecord(_ref(subject), "Deleted", "Deleted job: deactivation retention period expired",
                       reporter(integration))


def _written(actions: Iterable[Action]) -> list[Mapping[str, Any]]:
    """The objects the actions wrote, each once (a TrainJob's start writes it twice)."""
    seen: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    for action in actions:
        m = meta(action.obj)
        seen.setdefault((str(action.obj.get("kind") or ""), str(m.get("namespace") or ""),
                         str(m.get("name") or "")), action.obj)
    return list(seen.values())


def started(integration: Integration, actions: Iterable[Action],
            workload: Mapping[str, Any]) -> list[EventRecord]:
    """One ``Started`` per object the start wrote (the job; each ungated pod of a group)."""
    cq = str(((workload.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")
    return [EventRecord(_ref(obj), "Started", f"Admitted by clusterQueue {cq}", reporter(integration))
            for obj in _written(actions)]


def stopped(integration: Integration, actions: Iterable[Action], why: str) -> list[EventRecord]:
    """One ``Stopped`` per object the stop wrote (the suspended job; each deleted pod)."""
    return [EventRecord(_ref(obj), "Stopped", why, reporter(integration)) for obj in _written(actions)]


def admission_check_update(integration: Integration, subject: Mapping[str, Any],
                           workload: Mapping[str, Any]) -> EventRecord | None:
    """What the pending admission checks of a suspended job's reserved Workload say
    (``name: message; ...``), None when none says anything. Kueue records it on each
    reconcile of such a job; repeats fold into the Event's series."""
    checks = (workload.get("status") or {}).get("admissionChecks") or ()
    notes = [f"{c.get('name')}: {c.get('message')}" for c in checks
             if isinstance(c, Mapping) and c.get("state") == "Pending" and c.get("message")]
    if not notes:
        return None
    return EventRecord(_ref(subject), "UpdatedAdmissionCheck", "; ".join(notes), reporter(integration))


def eviction_message(workload: Mapping[str, Any], decided: str = "") -> str:
    """Why an evicted job stops: the eviction's message, as the core decided it (``decided``)
    or, failing that, as the Workload's Evicted condition says (Kueue reads the condition)."""
    if decided:
        return decided
    for cond in (workload.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == "Evicted" and cond.get("status") == "True":
            return str(cond.get("message") or "")
    return ""


def _ref(obj: Mapping[str, Any]) -> ObjectReference:
    # The version the action wrote over is outdated once it is written: not pinned.
    return ObjectReference.of(obj, with_version=False)
