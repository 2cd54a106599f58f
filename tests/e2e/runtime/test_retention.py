"""Finished Workloads are deleted once their retention has passed; others are kept."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from pykueue.api import keys
from pykueue.kube.client import KubeClient, connect
from pykueue.kube.informer import Informer
from pykueue.kube.resources import WORKLOADS
from pykueue.manager.runtime.controllers.retention import FinishedRetention
from tests.e2e.conftest import DevCluster

pytestmark = pytest.mark.e2e


@pytest.fixture
async def client(dev_cluster: DevCluster) -> AsyncIterator[KubeClient]:
    async with await connect(dev_cluster.kubeconfig) as kube:
        yield kube


def _workload(name: str, namespace: str) -> dict[str, object]:
    # No queueName: the dev cluster's pykueue leaves a Workload without a queue alone.
    return {"apiVersion": keys.API_VERSION, "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": {"restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "busybox"}]}}}]}}


async def _finish(client: KubeClient, namespace: str, name: str, at: float) -> None:
    obj = await client.get(WORKLOADS.object_path(name, namespace))
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    obj["status"] = {"conditions": [{"type": "Finished", "status": "True", "reason": "Succeeded",
                                     "message": "done", "lastTransitionTime": stamp}]}
    await client.replace(WORKLOADS.object_path(name, namespace, "status"), obj)


async def test_finished_workloads_go_after_their_retention(client: KubeClient, namespace: str) -> None:
    for name in ("old", "recent", "running"):
        await client.create(WORKLOADS.collection_path(namespace), _workload(name, namespace))
    now = time.time()
    await _finish(client, namespace, "old", now - 120)
    await _finish(client, namespace, "recent", now)
    informer = Informer(client, WORKLOADS, namespace=namespace)
    retention = FinishedRetention(client, informer, after_s=60.0)
    informer.start()
    try:
        await informer.wait_synced(30.0)
        task = asyncio.create_task(retention.run())
        deadline = time.monotonic() + 30.0
        while informer.get(f"{namespace}/old") is not None:
            assert time.monotonic() < deadline, "the expired Workload was not deleted"
            await asyncio.sleep(0.2)
        task.cancel()
        remaining = sorted(o["metadata"]["name"] for o in informer.items())
        assert remaining == ["recent", "running"]
        next_due = await retention.sweep(time.time())
        assert next_due is not None and abs(next_due - (int(now) + 60.0)) < 1.0
    finally:
        await informer.stop()
