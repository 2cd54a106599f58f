"""The manager survives a kube-apiserver restart without missing events.

kube-apiserver is stopped while Jobs are waiting, and ``dev up`` revives it (it restarts dead
components and reuses the rest). The dev cluster's ``pykueue run`` either rides the outage
out (its watches fail, back off and re-list; its Lease is renewed again) or, when the
outage outlasts the Lease's renew deadline, steps down and exits as Kueue does, to be
restarted by its supervisor (here a second ``dev up``, in a cluster the Deployment). Either
way the Jobs created before the outage and one created after it are all admitted and
finish, nothing is lost, and the quota comes back to zero.
"""

from __future__ import annotations

import time

import pytest

from devcluster import cluster, processes
from devcluster.addons import PYKUEUE_NAMESPACE
from manager.core.objects import parse_time

from .conftest import DevCluster, wait_until
from .test_queueing import _condition, _cq_cpu_usage, _job, _queues

pytestmark = pytest.mark.e2e


def _record(name: str) -> processes.ProcessRecord:
    state = cluster.current_state()
    record = state.record(name) if state is not None else None
    if record is None or not processes.is_running(record):
        pytest.fail(f"the dev cluster runs no {name}")
    return record


def test_manager_survives_an_apiserver_restart(dev_cluster: DevCluster, namespace: str) -> None:
    pykueue = _record("pykueue")
    cq = _queues(dev_cluster, namespace, "1")
    _job(dev_cluster, namespace, "before-a", "3s")
    _job(dev_cluster, namespace, "before-b", "3s")
    wait_until("one Workload admitted", lambda: any(
        _condition(w, "Admitted")
        for w in dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]), 60.0)

    assert processes.stop(_record("kube-apiserver"))
    result = dev_cluster.dev("up")
    assert result.returncode == 0, result.stderr[-2000:]

    def settled() -> bool:
        if not processes.is_running(pykueue):
            return True  # stepped down: a supervisor restarts it
        lease = dev_cluster.get_json("lease", "-n", PYKUEUE_NAMESPACE, "c1f6bfd2.kueue.x-k8s.io")
        return str(lease["spec"].get("holderIdentity", "")).endswith(f"_{pykueue.pid}") and \
            processes.is_running(pykueue) and _renewed_recently(lease)
    wait_until("pykueue to renew its Lease or step down", settled, 60.0, poll_s=1.0)
    result = dev_cluster.dev("up")
    assert result.returncode == 0, result.stderr[-2000:]

    _job(dev_cluster, namespace, "after", "1s")

    def all_finished() -> bool:
        wls = dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]
        return len(wls) == 3 and all(_condition(w, "Finished") for w in wls)
    wait_until("all three Workloads Finished", all_finished, 120.0, poll_s=1.0)
    wait_until("the ClusterQueue usage to return to zero",
               lambda: _cq_cpu_usage(dev_cluster, cq) == "0", 30.0)


def _renewed_recently(lease: dict[str, object]) -> bool:
    spec = lease.get("spec")
    renew = parse_time(spec.get("renewTime")) if isinstance(spec, dict) else None
    return renew is not None and time.time() - renew < 5.0
