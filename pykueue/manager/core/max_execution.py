"""Kueue's maximum execution time as a rule of time alone (pure).

A Workload with ``spec.maximumExecutionTimeSeconds`` may run admitted that long in all:
Kueue's workload controller counts the time since the ``Admitted`` condition last turned
True, adds what earlier admissions ran (``status.accumulatedPastExecutionTimeSeconds``) and,
once nothing is left, deactivates the workload (``spec.active: false``, then an eviction
with reason ``DeactivatedDueToMaximumExecutionTimeExceeded``); until then it looks again
when the rest has run out. The same numbers always give the same answer: the caller
passes the clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.keys import WorkloadCondition

LIMIT = "maximumExecutionTimeSeconds"
PAST = "accumulatedPastExecutionTimeSeconds"
# Kueue's words: the DeactivationTarget reason (the eviction's underlying cause and the
# Warning event's reason) and the detail of the eviction message.
CAUSE = "MaximumExecutionTimeExceeded"
DETAIL = "exceeding the maximum execution time"


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def limit_of(spec: Mapping[str, Any]) -> int | None:
    """``spec.maximumExecutionTimeSeconds`` as a number of seconds, None without one."""
    return _whole(spec.get(LIMIT))


def past_of(status: Mapping[str, Any]) -> int:
    """Seconds earlier admissions ran (0 when Kueue has counted none)."""
    return _whole(status.get(PAST)) or 0


def remaining_budget(spec: Mapping[str, Any], status: Mapping[str, Any]) -> float | None:
    """How long the workload may still run once admitted: the limit less what it ran
    before; None without a limit."""
    limit = limit_of(spec)
    return None if limit is None else float(limit - past_of(status))


def due_at(budget_s: float | None, admitted_since: float | None) -> float | None:
    """When an admitted workload's time is up: ``budget_s`` (see :func:`remaining_budget`)
    after the Admitted transition; None without a limit or when it is not admitted."""
    if budget_s is None or admitted_since is None:
        return None
    return admitted_since + budget_s


def exceeded(due: float | None, now: float) -> bool:
    """Kueue deactivates once no time is left (the rest is zero or less), never before."""
    return due is not None and now >= due


def admitted_since(status: Mapping[str, Any]) -> float | None:
    """The time the ``Admitted`` condition turned True; None unless it is True."""
    from .objects import parse_time  # objects builds its workloads with this module

    for cond in status.get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == WorkloadCondition.ADMITTED:
            if cond.get("status") != "True":
                return None
            return parse_time(cond.get("lastTransitionTime"))
    return None


def workload_due(workload: Mapping[str, Any]) -> float | None:
    """When the stored Workload's time is up, from the object alone (None when no limit
    applies now: no limit, or not admitted)."""
    spec = workload.get("spec") or {}
    status = workload.get("status") or {}
    return due_at(remaining_budget(spec, status), admitted_since(status))
