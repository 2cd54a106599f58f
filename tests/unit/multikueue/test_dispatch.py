"""MultiKueue's dispatch decisions (AllAtOnce), one behaviour per test."""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.manager.jobs.multikueue.dispatch import (
    LOST_MESSAGE,
    READY,
    RETRY,
    Remote,
    WorkloadView,
    decide,
    orphaned,
    reserved_message,
)

W1, W2 = "worker-1", "worker-2"


def _wl(*conditions: tuple[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "wl", "namespace": "ns"},
            "status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}


RESERVED = _wl((keys.WorkloadCondition.QUOTA_RESERVED, "True"))
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


def test_the_first_worker_to_reserve_wins_and_the_other_copies_go() -> None:
    decision = decide(_view(remotes={W1: Remote(PENDING_COPY), W2: Remote(RESERVED)}))
    assert decision.winner == W2
    assert decision.delete_in == (W1,)
    assert decision.create_job_in == W2
    assert decision.check == (READY, reserved_message(W2))
    assert decision.create_workload_in == ()


def test_the_remembered_winner_keeps_the_job_when_another_copy_reserves_too() -> None:
    # A worker back from the dead still holds a reserved copy: it is the one that goes.
    decision = decide(_view(check_state=READY, winner=W2,
                            remotes={W1: Remote(RESERVED, JOB), W2: Remote(RESERVED, JOB)}))
    assert decision.winner == W2
    assert decision.delete_in == (W1,)
    assert decision.check is None  # already Ready
    assert decision.mirror_from == W2


def test_a_running_job_has_its_status_mirrored() -> None:
    decision = decide(_view(check_state=READY, winner=W1, remotes={W1: Remote(RESERVED, JOB)}))
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
                            remotes={W1: Remote(RESERVED, JOB)}))
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
