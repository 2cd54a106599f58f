"""A second replica starting beside the leader stops nothing that runs.

Kueue's reconcilers start once their caches synced and write only on the leader. A replica
that reconciled Jobs before its Workload informer had listed would take a running Job for
one without a Workload and suspend it, deleting its pods; during a rollout that is every
running Job of the cluster. Here a second ``pykueue run`` (leader election on, as the
install runs two) starts while a Job runs under the dev cluster's pykueue, becomes ready as
a follower, and the Job's pods are still the same ones, never suspended; the follower's
job work queue processed nothing (``workqueue_work_duration_seconds{name="jobs"}``): its
reconciler waits for its term as leader.
"""

from __future__ import annotations

import itertools
import json
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykueue.api import keys

from .conftest import REPO, DevCluster, bearer_get, dev_pykueue, wait_until
from .jobs_common import condition, queues, remove_queues, workloads_owned_by

pytestmark = pytest.mark.e2e

PORT_FLAGS = ("--metrics-bind-address", "--health-probe-bind-address", "--webhook-bind-address",
              "--visibility-bind-address", "--dashboard-bind-address")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


Follower = tuple[subprocess.Popen[bytes], dict[str, str], Path]  # process, its addresses, its log


@pytest.fixture
def follower(dev_cluster: DevCluster, tmp_path: Path) -> Iterator[Follower]:
    """A second replica with the dev pykueue's flags on ports of its own; the leader stays."""
    _, argv = dev_pykueue()
    flags = dict(itertools.pairwise(argv))
    addresses: dict[str, str] = {}
    for flag in PORT_FLAGS:
        if flag in flags:
            addresses[flag] = f"127.0.0.1:{_free_port()}"
            argv[argv.index(flag) + 1] = addresses[flag]
    log = tmp_path / "follower.log"
    with log.open("w") as out:
        proc = subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc, addresses, log
    finally:
        proc.kill()
        proc.wait()


def _ready(proc: subprocess.Popen[bytes], url: str, log: Path) -> bool:
    if proc.poll() is not None:
        pytest.fail(f"the follower exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _running_pods(dev_cluster: DevCluster, namespace: str) -> set[str]:
    pods = dev_cluster.get_json("pods", "-n", namespace, "-l", "job-name=steady")["items"]
    return {p["metadata"]["uid"] for p in pods if (p.get("status") or {}).get("phase") == "Running"}


def _jobs_worked(metrics: str) -> float:
    """How many keys the job work queue processed, from a /metrics page."""
    prefix = 'workqueue_work_duration_seconds_count{name="jobs"}'
    return sum(float(line.split()[-1]) for line in metrics.splitlines() if line.startswith(prefix))


def test_a_starting_follower_suspends_no_running_job(dev_cluster: DevCluster, namespace: str,
                                                     follower: Follower, metrics_token: str) -> None:
    cq = queues(dev_cluster, namespace, "2")
    try:
        job: dict[str, Any] = {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "steady", "namespace": namespace, "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {"parallelism": 2, "completions": 2, "template": {
                "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "600s"}},
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}
        dev_cluster.apply(job)
        def two_running() -> set[str]:
            pods = _running_pods(dev_cluster, namespace)
            return pods if len(pods) == 2 else set()

        before = wait_until("the Job's 2 pods running", two_running, 60.0)
        [wl] = workloads_owned_by(dev_cluster, namespace, "Job", "steady")
        assert condition(wl, "Admitted")

        proc, addresses, log = follower
        health = f"http://{addresses['--health-probe-bind-address']}/readyz"
        wait_until("the second replica ready", lambda: _ready(proc, health, log), 90.0)
        wait_until("the second replica's job integrations prepared",
                   lambda: "job integrations:" in log.read_text(), 30.0)
        assert "became leader" not in log.read_text(), "the dev cluster's pykueue leads"
        status, metrics = bearer_get(f"http://{addresses['--metrics-bind-address']}/metrics", metrics_token)
        assert status == 200, metrics[:500]
        assert _jobs_worked(metrics) == 0, "a follower reconciled jobs"

        current = dev_cluster.get_json("job", "steady", "-n", namespace)
        assert not current["spec"].get("suspend"), "the follower suspended a running Job"
        assert _running_pods(dev_cluster, namespace) == before, "the Job's pods were replaced"
        events = dev_cluster.get_json("events", "-n", namespace, "--field-selector",
                                      "involvedObject.name=steady,reason=Suspended")["items"]
        assert len(events) <= 1, json.dumps([e.get("message") for e in events])  # its creation's only
    finally:
        remove_queues(dev_cluster, namespace, cq)
