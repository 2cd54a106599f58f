"""MultiKueue on real control planes: the dev cluster as manager, two worker clusters.

The workers come from ``pykueue dev up --workers 2`` (run once for this module, through the
CLI as a user would); each is a control plane of its own with kwok nodes and pykueue as its
Kueue, reached through the kubeconfig Secrets ``dev up`` stores in the manager. The module
creates the MultiKueueClusters, a MultiKueueConfig and the AdmissionCheck that ties them to a
manager ClusterQueue; every test gets one namespace, present in all three clusters, with a
LocalQueue ``lq`` in each (2 CPUs per worker, 4 in the manager: the sum, as Kueue advises).

A watchdog polls the three clusters every second while a test runs and records any moment a
job runs (unsuspended with active pods) in two clusters at once, or a pod exists in the
manager cluster; each test ends by asserting it saw none.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import keys
from pykueue.devcluster import cluster

from .conftest import DevCluster, wait_until
from .jobs_common import FLAVOR, NAMESPACE_LABEL, condition

pytestmark = pytest.mark.e2e

KWOK_COMPLETE_DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"
WORKER_LINE = re.compile(r"^worker-(\d+): server (\S+), kubeconfig (\S+), secret [^/]+/(\S+)$")
MANAGER = "manager"
WORKER_CPU = "2"


@dataclass
class Setup:
    manager: DevCluster
    workers: dict[str, DevCluster]
    """MultiKueueCluster name -> its worker cluster."""
    roots: dict[str, Path]
    """MultiKueueCluster name -> the worker's state directory."""
    check: str

    def clusters(self) -> dict[str, DevCluster]:
        return {MANAGER: self.manager, **self.workers}


def _worker_lines(output: str) -> list[tuple[int, str, Path, str]]:
    found = []
    for line in output.splitlines():
        match = WORKER_LINE.match(line.strip())
        if match:
            found.append((int(match[1]), match[2], Path(match[3]), match[4]))
    return found


@pytest.fixture(scope="module")
def mk(dev_cluster: DevCluster) -> Iterator[Setup]:
    had_workers = bool(cluster.status().workers)
    up = dev_cluster.dev("up", "--workers", "2", timeout_s=600.0)
    assert up.returncode == 0, up.stderr
    assert up.stdout.strip().splitlines()[-1] == f"kubeconfig: {dev_cluster.kubeconfig}"
    lines = _worker_lines(up.stdout)
    assert [i for i, *_ in lines] == [1, 2], up.stdout
    suffix = uuid.uuid4().hex[:6]
    names = {index: f"e2e-mk-{suffix}-{index}" for index, *_ in lines}
    for index, _server, _kubeconfig, secret in lines:
        dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "MultiKueueCluster",
                           "metadata": {"name": names[index]},
                           "spec": {"clusterSource": {"kubeConfig": {"location": secret,
                                                                     "locationType": "Secret"}}}})
    config, check = f"e2e-mk-{suffix}", f"e2e-mk-{suffix}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "MultiKueueConfig",
                       "metadata": {"name": config}, "spec": {"clusters": list(names.values())}})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "AdmissionCheck", "metadata": {"name": check},
                       "spec": {"controllerName": keys.MULTIKUEUE_CONTROLLER,
                                "parameters": {"apiGroup": keys.GROUP, "kind": "MultiKueueConfig",
                                               "name": config}}})
    setup = Setup(dev_cluster,
                  {names[i]: DevCluster(kubeconfig, server) for i, server, kubeconfig, _ in lines},
                  {names[i]: kubeconfig.parent for i, _, kubeconfig, _ in lines}, check)
    try:
        for name in setup.workers:
            wait_until(f"MultiKueueCluster {name} Active",
                       lambda n=name: _active(dev_cluster, "multikueueclusters.kueue.x-k8s.io", n) == "True",
                       60.0)
        wait_until("the AdmissionCheck Active",
                   lambda: _active(dev_cluster, "admissionchecks.kueue.x-k8s.io", check) == "True", 60.0)
        yield setup
    finally:
        for kind, name in (("admissionchecks.kueue.x-k8s.io", check),
                           ("multikueueconfigs.kueue.x-k8s.io", config),
                           *(("multikueueclusters.kueue.x-k8s.io", n) for n in names.values())):
            dev_cluster.kubectl("delete", kind, name, "--wait=false", check=False)
        if had_workers:
            dev_cluster.dev("up", timeout_s=600.0)  # repairs a worker a test killed
        else:
            cluster.down_workers(report=lambda _m: None)


def _active(dev: DevCluster, kind: str, name: str) -> str | None:
    obj = dev.get_json(kind, name)
    return next((c.get("status") for c in (obj.get("status") or {}).get("conditions") or ()
                 if c.get("type") == "Active"), None)


def _queues(dev: DevCluster, namespace: str, cpu: str, check: str | None) -> None:
    dev.apply({"apiVersion": keys.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}})
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: namespace}},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}
    if check is not None:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": check}]}
    cq = f"cq-{namespace}"
    dev.apply({"apiVersion": keys.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cq},
               "spec": spec})
    dev.apply({"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
               "metadata": {"name": "lq", "namespace": namespace}, "spec": {"clusterQueue": cq}})


@pytest.fixture
def ns(mk: Setup) -> Iterator[str]:
    """One namespace in all three clusters, with LocalQueue ``lq`` in each."""
    name = mk.manager.namespace()
    for worker in mk.workers.values():
        worker.kubectl("create", "namespace", name)
        wait_until(f"ServiceAccount {name}/default in a worker",
                   lambda w=worker: w.kubectl("get", "serviceaccount", "default", "-n", name,
                                              check=False).returncode == 0, 30.0)
        _queues(worker, name, WORKER_CPU, None)
    _queues(mk.manager, name, str(2 * int(WORKER_CPU)), mk.check)
    try:
        yield name
    finally:
        for dev in mk.clusters().values():
            dev.kubectl("delete", "namespace", name, "--wait=false", check=False, timeout_s=10.0)
            dev.kubectl("delete", "clusterqueues.kueue.x-k8s.io", f"cq-{name}", "--wait=false", check=False,
                        timeout_s=10.0)


@dataclass
class Watchdog:
    """Polls every cluster every second: which jobs run where, and pods in the manager."""

    clusters: dict[str, DevCluster]
    namespace: str
    violations: list[str] = field(default_factory=list)
    ran_in: dict[str, set[str]] = field(default_factory=dict)
    """Job name -> clusters it was seen running in."""
    _stop: threading.Event = field(default_factory=threading.Event)

    def _jobs(self, dev: DevCluster) -> list[dict[str, Any]] | None:
        items = []
        for kind in ("jobs.batch", "pytorchjobs.kubeflow.org", "jobsets.jobset.x-k8s.io"):
            result = dev.kubectl("get", kind, "-n", self.namespace, "-o", "json", check=False, timeout_s=5.0)
            if result.returncode != 0:
                return None  # unreachable (a killed worker): nothing can run there that we could see
            items += json.loads(result.stdout)["items"]
        return items

    def poll(self) -> None:
        running: dict[str, list[str]] = {}
        for name, dev in self.clusters.items():
            for job in self._jobs(dev) or ():
                if _running(job):
                    running.setdefault(job["metadata"]["name"], []).append(name)
        for job, where in running.items():
            self.ran_in.setdefault(job, set()).update(where)
            if len(where) > 1:
                self.violations.append(f"{job} running in {where} at {time.strftime('%H:%M:%S')}")
        pods = self.clusters[MANAGER].kubectl("get", "pods", "-n", self.namespace, "-o", "name", check=False,
                                              timeout_s=5.0)
        if pods.returncode == 0 and pods.stdout.strip():
            self.violations.append(f"pods in the manager cluster: {pods.stdout.split()}")

    def run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self.poll()
            except (subprocess.SubprocessError, ValueError) as exc:
                self.violations.append(f"watchdog failed: {exc}")

    def stop(self) -> None:
        self._stop.set()


def _running(job: dict[str, Any]) -> bool:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    if job["kind"] == "PyTorchJob":
        suspended = (spec.get("runPolicy") or {}).get("suspend")
        replicas = (status.get("replicaStatuses") or {}).values()
        active = sum(int((r or {}).get("active") or 0) for r in replicas)
    elif job["kind"] == "JobSet":
        suspended = spec.get("suspend")
        active = sum(int((r or {}).get("active") or 0) for r in status.get("replicatedJobsStatus") or ())
    else:
        suspended, active = spec.get("suspend"), int(status.get("active") or 0)
    return not suspended and active > 0


@pytest.fixture
def watchdog(mk: Setup, ns: str) -> Iterator[Watchdog]:
    dog = Watchdog(mk.clusters(), ns)
    thread = threading.Thread(target=dog.run, daemon=True)
    thread.start()
    try:
        yield dog
    finally:
        dog.stop()
        thread.join(10.0)


def _job(name: str, cpu: str, runtime: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {"template": {
                "metadata": {"annotations": {KWOK_COMPLETE_DELAY: runtime}},
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}}}


def _get(dev: DevCluster, kind: str, name: str, namespace: str) -> dict[str, Any] | None:
    result = dev.kubectl("get", kind, name, "-n", namespace, "-o", "json", check=False, timeout_s=10.0)
    return json.loads(result.stdout) if result.returncode == 0 else None


def _running_in(mk: Setup, kind: str, name: str, namespace: str) -> str | None:
    """The worker whose copy of the job runs (unsuspended, with active pods)."""
    for worker, dev in mk.workers.items():
        job = _get(dev, kind, name, namespace)
        if job is not None and _running(job):
            return worker
    return None


def _manager_workload(mk: Setup, namespace: str, kind: str, name: str) -> dict[str, Any]:
    for wl in mk.manager.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]:
        if any(r["kind"] == kind and r["name"] == name for r in wl["metadata"].get("ownerReferences") or ()):
            return dict(wl)
    return {}


def _submit(mk: Setup, namespace: str, manifest: dict[str, Any]) -> None:
    mk.manager.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(manifest))


def test_a_job_runs_in_one_worker_and_completes_in_the_manager(mk: Setup, ns: str,
                                                              watchdog: Watchdog) -> None:
    _submit(mk, ns, _job("hello", "1", "3s"))
    job = mk.manager.get_json("job", "hello", "-n", ns)
    assert job["spec"]["managedBy"] == keys.MULTIKUEUE_CONTROLLER  # the webhook's MultiKueue default
    wait_until("the Job to complete in the manager",
               lambda: condition(mk.manager.get_json("job", "hello", "-n", ns), "Complete"), 120.0)
    wl = wait_until("the manager's Workload Finished",
                    lambda: (w := _manager_workload(mk, ns, "Job", "hello")) and condition(w, "Finished")
                    and w, 60.0)
    assert condition(wl, "Admitted") or condition(wl, "Finished")
    states = {c["name"]: c["state"] for c in wl["status"].get("admissionChecks") or ()}
    assert states.get(mk.check) == "Ready"
    # Won by the worker's admission (MultiKueueWaitForWorkloadAdmitted), not its reservation.
    messages = {c["name"]: c.get("message") or "" for c in wl["status"].get("admissionChecks") or ()}
    assert messages[mk.check].startswith('The workload was admitted on "'), messages
    job = mk.manager.get_json("job", "hello", "-n", ns)
    assert job["spec"]["suspend"] is True  # never started in the manager
    assert int(job["status"].get("succeeded") or 0) == 1  # the worker's status, mirrored
    assert len(watchdog.ran_in.get("hello", set())) == 1 and MANAGER not in watchdog.ran_in["hello"]
    # Finished: the copies in the workers are removed.
    for worker in mk.workers.values():
        wait_until("the worker's copies removed", lambda w=worker: _get(w, "job", "hello", ns) is None, 60.0)
    assert not watchdog.violations


def test_deleting_the_job_in_the_manager_deletes_the_remote_copy(mk: Setup, ns: str,
                                                                watchdog: Watchdog) -> None:
    _submit(mk, ns, _job("doomed", "1", "600s"))
    worker = wait_until("the Job running in a worker", lambda: _running_in(mk, "job", "doomed", ns), 120.0)
    mk.manager.kubectl("delete", "job", "doomed", "-n", ns)
    wait_until("the remote Job deleted", lambda: _get(mk.workers[worker], "job", "doomed", ns) is None, 60.0)
    wait_until("the remote Workload deleted",
               lambda: not mk.workers[worker].get_json("workloads.kueue.x-k8s.io", "-n", ns)["items"], 60.0)
    assert not watchdog.violations


def test_with_one_workers_quota_full_jobs_go_to_the_other(mk: Setup, ns: str, watchdog: Watchdog) -> None:
    full, free = list(mk.workers)
    # The worker's own user fills its quota: a Job submitted there directly, not through MultiKueue.
    local = json.dumps(_job("local", WORKER_CPU, "600s"))
    mk.workers[full].kubectl("apply", "-n", ns, "-f", "-", stdin=local)
    wait_until("the worker's local Job running",
               lambda: (j := _get(mk.workers[full], "job", "local", ns)) is not None and _running(j), 60.0)
    for name in ("a", "b"):
        _submit(mk, ns, _job(name, "1", "5s"))
    for name in ("a", "b"):
        wait_until(f"Job {name} to complete in the manager",
                   lambda n=name: condition(mk.manager.get_json("job", n, "-n", ns), "Complete"), 120.0)
        assert watchdog.ran_in.get(name) == {free}, watchdog.ran_in
    assert not watchdog.violations


def test_a_bad_or_unreachable_kubeconfig_makes_the_cluster_inactive(mk: Setup) -> None:
    suffix = uuid.uuid4().hex[:6]
    unreachable = yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1",
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}]})
    secrets = {"garbage": "not a kubeconfig: [", "unreachable": unreachable,
               "runs-a-program": unreachable.replace("token: t", "exec: {command: sh}")}
    cases = {"missing": ("BadConfig", "not found"), "garbage": ("BadConfig", "not a kubeconfig"),
             "runs-a-program": ("BadConfig", "exec is not allowed"),
             "unreachable": ("ClientConnectionFailed", "127.0.0.1:1")}
    names = {case: f"e2e-mk-bad-{suffix}-{case}" for case in cases}
    try:
        for case, text in secrets.items():
            mk.manager.apply({"apiVersion": "v1", "kind": "Secret",
                              "metadata": {"name": names[case], "namespace": "pykueue-system"},
                              "stringData": {"kubeconfig": text}})
        for name in names.values():
            mk.manager.apply({"apiVersion": keys.API_VERSION, "kind": "MultiKueueCluster",
                              "metadata": {"name": name},
                              "spec": {"clusterSource": {"kubeConfig": {"location": name}}}})
        for case, (reason, text) in cases.items():
            def inactive(name: str = names[case]) -> dict[str, Any] | None:
                obj = mk.manager.get_json("multikueueclusters.kueue.x-k8s.io", name)
                return next((c for c in (obj.get("status") or {}).get("conditions") or ()
                             if c.get("type") == "Active" and c.get("status") == "False"), None)
            cond = wait_until(f"MultiKueueCluster {case} inactive", inactive, 60.0)
            assert cond["reason"] == reason and text in cond["message"], cond
        # The good ones keep working.
        for name in mk.workers:
            assert _active(mk.manager, "multikueueclusters.kueue.x-k8s.io", name) == "True"
    finally:
        for case, name in names.items():
            mk.manager.kubectl("delete", "multikueueclusters.kueue.x-k8s.io", name, "--wait=false",
                               check=False)
            if case in secrets:
                mk.manager.kubectl("delete", "secret", name, "-n", "pykueue-system", "--wait=false",
                                   check=False)


def _pytorchjob(name: str, runtime: str) -> dict[str, Any]:
    """Master 1 + Worker 1, 1 CPU each: one worker's whole quota."""
    def replica() -> dict[str, Any]:
        return {"replicas": 1, "restartPolicy": "OnFailure", "template": {
            "metadata": {"annotations": {KWOK_COMPLETE_DELAY: runtime}},
            "spec": {"containers": [{"name": "pytorch", "image": "pytorch",
                                     "resources": {"requests": {"cpu": "1"}}}]}}}

    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {"pytorchReplicaSpecs": {"Master": replica(), "Worker": replica()}}}


def test_a_pytorchjob_runs_in_a_worker_and_succeeds_in_the_manager(mk: Setup, ns: str,
                                                                   watchdog: Watchdog) -> None:
    _submit(mk, ns, _pytorchjob("trainer", "5s"))
    job = mk.manager.get_json("pytorchjobs.kubeflow.org", "trainer", "-n", ns)
    assert job["spec"]["runPolicy"]["managedBy"] == keys.MULTIKUEUE_CONTROLLER
    wait_until("the PyTorchJob running in a worker",
               lambda: _running_in(mk, "pytorchjobs.kubeflow.org", "trainer", ns), 120.0)
    wait_until("the PyTorchJob to succeed in the manager",
               lambda: condition(mk.manager.get_json("pytorchjobs.kubeflow.org", "trainer", "-n", ns),
                                 "Succeeded"), 120.0)
    wait_until("the manager's Workload Finished",
               lambda: condition(_manager_workload(mk, ns, "PyTorchJob", "trainer"), "Finished"), 60.0)
    job = mk.manager.get_json("pytorchjobs.kubeflow.org", "trainer", "-n", ns)
    assert job["spec"]["runPolicy"]["suspend"] is True  # never started in the manager
    assert len(watchdog.ran_in.get("trainer", set())) == 1 and MANAGER not in watchdog.ran_in["trainer"]
    assert not watchdog.violations


def _jobset(name: str, runtime: str) -> dict[str, Any]:
    """A driver and a worker Job of one 1-CPU pod each: one worker cluster's whole quota."""
    def replicated(rj: str) -> dict[str, Any]:
        return {"name": rj, "replicas": 1, "template": {"spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {
                "metadata": {"annotations": {KWOK_COMPLETE_DELAY: runtime}},
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}}

    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {"replicatedJobs": [replicated("driver"), replicated("workers")]}}


def test_a_jobset_runs_in_a_worker_and_completes_in_the_manager(mk: Setup, ns: str,
                                                                watchdog: Watchdog) -> None:
    resource = "jobsets.jobset.x-k8s.io"
    _submit(mk, ns, _jobset("sets", "5s"))
    assert mk.manager.get_json(resource, "sets", "-n", ns)["spec"]["managedBy"] == keys.MULTIKUEUE_CONTROLLER
    worker = wait_until("the JobSet running in a worker",
                        lambda: _running_in(mk, resource, "sets", ns), 120.0)
    copy = _get(mk.workers[worker], resource, "sets", ns)
    assert copy is not None and not copy["spec"].get("managedBy")  # the worker's controller runs it
    wait_until("the JobSet to complete in the manager",
               lambda: condition(mk.manager.get_json(resource, "sets", "-n", ns), "Completed"), 120.0)
    wait_until("the manager's Workload Finished",
               lambda: condition(_manager_workload(mk, ns, "JobSet", "sets"), "Finished"), 60.0)
    assert mk.manager.get_json(resource, "sets", "-n", ns)["spec"]["suspend"] is True  # never started here
    assert watchdog.ran_in.get("sets") == {worker}
    assert not watchdog.violations


def test_a_lost_worker_has_its_jobs_run_elsewhere(mk: Setup, ns: str, watchdog: Watchdog) -> None:
    _submit(mk, ns, _job("survivor", "1", "40s"))
    lost = wait_until("the Job running in a worker", lambda: _running_in(mk, "job", "survivor", ns), 120.0)
    other = next(w for w in mk.workers if w != lost)
    _kill_apiserver(mk.roots[lost])
    wait_until("the lost worker's MultiKueueCluster inactive",
               lambda: _active(mk.manager, "multikueueclusters.kueue.x-k8s.io", lost) == "False", 30.0)
    # workerLostTimeout (10 s in the dev cluster), then the eviction's requeue backoff.
    wait_until("the Job running in the other worker", lambda: _running_in(mk, "job", "survivor", ns) == other,
               180.0)
    wait_until("the Job to complete in the manager",
               lambda: condition(mk.manager.get_json("job", "survivor", "-n", ns), "Complete"), 120.0)
    assert watchdog.ran_in["survivor"] <= {lost, other} and other in watchdog.ran_in["survivor"]
    assert not watchdog.violations


def _kill_apiserver(root: Path) -> None:
    """SIGKILL the worker's kube-apiserver, found by the pid its state file records."""
    state = json.loads((root / "state.json").read_text())
    record = next(p for p in state["processes"] if p["name"] == "kube-apiserver")
    cmdline = Path(f"/proc/{record['pid']}/cmdline").read_bytes().decode(errors="replace")
    assert str(root) in cmdline, "the recorded pid is not this worker's API server"
    os.kill(int(record["pid"]), signal.SIGKILL)
