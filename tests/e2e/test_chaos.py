"""Chaos: the manager is SIGKILLed again and again during a storm of Job submissions and
completions, restarted each time, and the API must always tell a consistent story.

The dev cluster's own ``pykueue run`` is stopped for the duration and replaced by one this
test owns (same flags, so the webhook keeps its registered address), killed with SIGKILL
at a random moment of every round and restarted. Leader election is off for it: a single
replica that needs no Lease hand-over, so every restart is immediate and a kill is the
only way it stops. Afterwards ``dev up`` starts the dev cluster's pykueue again.

Checked from the API after every kill, while no manager runs (safety):
* quota is never exceeded: the CPUs of admitted Workloads, and those of started,
  unfinished Jobs, stay within the ClusterQueue's quota;
* nothing is admitted twice: every Job has at most one Workload;
* nothing runs without quota: a started, unfinished Job's Workload holds quota.
After every restart (liveness, within a deadline): no Job stays suspended while its
Workload holds quota. At the end nothing is lost: every Job completes, every Workload is
Finished and the ClusterQueue's usage is zero.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.api.quantity import parse_quantity, resource_value
from pykueue.devcluster import processes

from .conftest import REPO, DevCluster, dev_pykueue, wait_until
from .test_queueing import _condition, _cq_cpu_usage, _queues

pytestmark = pytest.mark.e2e

ROUNDS = 12
JOBS_PER_ROUND = 3
QUOTA_CPUS = 3
SEED = 20260101
COMPLETE_DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"


class Manager:
    """One ``pykueue run`` subprocess owned by the test; killed with SIGKILL, restarted."""

    def __init__(self, argv: list[str], health_url: str, log_path: Path) -> None:
        self.argv, self.health_url, self.log_path = argv, health_url, log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        with self.log_path.open("a") as log:
            self.proc = subprocess.Popen(self.argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        self.starts += 1

    def ready(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            pytest.fail(f"the manager exited by itself ({self.proc.returncode}):\n{self.tail()}")
        try:
            with urllib.request.urlopen(self.health_url, timeout=2) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def tail(self) -> str:
        return self.log_path.read_text()[-3000:] if self.log_path.exists() else ""


@pytest.fixture
def manager(dev_cluster: DevCluster, tmp_path: Path) -> Iterator[Manager]:
    """Swap the dev cluster's pykueue for one owned here; put the dev one back afterwards."""
    record, argv = dev_pykueue()
    flags = dict(itertools.pairwise(record.argv))
    argv.append("--no-leader-elect")
    processes.stop(record)  # SIGTERM: it releases its Lease and frees its ports
    owned = Manager(argv, f"http://{flags['--health-probe-bind-address']}/readyz", tmp_path / "manager.log")
    try:
        owned.start()
        wait_until("the test's manager to be ready", owned.ready, 60.0)
        yield owned
    finally:
        owned.kill()
        result = dev_cluster.dev("up")
        assert result.returncode == 0, f"dev up did not restore pykueue: {result.stderr[-2000:]}"


def _cpus(workload: dict[str, Any]) -> int:
    total = 0
    for psa in ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ():
        total += resource_value("cpu", parse_quantity((psa.get("resourceUsage") or {}).get("cpu", "0")))
    return total


def _holds_quota(workload: dict[str, Any]) -> bool:
    return bool((workload.get("status") or {}).get("admission")) and _condition(workload, "QuotaReserved") \
        and not _condition(workload, "Finished")


def _finished_job(job: dict[str, Any]) -> bool:
    return _condition(job, "Complete") or _condition(job, "Failed")


class World:
    """Jobs and Workloads of the test namespace, read together."""

    def __init__(self, dev_cluster: DevCluster, namespace: str) -> None:
        self.jobs = {j["metadata"]["uid"]: j for j in dev_cluster.get_json("jobs", "-n", namespace)["items"]}
        self.workloads = dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]
        self.by_job: dict[str, list[dict[str, Any]]] = {}
        for wl in self.workloads:
            for ref in wl["metadata"].get("ownerReferences") or ():
                if ref.get("controller"):
                    self.by_job.setdefault(ref["uid"], []).append(wl)

    def safety_violations(self) -> list[str]:
        problems = []
        reserved = sum(_cpus(w) for w in self.workloads if _holds_quota(w))
        if reserved > QUOTA_CPUS * 1000:
            problems.append(f"admitted Workloads hold {reserved}m CPU, quota {QUOTA_CPUS}")
        running = [j for j in self.jobs.values() if not j["spec"].get("suspend") and not _finished_job(j)]
        if len(running) > QUOTA_CPUS:
            problems.append(f"{len(running)} one-CPU Jobs started, quota {QUOTA_CPUS}")
        for uid, wls in self.by_job.items():
            if len(wls) > 1:
                problems.append(f"Job {uid} has {len(wls)} Workloads")
        for job in running:
            wls = self.by_job.get(job["metadata"]["uid"], [])
            if not any(_holds_quota(w) or _condition(w, "Finished") for w in wls):
                problems.append(f"Job {job['metadata']['name']} runs without quota")
        return problems

    def suspended_with_quota(self) -> list[str]:
        return [j["metadata"]["name"] for uid, j in self.jobs.items()
                if j["spec"].get("suspend") and any(_holds_quota(w) for w in self.by_job.get(uid, []))]


def _submit(dev_cluster: DevCluster, namespace: str, names: list[str], rng: random.Random) -> None:
    items = [{
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {keys.QUEUE_NAME: "lq"}},
        "spec": {"suspend": True, "template": {
            "metadata": {"annotations": {COMPLETE_DELAY: f"{rng.uniform(0.5, 3):.1f}s"}},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}
        for name in names]
    dev_cluster.apply({"apiVersion": "v1", "kind": "List", "items": items})


def test_sigkill_storm_keeps_the_invariants(dev_cluster: DevCluster, manager: Manager,
                                            namespace: str) -> None:
    rng = random.Random(int(os.environ.get("PYKUEUE_CHAOS_SEED", SEED)))
    cq = _queues(dev_cluster, namespace, str(QUOTA_CPUS))
    submitted: list[str] = []
    started = time.monotonic()
    for round_no in range(ROUNDS):
        names = [f"r{round_no}-j{i}" for i in range(JOBS_PER_ROUND)]
        _submit(dev_cluster, namespace, names, rng)
        submitted += names
        time.sleep(rng.uniform(0.2, 2.0))  # the storm runs; the kill lands at a random moment
        manager.kill()
        world = World(dev_cluster, namespace)
        assert world.safety_violations() == [], (f"round {round_no}: {world.safety_violations()}\n"
                                                 f"{manager.tail()}")
        manager.start()
        wait_until(f"round {round_no}: the manager to be ready again", manager.ready, 60.0)
        wait_until(f"round {round_no}: admitted Jobs to start after the restart",
                   lambda: not World(dev_cluster, namespace).suspended_with_quota(), 30.0)
    storm_s = time.monotonic() - started

    def all_done() -> bool:
        world = World(dev_cluster, namespace)
        assert world.safety_violations() == []
        jobs_done = len(world.jobs) == len(submitted) and all(_finished_job(j) for j in world.jobs.values())
        wls_done = len(world.workloads) == len(submitted) and all(_condition(w, "Finished")
                                                                   for w in world.workloads)
        return jobs_done and wls_done
    wait_until("every Job to complete and every Workload to be Finished", all_done, 120.0, poll_s=1.0)
    wait_until("the ClusterQueue usage to return to zero",
               lambda: _cq_cpu_usage(dev_cluster, cq) == "0", 30.0)
    world = World(dev_cluster, namespace)
    assert sorted(j["metadata"]["name"] for j in world.jobs.values()) == sorted(submitted)
    assert all(_condition(j, "Complete") for j in world.jobs.values()), json.dumps(
        [j["status"] for j in world.jobs.values() if not _condition(j, "Complete")])[:2000]
    assert manager.starts == ROUNDS + 1
    print(f"chaos: {ROUNDS} SIGKILLs, {len(submitted)} Jobs, storm {storm_s:.0f}s", file=sys.stderr)
