"""Time a Workload ran admitted before an eviction counts against its maximum execution time."""

from __future__ import annotations

from pykueue.manager.core.objects import format_time
from pykueue.manager.core.status import PAST_EXECUTION, accumulate_execution

NOW = 1_800_000_000.0


def test_time_admitted_before_an_eviction_adds_up_and_is_kept_otherwise() -> None:
    admitted = {"conditions": [{"type": "Admitted", "status": "True",
                                "lastTransitionTime": format_time(NOW - 30)}]}
    evicted = {"conditions": [{"type": "Admitted", "status": "False",
                               "lastTransitionTime": format_time(NOW)}]}
    assert accumulate_execution(admitted, evicted, NOW)[PAST_EXECUTION] == 30
    assert accumulate_execution({**admitted, PAST_EXECUTION: 12}, evicted, NOW)[PAST_EXECUTION] == 42
    assert accumulate_execution({**evicted, PAST_EXECUTION: 42}, admitted, NOW)[PAST_EXECUTION] == 42
    assert PAST_EXECUTION not in accumulate_execution(evicted, admitted, NOW)


def test_the_deactivation_for_time_starts_the_total_afresh() -> None:
    admitted = {"conditions": [{"type": "Admitted", "status": "True",
                                "lastTransitionTime": format_time(NOW - 30)}], PAST_EXECUTION: 70}
    evicted = {"type": "Evicted", "status": "True",
               "reason": "DeactivatedDueToMaximumExecutionTimeExceeded", "message": "..."}
    # Evicted while its job stops: the total is cleared, as Kueue does when the time is up.
    stopping = {"conditions": [*admitted["conditions"], evicted]}
    assert PAST_EXECUTION not in accumulate_execution(admitted, stopping, NOW)
    # Released later: this admission's run is counted from nothing.
    released = {"conditions": [{"type": "Admitted", "status": "False",
                                "lastTransitionTime": format_time(NOW + 5)}, evicted]}
    assert accumulate_execution(stopping, released, NOW + 5)[PAST_EXECUTION] == 35
    # Released in the same write: the same.
    assert accumulate_execution(admitted, released, NOW)[PAST_EXECUTION] == 30
    # Any other eviction keeps adding up.
    preempted = {"conditions": [
        {"type": "Admitted", "status": "False", "lastTransitionTime": format_time(NOW)},
        {**evicted, "reason": "Preempted"}]}
    assert accumulate_execution(admitted, preempted, NOW)[PAST_EXECUTION] == 100
