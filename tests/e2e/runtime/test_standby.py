"""A replica that does not lead collects job events but reconciles no job (Kueue runs its
controllers on the leader only); the dev cluster's own pykueue is the leader here."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from api import keys
from manager.runtime.client import connect
from manager.runtime.controllers.manager import QueueManager
from manager.runtime.resources import JOBS, WORKLOADS
from tests.e2e.conftest import DevCluster

pytestmark = pytest.mark.e2e

DEADLINE_S = 60.0


def _job(name: str, namespace: str) -> dict[str, object]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}


async def test_a_standby_queues_job_events_without_reconciling_them(dev_cluster: DevCluster,
                                                                   namespace: str) -> None:
    async with await connect(dev_cluster.kubeconfig) as kube:
        standby = QueueManager(kube)
        await standby.start_informers()
        try:
            await standby.wait_synced(DEADLINE_S)
            name = f"job-{uuid.uuid4().hex[:6]}"
            await kube.create(JOBS.collection_path(namespace), _job(name, namespace))
            # The leader makes the Job's Workload; the standby's own informer sees the Job.
            deadline = time.monotonic() + DEADLINE_S
            workloads = WORKLOADS.collection_path(namespace)
            while (standby.informers["Job"].get(f"{namespace}/{name}") is None
                   or not (await kube.get(workloads))["items"]):
                assert time.monotonic() < deadline, "the leader made no Workload or the standby saw no Job"
                await asyncio.sleep(0.2)
            assert f"Job:{namespace}/{name}" in standby.jobs.queue  # kept for a term of its own
            assert standby.jobs.queue.processed == 0 and not standby.jobs.queue.in_flight
            assert kube.requests_by_verb["post"] == 1  # the Job above: the standby wrote nothing
        finally:
            await standby.stop()
