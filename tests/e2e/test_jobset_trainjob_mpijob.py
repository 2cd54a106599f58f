"""JobSets, TrainJobs and MPIJobs run by their real operators in the dev cluster.

``dev up`` runs JobSet (sigs.k8s.io/jobset v0.12.0), Kubeflow Trainer
(github.com/kubeflow/trainer/v2 v2.2.1, with its ``torch-distributed`` ClusterTrainingRuntime)
and the MPI operator (github.com/kubeflow/mpi-operator v0.8.2), the versions Kueue v0.19.2
pins. Each object here is created through the API server without a queue name, so pykueue
leaves it alone: its operator makes the Jobs and pods (the test creates none), kwok completes
the Job pods, and the object reaches its finished condition. The three are created at once
and run side by side, so the module takes about as long as its slowest object. Last, a dead
operator is started again by ``dev up``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pykueue.devcluster import cluster, processes

from .conftest import DevCluster, wait_until
from .jobs_common import condition

pytestmark = pytest.mark.e2e

JOBSET = "jobsets.jobset.x-k8s.io"
TRAINJOB = "trainjobs.trainer.kubeflow.org"
MPIJOB = "mpijobs.kubeflow.org"
FINISH_S = 90.0


def _container(name: str, image: str, cpu: str = "100m") -> dict[str, Any]:
    return {"name": name, "image": image, "resources": {"requests": {"cpu": cpu}}}


def _jobset(namespace: str) -> dict[str, Any]:
    job = {"parallelism": 1, "completions": 1, "backoffLimit": 0,
           "template": {"spec": {"restartPolicy": "Never", "containers": [_container("worker", "busybox")]}}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "plain", "namespace": namespace},
            "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": job}}]}}


def _trainjob(namespace: str) -> dict[str, Any]:
    """What the Kubeflow SDK submits for a custom trainer on ``torch-distributed``."""
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "torch", "namespace": namespace},
            "spec": {"runtimeRef": {"name": "torch-distributed"},
                     "trainer": {"numNodes": 2, "command": ["torchrun", "train.py"],
                                 "resourcesPerNode": {"requests": {"cpu": "1", "memory": "2Gi"}}}}}


def _mpijob(namespace: str) -> dict[str, Any]:
    """Kueue's MPIJob example (``sample-mpijob.py``): a launcher and two workers."""
    image = "mpioperator/mpi-pi:openmpi"
    launcher = {**_container("mpi-launcher", image), "command": ["mpirun"],
                "args": ["-n", "2", "/home/mpiuser/pi"]}
    worker = {**_container("mpi-worker", image), "command": ["/usr/sbin/sshd"],
              "args": ["-De", "-f", "/home/mpiuser/.sshd_config"]}
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": {"name": "pi", "namespace": namespace},
            "spec": {"slotsPerWorker": 1, "sshAuthMountPath": "/home/mpiuser/.ssh",
                     # The workers (not Job pods) run until deleted; with "None" the operator
                     # leaves them after success, so the test can see them (the namespace's
                     # deletion removes them).
                     "runPolicy": {"cleanPodPolicy": "None"},
                     "mpiReplicaSpecs": {
                         "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
                         "Worker": {"replicas": 2, "template": {"spec": {"containers": [worker]}}}}}}


@pytest.fixture(scope="module")
def jobs_namespace(dev_cluster: DevCluster) -> Iterator[str]:
    """One namespace holding the JobSet, the TrainJob and the MPIJob, created together."""
    name = dev_cluster.namespace()
    for manifest in (_jobset(name), _trainjob(name), _mpijob(name)):
        dev_cluster.apply(manifest)
    yield name
    dev_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def _owned(objects: list[dict[str, Any]], kind: str, name: str) -> list[dict[str, Any]]:
    return [o for o in objects if any(r["kind"] == kind and r["name"] == name
                                      for r in o["metadata"].get("ownerReferences") or ())]


def _items(dev_cluster: DevCluster, resource: str, namespace: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = dev_cluster.get_json(resource, "-n", namespace)["items"]
    return items


def _finished(dev_cluster: DevCluster, resource: str, name: str, namespace: str, kind: str) -> dict[str, Any]:
    obj: dict[str, Any] = wait_until(
        f"{resource} {name} to be {kind}",
        lambda: o if condition(o := dev_cluster.get_json(resource, name, "-n", namespace), kind) else None,
        FINISH_S)
    return obj


def test_a_plain_jobset_completes_with_the_jobset_controllers_jobs(
        dev_cluster: DevCluster, jobs_namespace: str) -> None:
    _finished(dev_cluster, JOBSET, "plain", jobs_namespace, "Completed")
    jobs = _owned(_items(dev_cluster, "jobs", jobs_namespace), "JobSet", "plain")
    assert sorted(j["metadata"]["name"] for j in jobs) == ["plain-workers-0", "plain-workers-1"]
    assert all(condition(j, "Complete") for j in jobs)
    pods = [p for p in _items(dev_cluster, "pods", jobs_namespace)
            if p["metadata"].get("labels", {}).get("jobset.sigs.k8s.io/jobset-name") == "plain"]
    assert len(pods) == 2 and all(p["status"]["phase"] == "Succeeded" for p in pods)


def test_a_trainjob_on_torch_distributed_completes_through_its_jobset(
        dev_cluster: DevCluster, jobs_namespace: str) -> None:
    trainjob = _finished(dev_cluster, TRAINJOB, "torch", jobs_namespace, "Complete")
    (jobset,) = _owned(_items(dev_cluster, JOBSET, jobs_namespace), "TrainJob", "torch")
    assert condition(jobset, "Completed")
    # The runtime's single replicated job ("node"), one pod per node, with torch's settings.
    (replicated,) = jobset["spec"]["replicatedJobs"]
    assert replicated["name"] == "node"
    job_spec = replicated["template"]["spec"]
    assert (job_spec["parallelism"], job_spec["completions"]) == (2, 2)
    (container,) = job_spec["template"]["spec"]["containers"]
    assert container["command"] == ["torchrun", "train.py"]
    assert {"name": "PET_NNODES", "value": "2"} in container["env"]
    statuses = {s["name"]: s for s in trainjob["status"].get("jobsStatus") or ()}
    assert statuses["node"]["succeeded"] == 1


def test_an_mpijob_succeeds_with_the_mpi_operators_launcher_and_workers(
        dev_cluster: DevCluster, jobs_namespace: str) -> None:
    mpijob = _finished(dev_cluster, MPIJOB, "pi", jobs_namespace, "Succeeded")
    (launcher,) = _owned(_items(dev_cluster, "jobs", jobs_namespace), "MPIJob", "pi")
    assert launcher["metadata"]["name"] == "pi-launcher" and condition(launcher, "Complete")
    assert mpijob["status"]["replicaStatuses"]["Launcher"]["succeeded"] == 1
    workers = _owned(_items(dev_cluster, "pods", jobs_namespace), "MPIJob", "pi")
    assert sorted(p["metadata"]["name"] for p in workers) == ["pi-worker-0", "pi-worker-1"]
    assert all(p["status"]["phase"] == "Running" for p in workers)
    # Their hostfile and SSH keys, which the operator made for them.
    assert _owned(_items(dev_cluster, "configmaps", jobs_namespace), "MPIJob", "pi")
    assert _owned(_items(dev_cluster, "secrets", jobs_namespace), "MPIJob", "pi")


def test_dev_up_restarts_a_dead_operator_and_registers_its_webhooks_again(dev_cluster: DevCluster) -> None:
    """Last in this module: the Trainer controller and the MPI operator are stopped, and
    ``dev up`` starts them again on new ports, with Trainer's webhooks pointing there."""
    before = cluster.current_state()
    assert before is not None
    dead = {}
    for name in ("trainer-controller", "mpi-operator"):
        record = before.record(name)
        assert record is not None and processes.stop(record)
        dead[name] = record.pid

    result = dev_cluster.dev("up")
    assert result.returncode == 0, result.stderr
    after = cluster.current_state()
    assert after is not None
    printed = dict(line.split(": ", 1) for line in result.stdout.strip().splitlines())
    for name, pid in dead.items():
        assert f"{name} is not running; restarting it" in result.stderr
        record = after.record(name)
        assert record is not None and processes.is_running(record) and record.pid != pid
    webhook = printed["trainer-controller"].split(",")[0].removeprefix("webhook ")
    config = dev_cluster.get_json("validatingwebhookconfiguration",
                                  "pykueue-dev-trainer-controller-validating")
    assert {h["clientConfig"]["url"].rsplit("/", 1)[0] for h in config["webhooks"]} == {webhook}
    assert printed["mpi-operator"].startswith("metrics http://127.0.0.1:")
    runtime = dev_cluster.get_json("clustertrainingruntime", "torch-distributed")
    assert runtime["spec"]["mlPolicy"]["numNodes"] == 1
