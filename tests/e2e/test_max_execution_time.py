"""A Job labelled ``kueue.x-k8s.io/max-exec-time-seconds`` is stopped once it has run that
long, as Kueue does: its Workload is deactivated, the Job suspended and the quota freed."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import condition, cq_cpu_usage, queues, remove_queues, workloads_owned_by

pytestmark = pytest.mark.e2e


def test_a_job_is_stopped_after_its_maximum_execution_time(dev_cluster: DevCluster, namespace: str) -> None:
    cq = queues(dev_cluster, namespace, "2")
    try:
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "limited", "namespace": namespace,
                            "labels": {keys.QUEUE_NAME: "lq", keys.MAX_EXEC_TIME_SECONDS: "10"}},
               "spec": {"template": {
                   "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "600s"}},
                   "spec": {"restartPolicy": "Never", "containers": [
                       {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}
        dev_cluster.kubectl("create", "-f", "-", stdin=json.dumps(job))

        def admitted() -> dict[str, Any] | None:
            found = workloads_owned_by(dev_cluster, namespace, "Job", "limited")
            return found[0] if found and condition(found[0], "Admitted") else None

        wl = wait_until("the Job admitted", admitted, 60.0)
        started = time.monotonic()
        assert wl["spec"]["maximumExecutionTimeSeconds"] == 10

        def stopped() -> dict[str, Any] | None:
            [w] = workloads_owned_by(dev_cluster, namespace, "Job", "limited")
            suspended = dev_cluster.get_json("job", "limited", "-n", namespace)["spec"].get("suspend")
            return w if suspended and w["spec"].get("active") is False else None

        wl = wait_until("the Job stopped and its Workload deactivated", stopped, 60.0)
        assert time.monotonic() - started >= 9.0, "not before its 10 s"
        evicted = next(c for c in wl["status"]["conditions"] if c["type"] == "Evicted")
        assert (evicted["reason"], evicted["message"]) == (
            "DeactivatedDueToMaximumExecutionTimeExceeded",
            "The workload is deactivated due to exceeding the maximum execution time")
        wait_until("the quota freed", lambda: cq_cpu_usage(dev_cluster, cq) in ("0", None), 30.0)
    finally:
        remove_queues(dev_cluster, namespace, cq)
