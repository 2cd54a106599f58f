"""pykueue on the dev cluster under hostile load: a user's labelled Jobs are still admitted
promptly and the leader keeps its Lease.

A separate process (:mod:`tests.e2e.hostile_attack`) holds slow connections open to the webhook,
extender, dashboard and /metrics, and floods them with malformed requests and made-up bearer
tokens (every one a real TokenReview unless the cache or its budget answers). Meanwhile this
test creates labelled Jobs one at a time, as before the attack, and measures two latencies per
Job: the API create call (through pykueue's admission webhooks) and creation to unsuspended
(queued, admitted, started by the manager). The component suite (``tests/component/hostile``)
runs the larger campaign (10,000 requests per endpoint) against every server in isolation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import watch

from pykueue.api import keys
from pykueue.kube.leader import KUEUE_LEASE_NAME
from tests.conftest import REPO

from .conftest import DevCluster
from .jobs_common import queues, remove_queues

pytestmark = pytest.mark.e2e

# Scaled like the fault suite: PYKUEUE_HOSTILE_SCALE=2.5 for the README's figures.
SCALE = float(os.environ.get("PYKUEUE_HOSTILE_SCALE", "1"))
JOBS_PER_PHASE = max(50, int(100 * SCALE))
SLOW_CONNECTIONS = 500
ADMIT_DEADLINE_S = 60.0
SHARED_MACHINE_ALLOWANCE_S = 0.5


def _ports(dev_cluster: DevCluster) -> dict[str, dict[str, Any]]:
    """The ports of pykueue's servers, from `dev up`'s lines as a user reads them."""
    result = dev_cluster.dev("up")
    assert result.returncode == 0, result.stderr
    urls = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    targets: dict[str, dict[str, Any]] = {}
    for name in ("webhook", "extender", "dashboard", "metrics"):
        url = urls[name]
        assert url.startswith(("http://127.0.0.1:", "https://127.0.0.1:")), f"{name}: {url}"
        port = int(url.split("127.0.0.1:", 1)[1].split("/", 1)[0])
        targets[name] = {"port": port, "tls": url.startswith("https://")}
    return targets


def _job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": {keys.QUEUE_NAME: "lq"}},
        "spec": {"parallelism": 1, "completions": 1, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m"}}}]}}},
    }


async def _admit(dev_cluster: DevCluster, namespace: str, prefix: str,
                 count: int) -> tuple[list[float], list[float]]:
    """Create ``count`` labelled Jobs one after another; per Job, the create call's seconds and
    the seconds from creation to the Job unsuspended, seen by a watch."""
    creates: list[float] = []
    admits: list[float] = []
    async with await dev_cluster.api_client() as api:
        batch = k8s.BatchV1Api(api)
        unsuspended: dict[str, asyncio.Future[float]] = {}

        async def watch_jobs() -> None:
            stream = watch.Watch().stream(batch.list_namespaced_job, namespace, _request_timeout=300)
            async for event in stream:
                job = event["object"]
                future = unsuspended.get(job.metadata.name)
                if future is not None and not future.done() and job.spec.suspend is False:
                    future.set_result(time.monotonic())

        watcher = asyncio.ensure_future(watch_jobs())
        try:
            for i in range(count):
                name = f"{prefix}-{i}"
                unsuspended[name] = asyncio.get_running_loop().create_future()
                started = time.monotonic()
                created = await batch.create_namespaced_job(namespace, _job(name))
                creates.append(time.monotonic() - started)
                assert created.spec.suspend is True, "the webhook suspends a labelled Job"
                async with asyncio.timeout(ADMIT_DEADLINE_S):
                    admits.append(await unsuspended[name] - started)
        finally:
            watcher.cancel()
    return creates, admits


def _lease(dev_cluster: DevCluster) -> dict[str, Any]:
    lease: dict[str, Any] = dev_cluster.get_json("lease", KUEUE_LEASE_NAME, "-n", "pykueue-system")["spec"]
    return lease


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


@contextlib.contextmanager
def _attack(dev_cluster: DevCluster) -> Iterator[dict[str, Any]]:
    """Run the attacker while the block runs; afterwards the dict holds its figures."""
    spec = {"targets": _ports(dev_cluster), "slow": SLOW_CONNECTIONS, "seed": 20261207}
    # At the lowest CPU priority: on one machine the attacker's own work would otherwise be
    # measured as pykueue's slowness (in a cluster it runs elsewhere).
    process = subprocess.Popen(["nice", "-n", "19", sys.executable, "-m", "tests.e2e.hostile_attack",
                                json.dumps(spec)], cwd=REPO,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    figures: dict[str, Any] = {}
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        yield figures
        out, _ = process.communicate(timeout=120)  # closing stdin ends the floods
        figures.update(json.loads(out.strip().splitlines()[-1]))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_jobs_are_admitted_promptly_and_the_lease_is_kept_under_attack(
        dev_cluster: DevCluster, namespace: str) -> None:
    cq = queues(dev_cluster, namespace, cpu="100")
    try:
        quiet_create, quiet_admit = asyncio.run(_admit(dev_cluster, namespace, "quiet", JOBS_PER_PHASE))
        lease_before = _lease(dev_cluster)
        with _attack(dev_cluster) as attack:
            loud_create, loud_admit = asyncio.run(_admit(dev_cluster, namespace, "loud", JOBS_PER_PHASE))
        lease_after = _lease(dev_cluster)
    finally:
        remove_queues(dev_cluster, namespace, cq)
    figures = {
        "jobs_per_phase": JOBS_PER_PHASE,
        "create_p99_s": {"unloaded": round(_p99(quiet_create), 3), "attacked": round(_p99(loud_create), 3)},
        "admit_p99_s": {"unloaded": round(_p99(quiet_admit), 3), "attacked": round(_p99(loud_admit), 3)},
        "admit_median_s": {"unloaded": round(statistics.median(quiet_admit), 3),
                           "attacked": round(statistics.median(loud_admit), 3)},
        "lease": {"holder_before": lease_before.get("holderIdentity"),
                  "holder_after": lease_after.get("holderIdentity"),
                  "transitions": [lease_before.get("leaseTransitions"), lease_after.get("leaseTransitions")]},
        **attack,
    }
    print("\nhostile load figures:", json.dumps(figures, indent=1))
    requests = attack["requests"]
    assert all(r["tried"] > 0 for r in requests.values()), requests
    # The only 5xx allowed is the documented 503 at a server's connection cap (the 500 slow
    # connections fill the dashboard's and the metrics' 128 on purpose).
    unexpected = {k: [e for e in r["server_errors"] if not (e[1] == 503 and "open connections" in e[2])]
                  for k, r in requests.items()}
    assert not any(unexpected.values()), unexpected
    assert lease_after.get("holderIdentity") == lease_before.get("holderIdentity")
    assert lease_after.get("leaseTransitions") == lease_before.get("leaseTransitions")
    assert lease_after["renewTime"] > lease_before["renewTime"], "the leader renewed through the attack"
    # The goal is a labelled Job's admission p99 under attack at most twice the quiet one. Here
    # the attacker shares the machine's two cores with the control plane and pykueue (in a
    # cluster it would not), so a fixed allowance on top keeps the check about pykueue.
    for measure in ("create_p99_s", "admit_p99_s"):
        quiet, loud = figures[measure]["unloaded"], figures[measure]["attacked"]
        assert loud <= 2 * quiet + SHARED_MACHINE_ALLOWANCE_S, f"{measure}: {loud} s vs {quiet} s before"
