"""MultiKueue's dispatch decisions (Kueue v0.19.2), one behaviour per test."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.core.config import ConfigError
from pykueue.manager.jobs.multikueue.dispatch import (
    ALL_AT_ONCE,
    GONE_MESSAGE,
    INCREMENTAL,
    INCREMENTAL_ROUND_S,
    LOST_MESSAGE,
    READY,
    RETRY,
    Remote,
    WorkloadView,
    admitted_message,
    decide,
    dispatcher_settings,
    evicted_message,
    nomination_order,
    orphaned,
)

W1, W2 = "worker-1", "worker-2"


def _wl(*conditions: tuple[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "wl", "namespace": "ns"},
            "status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}


RESERVED = _wl((keys.WorkloadCondition.QUOTA_RESERVED, "True"))
ADMITTED = _wl((keys.WorkloadCondition.QUOTA_RESERVED, "True"), (keys.WorkloadCondition.ADMITTED, "True"))
PENDING_COPY = _wl((keys.WorkloadCondition.QUOTA_RESERVED, "False"))
JOB = {"metadata": {"name": "job"}}


def _view(**changes: Any) -> WorkloadView:
    base: dict[str, Any] = {"reserved": True, "finished": False, "check_state": "Pending",
                            "other_checks_ready": True, "clusters": (W1, W2), "remotes": {},
                            "now": 1000.0, "worker_lost_timeout": 10.0}
    base.update(changes)
    return WorkloadView(**base)


def test_a_reserved_workload_is_copied_to_every_connected_worker() -> None:
    assert decide(_view()).create_workload_in == (W1, W2)


def test_nothing_is_dispatched_before_the_other_checks_are_ready() -> None:
    assert decide(_view(other_checks_ready=False)).create_workload_in == ()


def test_the_first_worker_to_admit_wins_and_the_other_copies_go() -> None:
    decision = decide(_view(remotes={W1: Remote(RESERVED), W2: Remote(ADMITTED)}))
    assert decision.winner == W2
    assert decision.delete_in == (W1,)
    assert decision.create_job_in == W2
    assert decision.check == (READY, admitted_message(W2))
    assert decision.create_workload_in == ()


def test_the_remembered_winner_keeps_the_job_when_another_copy_reserves_too() -> None:
    # A worker back from the dead still holds a reserved copy: it is the one that goes.
    decision = decide(_view(check_state=READY, winner=W2,
                            remotes={W1: Remote(ADMITTED, JOB), W2: Remote(ADMITTED, JOB)}))
    assert decision.winner == W2
    assert decision.delete_in == (W1,)
    assert decision.check is None  # already Ready
    assert decision.mirror_from == W2


def test_a_running_job_has_its_status_mirrored() -> None:
    decision = decide(_view(check_state=READY, winner=W1, remotes={W1: Remote(ADMITTED, JOB)}))
    assert decision.mirror_from == W1 and decision.create_job_in is None and decision.delete_in == ()


def test_a_lost_winner_is_waited_for_then_the_check_retries() -> None:
    waiting = decide(_view(check_state=READY, winner=W1, clusters=(W2,), remotes={}))
    assert waiting.check is None and waiting.winner == W1
    assert waiting.missing_since == 1000.0 and waiting.wait_s == 10.0
    still = decide(_view(check_state=READY, winner=W1, clusters=(W2,), missing_since=1000.0, now=1009.0))
    assert still.check is None and still.wait_s == 1.0
    given_up = decide(_view(check_state=READY, winner=W1, clusters=(W2,), missing_since=1000.0, now=1010.0,
                            remotes={W2: Remote(PENDING_COPY)}))
    assert given_up.check == (RETRY, LOST_MESSAGE)
    assert given_up.delete_in == (W2,)
    assert given_up.winner is None


def test_a_winner_that_answers_again_in_time_resets_the_clock() -> None:
    decision = decide(_view(check_state=READY, winner=W1, missing_since=1000.0, now=1005.0,
                            remotes={W1: Remote(ADMITTED, JOB)}))
    assert decision.missing_since is None and decision.check is None


def test_without_quota_or_after_retry_every_copy_goes() -> None:
    remotes = {W1: Remote(RESERVED, JOB), W2: Remote(PENDING_COPY)}
    assert decide(_view(reserved=False, remotes=remotes)).delete_in == (W1, W2)
    assert decide(_view(check_state=RETRY, remotes=remotes)).delete_in == (W1, W2)
    assert decide(_view(finished=True, remotes=remotes)).delete_in == (W1, W2)


def test_a_finished_copy_finishes_the_manager_workload_with_its_reason() -> None:
    done = _wl((keys.WorkloadCondition.QUOTA_RESERVED, "True"), (keys.WorkloadCondition.FINISHED, "True"))
    done["status"]["conditions"][1].update(reason="Succeeded", message="Job finished successfully")
    decision = decide(_view(check_state=READY, winner=W1, remotes={W1: Remote(done, JOB)}))
    assert decision.finish == ("Succeeded", "Job finished successfully")
    assert decision.mirror_from == W1


def test_a_stray_job_without_its_workload_copy_is_removed_before_dispatching_again() -> None:
    decision = decide(_view(remotes={W1: Remote(None, JOB)}))
    assert decision.delete_in == (W1,)
    assert decision.create_workload_in == (W1, W2)


def test_a_copy_is_orphaned_once_its_manager_workload_is_gone() -> None:
    assert orphaned(RESERVED, {"ns/other"})
    assert not orphaned(RESERVED, {"ns/wl"})


def test_a_copy_that_only_reserved_quota_is_no_winner_yet() -> None:
    # MultiKueueWaitForWorkloadAdmitted (GA): the worker's own admission checks come first.
    decision = decide(_view(remotes={W1: Remote(RESERVED), W2: Remote(PENDING_COPY)}))
    assert decision.winner is None and decision.create_job_in is None and decision.check is None
    assert decision.delete_in == () and decision.create_workload_in == ()


W3, W4, W5 = "worker-3", "worker-4", "worker-5"
ALL = (W1, W2, W3, W4, W5)


def test_the_incremental_dispatcher_nominates_in_rounds_in_the_config_order() -> None:
    first = decide(_view(dispatcher=INCREMENTAL, clusters=ALL, configured=ALL, step=2))
    assert first.nominated == (W1, W2) and first.create_workload_in == (W1, W2)
    assert first.round_started == 1000.0 and first.wait_s == INCREMENTAL_ROUND_S
    during = decide(_view(dispatcher=INCREMENTAL, clusters=ALL, configured=ALL, step=2, now=1200.0,
                          nominated=first.nominated, round_started=1000.0,
                          remotes={W1: Remote(PENDING_COPY), W2: Remote(PENDING_COPY)}))
    assert during.nominated == (W1, W2) and during.create_workload_in == () and during.wait_s == 100.0
    second = decide(_view(dispatcher=INCREMENTAL, clusters=ALL, configured=ALL, step=2, now=1301.0,
                          nominated=first.nominated, round_started=1000.0,
                          remotes={W1: Remote(PENDING_COPY), W2: Remote(PENDING_COPY)}))
    assert second.nominated == (W1, W2, W3, W4) and second.create_workload_in == (W3, W4)
    assert second.round_started == 1301.0 and second.delete_in == ()
    last = decide(_view(dispatcher=INCREMENTAL, clusters=ALL, configured=ALL, step=2, now=1700.0,
                        nominated=second.nominated, round_started=1301.0))
    assert last.nominated == ALL and last.create_workload_in == ALL
    done = decide(_view(dispatcher=INCREMENTAL, clusters=ALL, configured=ALL, step=2, now=2100.0,
                        nominated=ALL, round_started=1700.0))
    assert done.nominated == ALL and done.wait_s is None  # no more workers to nominate


def test_incremental_nominates_unconnected_workers_but_copies_only_to_connected_ones() -> None:
    decision = decide(_view(dispatcher=INCREMENTAL, clusters=(W2, W3), configured=ALL))
    assert decision.nominated == (W1, W2, W3) and decision.create_workload_in == (W2, W3)


def test_a_nomination_ends_with_the_reservation() -> None:
    decision = decide(_view(dispatcher=INCREMENTAL, reserved=False, nominated=(W1,), round_started=1.0))
    assert decision.nominated == () and decision.round_started is None


def test_an_external_dispatcher_s_nomination_is_followed() -> None:
    decision = decide(_view(dispatcher="example.com/mine", nominated=(W2,),
                            remotes={W1: Remote(PENDING_COPY)}))
    assert decision.create_workload_in == (W2,) and decision.delete_in == (W1,)
    assert decide(_view(dispatcher="example.com/mine")).create_workload_in == ()


@pytest.mark.parametrize(("section", "want"), [
    ({}, (ALL_AT_ONCE, 3)),
    ({"dispatcherName": INCREMENTAL}, (INCREMENTAL, 3)),
    ({"dispatcherName": INCREMENTAL, "incrementalDispatcherConfig": {"stepSize": 1}}, (INCREMENTAL, 1)),
])
def test_dispatcher_settings(section: dict[str, Any], want: tuple[str, int]) -> None:
    assert dispatcher_settings({"multiKueue": section}) == want


def test_dispatcher_settings_follow_the_gate_and_refuse_what_kueue_refuses() -> None:
    section = {"dispatcherName": INCREMENTAL, "incrementalDispatcherConfig": {"stepSize": 5}}
    assert dispatcher_settings({"multiKueue": section,
                                "featureGates": {"MultiKueueIncrementalDispatcherConfig": False}})[1] == 3
    with pytest.raises(ConfigError, match="only valid when dispatcherName is set to the incremental"):
        dispatcher_settings({"multiKueue": {"incrementalDispatcherConfig": {"stepSize": 2}}})
    with pytest.raises(ConfigError, match="stepSize: Invalid value: 0: must be greater than or equal to 1"):
        dispatcher_settings({"multiKueue": {"dispatcherName": INCREMENTAL,
                                            "incrementalDispatcherConfig": {"stepSize": 0}}})


def test_a_winner_that_answers_without_its_admitted_copy_retries_at_once() -> None:
    evicted = _wl((keys.WorkloadCondition.QUOTA_RESERVED, "False"), (keys.WorkloadCondition.EVICTED, "True"))
    decision = decide(_view(check_state=READY, winner=W1, remotes={W1: Remote(evicted, JOB)}))
    assert decision.check == (RETRY, evicted_message(W1))
    assert decision.delete_in == (W1,) and decision.winner is None
    gone = decide(_view(check_state=READY, winner=W1, remotes={}))
    assert gone.check == (RETRY, GONE_MESSAGE)


def test_the_incremental_order_is_the_config_s_unless_the_gate_is_off() -> None:
    assert nomination_order((W3, W1, W2), {}) == (W3, W1, W2)
    gates = {"featureGates": {"MultiKueueIncrementalDispatcherRespectConfigOrder": False}}
    assert nomination_order((W3, W1, W2), gates) == (W1, W2, W3)
