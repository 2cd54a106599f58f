"""The README's first command ends with ``pykueue dev sample``: it must tell a true story.

Three 2-CPU Jobs against a 4-CPU quota: the sample's timeline must show two Jobs admitted
while the third waits suspended, the third starting only after one of the first two
completed, and all three completing.
"""

from __future__ import annotations

import re

import pytest

from .conftest import DevCluster

pytestmark = pytest.mark.e2e

LINE = re.compile(r"^\s*(?P<t>\d+\.\d)s\s+(?P<job>sample-job-\w): (?P<phase>.+)$")


def test_sample_shows_admission_queueing_and_completion(dev_cluster: DevCluster) -> None:
    result = dev_cluster.dev("sample", "--timeout", "150", timeout_s=200)
    assert result.returncode == 0, f"dev sample failed: {result.stdout}\n{result.stderr}"
    assert "kubectl get clusterqueue sample-cluster-queue" in result.stdout

    events = [(m["job"], m["phase"]) for m in map(LINE.match, result.stdout.splitlines()) if m]
    assert events, f"no timeline printed: {result.stdout}"
    started: list[str] = []
    completed: list[str] = []
    for job, phase in events:
        if phase in ("admitted", "running") and job not in started:
            # Quota is 4 CPUs: a third Job may start only after one completed.
            assert len(started) - len(completed) < 2, f"three Jobs ran at once: {events}"
            started.append(job)
        if phase == "completed":
            completed.append(job)
    assert sorted(completed) == ["sample-job-a", "sample-job-b", "sample-job-c"]
    waiting = started[2]
    assert (waiting, "queued (suspended)") in events
