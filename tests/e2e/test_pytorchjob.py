"""A PyTorchJob queued, admitted, started and finished by a running pykueue.

No training-operator runs in the dev cluster (only the PyTorchJob CRD), so the test plays
the operator: it reads the unsuspended job's templates, then writes the ``Succeeded``
condition to the status subresource as the operator would when training ends.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import NODE_LABELS, condition, cq_cpu_usage, queues, workloads_owned_by

pytestmark = pytest.mark.e2e


def _ptj(namespace: str, name: str, workers: int) -> dict[str, Any]:
    def template() -> dict[str, Any]:
        return {
            "spec": {
                "containers": [
                    {"name": "pytorch", "image": "pytorch", "resources": {"requests": {"cpu": "1"}}}
                ]
            }
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": namespace, "labels": {keys.QUEUE_NAME: "lq"}},
        "spec": {
            "runPolicy": {"suspend": True},
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template()},
                "Worker": {"replicas": workers, "template": template()},
            },
        },
    }


def _get(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = dev_cluster.get_json("pytorchjobs.kubeflow.org", name, "-n", namespace)
    return obj


def _admitted(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any] | None:
    wls = workloads_owned_by(dev_cluster, namespace, "PyTorchJob", name)
    return wls[0] if wls and condition(wls[0], "Admitted") else None


def test_pytorchjob_is_admitted_started_and_finished(dev_cluster: DevCluster, namespace: str) -> None:
    cq = queues(dev_cluster, namespace, "3")
    dev_cluster.apply(_ptj(namespace, "train", workers=2))
    dev_cluster.apply(_ptj(namespace, "second", workers=1))  # 2 CPUs: waits behind the first's 3

    wl = wait_until(
        "the PyTorchJob's Workload to be admitted", lambda: _admitted(dev_cluster, namespace, "train"), 60.0
    )
    assert wl["metadata"]["name"].startswith("pytorchjob-train-")
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("master", 1), ("worker", 2)]
    assert [p["name"] for p in wl["status"]["admission"]["podSetAssignments"]] == ["master", "worker"]

    started = wait_until(
        "the PyTorchJob to be unsuspended",
        lambda: (
            j
            if not (j := _get(dev_cluster, namespace, "train"))["spec"]["runPolicy"].get("suspend")
            else None
        ),
        30.0,
    )
    for role, podset in (("Master", "master"), ("Worker", "worker")):
        template = started["spec"]["pytorchReplicaSpecs"][role]["template"]
        assert template["spec"]["nodeSelector"] == NODE_LABELS
        assert template["metadata"]["labels"][keys.PODSET] == podset

    second = workloads_owned_by(dev_cluster, namespace, "PyTorchJob", "second")
    assert second and not condition(second[0], "Admitted"), "5 CPUs requested of 3: the second waits"
    assert _get(dev_cluster, namespace, "second")["spec"]["runPolicy"]["suspend"] is True

    # Play the training-operator: training ended well.
    status = {
        "status": {
            "conditions": [
                {
                    "type": "Succeeded",
                    "status": "True",
                    "reason": "PyTorchJobSucceeded",
                    "message": "PyTorchJob train is successfully completed.",
                }
            ]
        }
    }
    dev_cluster.kubectl(
        "patch",
        "pytorchjobs.kubeflow.org",
        "train",
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
    )
    finished = wait_until(
        "the Workload to be Finished",
        lambda: (
            w
            if condition(
                w := workloads_owned_by(dev_cluster, namespace, "PyTorchJob", "train")[0], "Finished"
            )
            else None
        ),
        30.0,
    )
    [cond] = [c for c in finished["status"]["conditions"] if c["type"] == "Finished"]
    assert (cond["reason"], cond["message"]) == ("Succeeded", "PyTorchJob train is successfully completed.")

    wait_until(
        "the freed quota to admit the second PyTorchJob",
        lambda: _admitted(dev_cluster, namespace, "second"),
        60.0,
    )
    wait_until("usage to be the second job's 2 CPUs", lambda: cq_cpu_usage(dev_cluster, cq) == "2", 30.0)
