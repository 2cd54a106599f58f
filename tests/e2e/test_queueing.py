"""Jobs created with kubectl are queued and admitted by a running ``pykueue run``.

The whole path is real: kube-apiserver stores the objects, pykueue turns a suspended Job
into a Workload, admits it within its ClusterQueue's quota, unsuspends the Job with the
flavor's node labels, kube-controller-manager's Job controller creates the pods,
kube-scheduler binds them to kwok nodes, kwok completes them, and pykueue marks the
Workload Finished, freeing the quota for the next job.
"""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.devcluster import cluster, processes
from pykueue.devcluster.addons import PYKUEUE_NAMESPACE
from pykueue.devcluster.ports import free_ports

from .conftest import REPO, DevCluster, bearer_get, wait_until

# The queues and lookups are those of the job-integration tests; the underscored names stay
# because other e2e modules import them from here.
from .jobs_common import FLAVOR
from .jobs_common import condition as _condition
from .jobs_common import cq_cpu_usage as _cq_cpu_usage
from .jobs_common import queues as _queues

pytestmark = pytest.mark.e2e


def _spawn(dev_cluster: DevCluster, log_path: Path, metrics_port: int,
           health_port: int) -> subprocess.Popen[bytes]:
    # The Lease lives in pykueue's namespace, as for the dev cluster's own pykueue.
    config = log_path.with_suffix(".config.yaml")
    config.write_text(json.dumps({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                                  "namespace": PYKUEUE_NAMESPACE}))
    with log_path.open("w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "pykueue", "run", "--kubeconfig", str(dev_cluster.kubeconfig),
             "--config", str(config),
             "--metrics-bind-address", f"127.0.0.1:{metrics_port}",
             "--health-probe-bind-address", f"127.0.0.1:{health_port}"],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT)


def _wait_ready(proc: subprocess.Popen[bytes] | None, health_url: str, log_path: Path | None) -> None:
    def ready() -> bool:
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"pykueue run exited with {proc.returncode}:\n"
                        f"{log_path.read_text() if log_path else ''}")
        try:
            with urllib.request.urlopen(health_url, timeout=2) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False
    wait_until("pykueue readiness", ready, 60.0)


def _stop(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return -1


@pytest.fixture(scope="module")
def pykueue(dev_cluster: DevCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The metrics URL of the ``pykueue run`` that ``dev up`` started, or of one started here
    (either answers the ``metrics_token`` fixture's token)."""
    state = cluster.current_state()
    record = state.record("pykueue") if state is not None else None
    if record is not None and processes.is_running(record):
        flags = dict(itertools.pairwise(record.argv))
        _wait_ready(None, f"http://{flags['--health-probe-bind-address']}/readyz", None)
        yield f"http://{flags['--metrics-bind-address']}/metrics"
        return
    dev_cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PYKUEUE_NAMESPACE}})
    metrics_port, health_port = free_ports(2)
    log_path = Path(tmp_path_factory.mktemp("pykueue")) / "pykueue.log"
    proc = _spawn(dev_cluster, log_path, metrics_port, health_port)
    try:
        _wait_ready(proc, f"http://127.0.0.1:{health_port}/readyz", log_path)
        yield f"http://127.0.0.1:{metrics_port}/metrics"
    finally:
        code = _stop(proc)
        print(log_path.read_text()[-4000:], file=sys.stderr)
    assert code == 0, "pykueue run did not stop cleanly on SIGTERM"


def test_standby_replica_syncs_and_stops_on_sigterm(dev_cluster: DevCluster, pykueue: str,
                                                    tmp_path: Path) -> None:
    """A second replica waits for the Lease (so quota is never granted twice), serves its
    probes once its informers synced, and exits 0 on SIGTERM, releasing nothing it lacks."""
    metrics_port, health_port = free_ports(2)
    log_path = tmp_path / "standby.log"
    proc = _spawn(dev_cluster, log_path, metrics_port, health_port)
    try:
        _wait_ready(proc, f"http://127.0.0.1:{health_port}/readyz", log_path)
    finally:
        code = _stop(proc)
    assert code == 0, log_path.read_text()[-4000:]
    assert "became leader" not in log_path.read_text()


def _job(dev_cluster: DevCluster, namespace: str, name: str, delay: str) -> None:
    dev_cluster.apply({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {keys.QUEUE_NAME: "lq"}},
        "spec": {"suspend": True, "template": {
            "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": delay}},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}})


def _workload_of(dev_cluster: DevCluster, namespace: str, job: str) -> dict[str, Any] | None:
    for wl in dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]:
        refs = wl["metadata"].get("ownerReferences") or []
        if any(r["kind"] == "Job" and r["name"] == job and r.get("controller") for r in refs):
            return dict(wl)
    return None


def _workload_with(dev_cluster: DevCluster, namespace: str, job: str,
                   condition: str) -> dict[str, Any] | None:
    wl = _workload_of(dev_cluster, namespace, job)
    return wl if wl is not None and _condition(wl, condition) else None


def _running_job(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any] | None:
    job: dict[str, Any] = dev_cluster.get_json("job", name, "-n", namespace)
    return None if job["spec"].get("suspend") else job


def _usage_is_zero(dev_cluster: DevCluster, cq: str) -> bool:
    return _cq_cpu_usage(dev_cluster, cq) == "0"


def test_job_is_admitted_runs_and_finishes(dev_cluster: DevCluster, pykueue: str, namespace: str,
                                           metrics_token: str) -> None:
    cq = _queues(dev_cluster, namespace, "2")
    _job(dev_cluster, namespace, "one", "1s")
    job = dev_cluster.get_json("job", "one", "-n", namespace)

    wl = wait_until("the Job's Workload to be admitted",
                    lambda: _workload_with(dev_cluster, namespace, "one", "Admitted"), 60.0)
    assert wl["metadata"]["name"].startswith("job-one-")
    assert wl["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert wl["status"]["admission"]["clusterQueue"] == cq
    assert wl["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": FLAVOR}

    started = wait_until("the Job to be unsuspended",
                         lambda: _running_job(dev_cluster, namespace, "one"), 30.0)
    template = started["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {"instance-type": "on-demand"}
    assert template["metadata"]["labels"][keys.PODSET] == "main"

    pods = wait_until("a pod bound by kube-scheduler", lambda: [
        p for p in dev_cluster.get_json("pods", "-n", namespace, "-l", "job-name=one")["items"]
        if p["spec"].get("nodeName")], 60.0)
    node = dev_cluster.get_json("node", pods[0]["spec"]["nodeName"])
    assert node["metadata"]["labels"]["instance-type"] == "on-demand"

    wait_until("the Job to complete", lambda: _condition(dev_cluster.get_json("job", "one", "-n", namespace),
                                                         "Complete"), 60.0)
    finished = wait_until("the Workload to be Finished",
                          lambda: _workload_with(dev_cluster, namespace, "one", "Finished"), 30.0)
    assert [c["reason"] for c in finished["status"]["conditions"] if c["type"] == "Finished"] == ["Succeeded"]
    wait_until("the ClusterQueue usage to return to zero", lambda: _usage_is_zero(dev_cluster, cq), 30.0)

    status, body = bearer_get(pykueue, metrics_token)
    assert status == 200, body


def test_quota_admits_two_of_three_then_the_third(dev_cluster: DevCluster, pykueue: str,
                                                   namespace: str) -> None:
    cq = _queues(dev_cluster, namespace, "2")
    names = ["a", "b", "c"]
    for name in names:
        _job(dev_cluster, namespace, name, "8s")

    def running() -> list[str]:
        jobs = dev_cluster.get_json("jobs", "-n", namespace)["items"]
        return sorted(j["metadata"]["name"] for j in jobs
                      if not j["spec"].get("suspend") and not _condition(j, "Complete"))

    first = wait_until("two jobs to start", lambda: r if len(r := running()) == 2 else None, 60.0)
    waiting = next(n for n in names if n not in first)
    pending = wait_until("the third Workload to be pending for quota", lambda: (
        w if (w := _workload_of(dev_cluster, namespace, waiting)) and any(
            c["type"] == "QuotaReserved" and c["status"] == "False"
            for c in (w.get("status") or {}).get("conditions") or ()) else None), 30.0)
    assert not _condition(pending, "Admitted")
    assert dev_cluster.get_json("job", waiting, "-n", namespace)["spec"]["suspend"] is True
    status = wait_until("the ClusterQueue status to show it", lambda: (
        s if (s := dev_cluster.get_json("clusterqueues.kueue.x-k8s.io", cq).get("status") or {})
        .get("pendingWorkloads") == 1 and s.get("admittedWorkloads") == 2 else None), 30.0)
    assert json.dumps(status["flavorsUsage"]).count('"2"') == 1

    def third_started() -> bool:
        assert len(running()) <= 2, "quota exceeded: more than two 1-CPU jobs running on 2 CPUs"
        return not dev_cluster.get_json("job", waiting, "-n", namespace)["spec"].get("suspend")
    wait_until("the third job to start once one finished", third_started, 90.0)
    wait_until("all jobs to complete", lambda: all(
        _condition(dev_cluster.get_json("job", n, "-n", namespace), "Complete") for n in names), 90.0)
    wait_until("the ClusterQueue usage to return to zero", lambda: _usage_is_zero(dev_cluster, cq), 30.0)
