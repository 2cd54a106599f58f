"""The leader-only loops take an unreachable API as a failed write to try again, never a crash.

The client here is a real one aimed at a local port nobody listens on, so every request
fails the way it does when kube-apiserver is down (connection refused). Objects reach the
informers through their watch-event entry point, as they would from a watch.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.api.wire import JSON
from pykueue.kube import resources as res
from pykueue.kube.client import KubeClient
from pykueue.kube.connection import Connection
from pykueue.kube.informer import Informer
from pykueue.kube.kubeconfig import ClientConfig
from pykueue.manager.runtime.controllers import retention
from pykueue.manager.runtime.controllers.finalizers import FINALIZER, FinalizerRelease
from pykueue.manager.runtime.controllers.manager import QUEUE_STATUS_PERIOD_S, QueueManager


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def unreachable() -> AsyncIterator[KubeClient]:
    async with KubeClient(Connection(ClientConfig(host=f"http://127.0.0.1:{_closed_port()}"))) as api:
        yield api


async def _add(informer: Informer, obj: JSON) -> None:
    await informer._apply({"type": "ADDED", "object": obj})


def _cluster_queue(name: str, **metadata: Any) -> JSON:
    return {"apiVersion": keys.API_VERSION, "kind": "ClusterQueue",
            "metadata": {"name": name, "resourceVersion": "1", **metadata},
            "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "2"}]}]}]}}


async def test_a_queue_status_pass_reports_failure_and_the_loop_tries_again(unreachable: KubeClient) -> None:
    manager = QueueManager(unreachable)
    await _add(manager.informers["ClusterQueue"], _cluster_queue("cq"))

    assert await manager.write_queue_statuses() is False
    assert unreachable.requests_issued == 1

    # The loop: a failed pass leaves the queues marked for writing, so the period after it
    # tries again (request 2 is the loop's first pass, request 3 its retry; nothing else
    # marks the queues here).
    manager._queues_dirty.set()
    loop = asyncio.create_task(manager._queue_status_forever())
    deadline = time.monotonic() + 3 * QUEUE_STATUS_PERIOD_S + 5.0
    try:
        while unreachable.requests_issued < 3:
            assert not loop.done(), loop.exception()
            assert time.monotonic() < deadline, "the failed queue status was not tried again"
            await asyncio.sleep(0.05)
    finally:
        loop.cancel()


async def test_a_finished_workload_whose_deletion_fails_is_due_again_shortly(unreachable: KubeClient) -> None:
    informer = Informer(unreachable, res.WORKLOADS)
    meta = {"name": "done", "namespace": "ns", "uid": "u1", "resourceVersion": "1"}
    await _add(informer, {"apiVersion": keys.API_VERSION, "kind": "Workload", "metadata": meta,
                          "status": {"conditions": [{"type": "Finished", "status": "True",
                                                     "lastTransitionTime": "2020-01-01T00:00:00Z"}]}})
    sweeper = retention.FinishedRetention(unreachable, informer, after_s=60.0)
    now = time.time()

    assert await sweeper.sweep(now) == now + retention.RETRY_S
    assert unreachable.requests_issued == 1


async def test_a_finalizer_release_that_fails_is_reported_for_retry(unreachable: KubeClient) -> None:
    informers = {kind: Informer(unreachable, ref) for kind, ref in
                 (("ClusterQueue", res.CLUSTER_QUEUES), ("ResourceFlavor", res.RESOURCE_FLAVORS),
                  ("Workload", res.WORKLOADS))}
    await _add(informers["ClusterQueue"], _cluster_queue("gone", finalizers=[FINALIZER],
                                                         deletionTimestamp="2020-01-01T00:00:00Z"))
    release = FinalizerRelease(unreachable, informers, reserving=lambda cq: 0)

    assert await release.sweep() is True  # a write failed: the loop comes back after RETRY_S
    assert unreachable.requests_issued == 1


async def test_a_finalizer_pass_looks_only_at_deleted_holders(unreachable: KubeClient) -> None:
    """Workload changes wake the release loop only while a deleted queue or flavor holds the
    finalizer, and a pass over a thousand live queues sends nothing."""
    informers = {kind: Informer(unreachable, ref) for kind, ref in
                 (("ClusterQueue", res.CLUSTER_QUEUES), ("ResourceFlavor", res.RESOURCE_FLAVORS),
                  ("Workload", res.WORKLOADS))}
    for i in range(1000):
        await _add(informers["ClusterQueue"], _cluster_queue(f"cq-{i}", finalizers=[FINALIZER]))
    release = FinalizerRelease(unreachable, informers, reserving=lambda cq: 0)
    workload = {"apiVersion": keys.API_VERSION, "kind": "Workload",
                "metadata": {"name": "w", "namespace": "ns", "resourceVersion": "1"}}

    release._changed.clear()
    await _add(informers["Workload"], workload)
    assert not release._changed.is_set() and release.waiting() == []
    assert await release.sweep() is False and unreachable.requests_issued == 0

    await informers["ClusterQueue"]._apply({"type": "MODIFIED", "object": _cluster_queue(
        "cq-7", finalizers=[FINALIZER], deletionTimestamp="2020-01-01T00:00:00Z")})
    assert release.waiting() == ["ClusterQueue/cq-7"]
    release._changed.clear()
    await informers["Workload"]._apply({"type": "MODIFIED", "object": workload})
    assert release._changed.is_set()
    assert await release.sweep() is True and unreachable.requests_issued == 1  # only cq-7's release

    await informers["ClusterQueue"]._apply({"type": "DELETED", "object": _cluster_queue("cq-7")})
    assert release.waiting() == []
