"""manageJobsWithoutQueueName on a selected namespace, with a Configuration of the test's own.

As in Kueue, only the leader reconciles jobs. So the dev cluster's pykueue is stopped for
the test (SIGTERM: it releases its Lease) and replaced by a ``pykueue run`` with the same
flags (the webhook keeps its registered address) whose Configuration adds
manageJobsWithoutQueueName and a managedJobsNamespaceSelector matching one label; it takes
the Lease, and the Workloads of queue-less jobs are its doing. Afterwards ``dev up`` starts
the dev cluster's pykueue again. Objects are created already suspended/gated: the admission
webhook's part is not under test here.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import keys
from pykueue.devcluster import processes

from .conftest import REPO, DevCluster, dev_pykueue, wait_until
from .jobs_common import condition, queues, workloads_owned_by
from .test_leaderworkerset import _lws, adopted, gated, pods_of
from .test_queueing import _stop, _wait_ready

pytestmark = pytest.mark.e2e

SELECT_LABEL = "pykueue-e2e/manage-without-queue-name"


@pytest.fixture
def selector_value() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture
def mjwqn_leader(dev_cluster: DevCluster, tmp_path: Path, selector_value: str) -> Iterator[None]:
    """The dev pykueue swapped for one managing queue-less jobs in selected namespaces."""
    record, argv = dev_pykueue()
    flags = dict(itertools.pairwise(argv))
    config = yaml.safe_load(Path(flags["--config"]).read_text())
    config["manageJobsWithoutQueueName"] = True
    config["managedJobsNamespaceSelector"] = {"matchLabels": {SELECT_LABEL: selector_value}}
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    argv[argv.index("--config") + 1] = str(config_path)
    processes.stop(record)
    log_path = tmp_path / "manager.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_ready(proc, f"http://{flags['--health-probe-bind-address']}/readyz", log_path)
        wait_until("the test's manager to lead", lambda: "became leader" in log_path.read_text(), 60.0)
        yield
    finally:
        code = _stop(proc)
        print(log_path.read_text()[-4000:], file=sys.stderr)
        result = dev_cluster.dev("up")
        assert result.returncode == 0, f"dev up did not restore pykueue: {result.stderr[-2000:]}"
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
    dev_cluster: DevCluster, namespace: str, selector_value: str, mjwqn_leader: None
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
    dev_cluster: DevCluster, namespace: str, selector_value: str, mjwqn_leader: None
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
