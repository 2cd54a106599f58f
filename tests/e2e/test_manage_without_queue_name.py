"""manageJobsWithoutQueueName on a selected namespace, with a second manager's Configuration.

The dev cluster's pykueue runs without manageJobsWithoutQueueName and holds the Lease. A
second ``pykueue manager`` started here with manageJobsWithoutQueueName and a
managedJobsNamespaceSelector matching one label stays a standby (it never schedules) but
reconciles jobs on every replica, so the Workloads it creates for queue-less jobs are its
own doing, while the leader schedules them. Objects are created already suspended/gated:
the admission webhook's part is not under test here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api import keys
from devcluster.addons import PYKUEUE_NAMESPACE
from devcluster.ports import free_ports

from .conftest import REPO, DevCluster, wait_until
from .jobs_common import condition, queues, workloads_owned_by
from .test_leaderworkerset import _lws, adopted, gated, pods_of
from .test_queueing import _stop, _wait_ready

pytestmark = pytest.mark.e2e

SELECT_LABEL = "pykueue-e2e/manage-without-queue-name"


@pytest.fixture
def selector_value() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture
def standby(dev_cluster: DevCluster, tmp_path: Path, selector_value: str) -> Iterator[None]:
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": PYKUEUE_NAMESPACE,
        "manageJobsWithoutQueueName": True,
        "managedJobsNamespaceSelector": {"matchLabels": {SELECT_LABEL: selector_value}},
        "integrations": {"frameworks": ["batch/job", "leaderworkerset.x-k8s.io/leaderworkerset"]},
    }
    config_path = tmp_path / "config.yaml"
    config_path.write_text(json.dumps(config))
    metrics_port, health_port = free_ports(2)
    log_path = tmp_path / "standby.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pykueue",
                "manager",
                "--kubeconfig",
                str(dev_cluster.kubeconfig),
                "--config",
                str(config_path),
                "--metrics-bind-address",
                f"127.0.0.1:{metrics_port}",
                "--health-probe-bind-address",
                f"127.0.0.1:{health_port}",
            ],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_ready(proc, f"http://127.0.0.1:{health_port}/readyz", log_path)
        yield
    finally:
        code = _stop(proc)
        print(log_path.read_text()[-4000:], file=sys.stderr)
    assert code == 0


def _job(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "suspend": True,
            "template": {
                "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "1s"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                },
            },
        },
    }


def test_queue_less_jobs_in_selected_namespaces_wait_until_given_a_queue(
    dev_cluster: DevCluster, namespace: str, selector_value: str, standby: None
) -> None:
    dev_cluster.kubectl("label", "namespace", namespace, f"{SELECT_LABEL}={selector_value}")
    other = dev_cluster.namespace()
    try:
        queues(dev_cluster, namespace, "2")
        dev_cluster.apply(_job(other, "ignored"))
        dev_cluster.apply(_job(namespace, "free"))

        [wl] = wait_until(
            "a Workload for the queue-less Job",
            lambda: workloads_owned_by(dev_cluster, namespace, "Job", "free"),
            60.0,
        )
        assert wl["spec"].get("queueName", "") == ""
        assert not condition(wl, "QuotaReserved")
        assert dev_cluster.get_json("job", "free", "-n", namespace)["spec"]["suspend"] is True
        # Created before "free" and reconciled by the same queue: an unselected namespace is left alone.
        assert workloads_owned_by(dev_cluster, other, "Job", "ignored") == []

        dev_cluster.kubectl("label", "job", "free", "-n", namespace, f"{keys.QUEUE_NAME}=lq")
        wait_until(
            "the Workload to follow the queue name and be admitted",
            lambda: (
                (w := workloads_owned_by(dev_cluster, namespace, "Job", "free"))
                and w[0]["spec"].get("queueName") == "lq"
                and condition(w[0], "Admitted")
            ),
            60.0,
        )
        wait_until(
            "the Job to start",
            lambda: not dev_cluster.get_json("job", "free", "-n", namespace)["spec"].get("suspend"),
            30.0,
        )
    finally:
        dev_cluster.kubectl("delete", "namespace", other, "--wait=false", check=False)


def test_queue_less_lws_gets_group_workloads_and_its_pods_stay_gated(
    dev_cluster: DevCluster, namespace: str, selector_value: str, standby: None
) -> None:
    """Kueue v0.12's fix (#4808): one Workload per group, none per pod, no pod starts."""
    dev_cluster.kubectl("label", "namespace", namespace, f"{SELECT_LABEL}={selector_value}")
    queues(dev_cluster, namespace, "8")
    dev_cluster.apply(_lws(namespace, "srv", None))
    wls = wait_until(
        "one Workload per group",
        lambda: (
            w if len(w := workloads_owned_by(dev_cluster, namespace, "LeaderWorkerSet", "srv")) == 2 else None
        ),
        60.0,
    )
    assert [w["spec"].get("queueName", "") for w in wls] == ["", ""]
    for group in (0, 1):  # the LWS controller creates the group pods
        pods = wait_until(
            f"group {group}'s pods to be adopted",
            lambda g=group: p if adopted(p := pods_of(dev_cluster, namespace, "srv", g)) else None,
            60.0,
        )
        assert all(gated(p) for p in pods), "no queue, no quota: nothing runs"
        assert {p["metadata"]["annotations"][keys.PREBUILT_WORKLOAD_NAME] for p in pods} == {
            w["metadata"]["name"]
            for w in wls
            if w["metadata"]["annotations"][keys.COMPONENT_WORKLOAD_INDEX] == str(group)
        }
    all_workloads = dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]
    assert len(all_workloads) == 2, "no stray single-pod Workloads"
