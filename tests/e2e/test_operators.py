"""The dev cluster runs the real Kubeflow training operator, LWS, JobSet, Kubeflow Trainer
and MPI operator.

Smoke checks of what ``dev up`` promises: every operator runs as a recorded process and
answers its readiness probe, the CRDs served are their releases' own (not stand-ins that
accept anything), and a queued PyTorchJob goes all the way: pykueue admits it, the
training operator creates its pods (the test creates none), kwok completes them and the
operator marks the job Succeeded, which finishes its Workload. (JobSets, TrainJobs and
MPIJobs run in ``test_jobset_trainjob_mpijob.py``.)
"""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys
from pykueue.devcluster import cluster, operators
from pykueue.devcluster.health import http_ok
from pykueue.devcluster.processes import is_running

from .conftest import DevCluster, wait_until
from .jobs_common import NODE_LABELS, condition, queues, workloads_owned_by

pytestmark = pytest.mark.e2e


def test_every_operator_runs_and_is_ready(dev_cluster: DevCluster) -> None:
    state = cluster.current_state()
    assert state is not None
    layout = cluster.layout()
    for operator in operators.OPERATORS:
        record = state.record(operator.name)
        assert record is not None, f"{operator.name} is not in the dev cluster's processes"
        assert is_running(record), f"{operator.name} is not running; log {record.log}"
        ports = operators.read_ports(operators.files_of(layout, operator))
        assert ports is not None
        assert http_ok(operators.endpoints_of(operator, ports).health)


def _crd_schema(dev_cluster: DevCluster, name: str, version_name: str = "v1") -> dict[str, Any]:
    crd = dev_cluster.get_json("customresourcedefinition", name)
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == version_name]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def test_the_crds_are_the_operators_own(dev_cluster: DevCluster) -> None:
    ptj = _crd_schema(dev_cluster, "pytorchjobs.kubeflow.org")["properties"]["spec"]
    assert "suspend" in ptj["properties"]["runPolicy"]["properties"]
    assert "pytorchReplicaSpecs" in ptj["required"]
    lws = _crd_schema(dev_cluster, "leaderworkersets.leaderworkerset.x-k8s.io")["properties"]["spec"]
    assert "size" in lws["properties"]["leaderWorkerTemplate"]["properties"]
    assert "x-kubernetes-preserve-unknown-fields" not in lws
    jobset = _crd_schema(dev_cluster, "jobsets.jobset.x-k8s.io", "v1alpha2")["properties"]["spec"]
    assert {"replicatedJobs", "suspend", "managedBy"} <= set(jobset["properties"])
    trainjob = _crd_schema(dev_cluster, "trainjobs.trainer.kubeflow.org", "v1alpha1")["properties"]["spec"]
    assert "runtimeRef" in trainjob["required"] and "suspend" in trainjob["properties"]
    mpijob = _crd_schema(dev_cluster, "mpijobs.kubeflow.org", "v2beta1")["properties"]["spec"]
    assert "mpiReplicaSpecs" in mpijob["required"]
    assert "suspend" in mpijob["properties"]["runPolicy"]["properties"]


def _pytorchjob(namespace: str, name: str) -> dict[str, Any]:
    def replica() -> dict[str, Any]:
        return {"replicas": 1, "restartPolicy": "OnFailure", "template": {
            "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "3s"}},
            "spec": {"containers": [{"name": "pytorch", "image": "pytorch",
                                     "resources": {"requests": {"cpu": "1"}}}]}}}

    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": namespace, "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {"pytorchReplicaSpecs": {"Master": replica(), "Worker": replica()}}}


def test_a_queued_pytorchjob_runs_to_succeeded_with_the_operators_pods(
        dev_cluster: DevCluster, namespace: str) -> None:
    queues(dev_cluster, namespace, "2")
    dev_cluster.apply(_pytorchjob(namespace, "train"))

    wait_until("the PyTorchJob's Workload to be admitted",
               lambda: (w := workloads_owned_by(dev_cluster, namespace, "PyTorchJob", "train"))
               and condition(w[0], "Admitted"), 60.0)

    def operator_pods() -> list[dict[str, Any]]:
        pods: list[dict[str, Any]] = dev_cluster.get_json("pods", "-n", namespace)["items"]
        return [p for p in pods if any(r["kind"] == "PyTorchJob" and r["name"] == "train"
                                       for r in p["metadata"].get("ownerReferences") or ())]

    pods = wait_until("the training operator to create the master and worker pods",
                      lambda: p if len(p := operator_pods()) == 2 else None, 60.0)
    for pod in pods:
        # Started with the admitted flavor's node labels, as pykueue injected them.
        assert NODE_LABELS.items() <= (pod["spec"].get("nodeSelector") or {}).items()

    wait_until("the PyTorchJob to succeed",
               lambda: condition(dev_cluster.get_json("pytorchjobs.kubeflow.org", "train", "-n", namespace),
                                 "Succeeded"), 90.0)
    wait_until("its Workload to finish",
               lambda: condition(workloads_owned_by(dev_cluster, namespace, "PyTorchJob", "train")[0],
                                 "Finished"), 60.0)
    assert all(p["status"].get("phase") == "Succeeded" for p in operator_pods())
