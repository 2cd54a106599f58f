"""``kueue_workload_creation_latency_seconds``: the job reconciler observes, for each Workload it
creates, the time from its job's creation to the Workload's, both as the API server stamped
them, per job kind; as in Kueue, only for a job at its first generation and under the
MetricForWorkloadCreationLatency gate (on by default)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from pykueue.kube.client import KubeClient
from pykueue.manager.jobs.lifecycle import JobLifecycle
from pykueue.manager.runtime.controllers.manager import QueueManager
from pykueue.manager.runtime.metrics import KueueMetrics

from .test_events_recorded import _job

FAMILY = "kueue_workload_creation_latency_seconds"


class _Api:
    """Creates what it is given, stamped as the API server would (two seconds after the job)."""

    def __init__(self, stamp: str) -> None:
        self.stamp = stamp
        self.created: list[str] = []

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.created.append(body["metadata"]["name"])
        return {**body, "metadata": {**body["metadata"], "creationTimestamp": self.stamp}}


def _created(generation: int, config: dict[str, Any] | None = None) -> KueueMetrics:
    metrics = KueueMetrics()
    manager = QueueManager(KubeClient(object()), job_config=config, metrics=metrics)
    api = _Api("2026-01-01T00:00:12Z")
    manager.jobs.client = cast(KubeClient, api)
    lc = manager.jobs.registry.get("Job")
    assert isinstance(lc, JobLifecycle)
    job = _job(suspend=True)
    job["metadata"].update(creationTimestamp="2026-01-01T00:00:10Z", generation=generation)
    [wl] = lc.workloads(job)
    asyncio.run(manager.jobs._create_workload(lc, job, wl))
    assert api.created == [wl["metadata"]["name"]]
    return metrics


def _observed(metrics: KueueMetrics) -> tuple[float | None, float | None]:
    labels = {"job_kind": "Job", "replica_role": "standalone"}
    get = metrics.registry.get_sample_value
    return get(f"{FAMILY}_count", labels), get(f"{FAMILY}_sum", labels)


def test_a_new_jobs_workload_is_observed_by_kind() -> None:
    assert _observed(_created(generation=1)) == (1.0, 2.0)


def test_a_job_changed_since_its_creation_is_not_observed() -> None:
    assert _observed(_created(generation=2)) == (None, None)


def test_nothing_is_observed_with_the_gate_off() -> None:
    config = {"featureGates": {"MetricForWorkloadCreationLatency": False}}
    assert _observed(_created(generation=1, config=config)) == (None, None)
