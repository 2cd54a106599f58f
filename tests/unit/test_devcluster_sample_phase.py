"""The phase `pykueue dev sample` prints for a Job, from the Job object alone."""

from __future__ import annotations

from typing import Any

from pykueue.devcluster.sample import phase


def _job(suspend: bool, **status: Any) -> dict[str, Any]:
    return {"spec": {"suspend": suspend}, "status": status}


def test_a_job_reads_queued_then_admitted_running_finishing_completed() -> None:
    assert phase(None) == "missing"
    assert phase(_job(True)) == "queued (suspended)"
    assert phase(_job(False)) == "admitted"
    assert phase(_job(False, active=1)) == "running"
    # Its pod succeeded, the Complete condition is not there yet: not "admitted" again.
    assert phase(_job(False, succeeded=1)) == "finishing"
    done = _job(False, succeeded=1, conditions=[{"type": "Complete", "status": "True"}])
    assert phase(done) == "completed"
    failed = _job(False, failed=1, conditions=[{"type": "Failed", "status": "True"}])
    assert phase(failed) == "failed"
