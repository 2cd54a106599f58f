"""Queue statuses as Kueue shows them, with Kueue's documented example applied by kubectl.

Kueue's sample AdmissionCheck names a controller nothing in the dev cluster runs, so its
ClusterQueue stays inactive (with Kueue's reason and message), its LocalQueue too, and a Job
sent there holds no quota until the test, playing that controller, marks the check Active.
A Workload that can never fit stays pending with its total requests in its status, and the
visibility API answers for it at v1beta1 as at v1beta2.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import FLAVOR, NAMESPACE_LABEL, condition, remove_queues, workloads_owned_by
from .test_admission_checks import mark_check_active

pytestmark = pytest.mark.e2e

SAMPLE = Path(__file__).parent / "manifests" / "kueue-examples" / "sample-admission-check.yaml"
SAMPLE_CHECK = "prov-test"  # the names the example uses
SAMPLE_CONFIG = "prov-test-config"
VISIBILITY = "/apis/visibility.kueue.x-k8s.io"


def _queues(dev_cluster: DevCluster, namespace: str, cpu: str, check: str | None = None) -> str:
    cq = f"cq-{namespace}"
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: namespace}},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}
    if check:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": check}]}
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ResourceFlavor",
                       "metadata": {"name": FLAVOR}})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cq},
                       "spec": spec})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
                       "metadata": {"name": "lq", "namespace": namespace}, "spec": {"clusterQueue": cq}})
    return cq


@pytest.fixture
def cluster_queue(dev_cluster: DevCluster, namespace: str) -> Iterator[str]:
    """The ClusterQueue's name; the fixture deletes it (and the example's objects) afterwards."""
    cq = f"cq-{namespace}"
    try:
        yield cq
    finally:
        remove_queues(dev_cluster, namespace, cq)
        dev_cluster.kubectl("delete", "-f", str(SAMPLE), "--ignore-not-found", "--wait=false", check=False)


def _job(name: str, cpu: str) -> str:
    return json.dumps({"apiVersion": "batch/v1", "kind": "Job",
                       "metadata": {"name": name, "labels": {keys.QUEUE_NAME: "lq"}},
                       "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                           {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}}})


def _active(obj: dict[str, Any]) -> dict[str, Any] | None:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return next((c for c in conditions if c.get("type") == "Active"), None)


def _workload(dev_cluster: DevCluster, namespace: str, job: str) -> dict[str, Any] | None:
    found = workloads_owned_by(dev_cluster, namespace, "Job", job)
    return found[0] if found else None


def test_an_unserved_admission_check_keeps_its_queues_inactive(dev_cluster: DevCluster, namespace: str,
                                                                cluster_queue: str) -> None:
    dev_cluster.kubectl("apply", "-f", str(SAMPLE))
    _queues(dev_cluster, namespace, "2", check=SAMPLE_CHECK)

    def cq_condition() -> dict[str, Any] | None:
        c = _active(dev_cluster.get_json("clusterqueues.kueue.x-k8s.io", cluster_queue))
        return c if c is not None and c["status"] == "False" else None

    c = wait_until("the ClusterQueue inactive", cq_condition, 60.0)
    assert (c["reason"], c["message"]) == (
        "AdmissionCheckInactive",
        "Can't admit new workloads: references inactive AdmissionCheck(s): prov-test.")

    def lq_condition() -> dict[str, Any] | None:
        c = _active(dev_cluster.get_json("localqueues.kueue.x-k8s.io", "lq", "-n", namespace))
        return c if c is not None and c["status"] == "False" else None

    c = wait_until("the LocalQueue inactive", lq_condition, 60.0)
    assert (c["reason"], c["message"]) == ("ClusterQueueIsInactive",
                                           "Can't submit new workloads to clusterQueue")

    dev_cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=_job("held", "1"))

    def told_why() -> dict[str, Any] | None:
        wl = _workload(dev_cluster, namespace, "held")
        reserved = next((x for x in (wl or {}).get("status", {}).get("conditions") or ()
                         if x.get("type") == "QuotaReserved"), None)
        return wl if reserved is not None and reserved["status"] == "False" else None

    wl = wait_until("the Workload told why it waits", told_why, 60.0)
    assert "admission" not in wl["status"]
    assert "ClusterQueue " + cluster_queue + " is inactive" in json.dumps(wl["status"]["conditions"])

    def counts() -> tuple[int, int]:
        status = dev_cluster.get_json("clusterqueues.kueue.x-k8s.io", cluster_queue)["status"]
        return status.get("pendingWorkloads"), status.get("reservingWorkloads")

    wait_until("the ClusterQueue counting one pending, none reserving", lambda: counts() == (1, 0), 30.0)

    # What the check's controller would do once it runs: the queue opens and admits.
    mark_check_active(dev_cluster, SAMPLE_CHECK)
    wait_until("the ClusterQueue active", lambda: (_active(dev_cluster.get_json(
        "clusterqueues.kueue.x-k8s.io", cluster_queue)) or {}).get("reason") == "Ready", 60.0)
    wait_until("quota reserved for the held Job",
               lambda: condition(_workload(dev_cluster, namespace, "held") or {}, "QuotaReserved"), 60.0)


def test_a_pending_workload_shows_its_requests_and_both_visibility_versions_list_it(
        dev_cluster: DevCluster, namespace: str, cluster_queue: str) -> None:
    _queues(dev_cluster, namespace, "1")
    name = f"big-{uuid.uuid4().hex[:4]}"
    dev_cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=_job(name, "1500m"))

    def with_requests() -> dict[str, Any] | None:
        wl = _workload(dev_cluster, namespace, name)
        return wl if wl is not None and wl.get("status", {}).get("resourceRequests") else None

    wl = wait_until("the pending Workload's resourceRequests", with_requests, 60.0)
    assert wl["status"]["resourceRequests"] == [{"name": "main", "resources": {"cpu": "1500m"}}]
    assert "admission" not in wl["status"]

    answers = {}
    for version in ("v1beta2", "v1beta1"):
        cq_path = f"{VISIBILITY}/{version}/clusterqueues/{cluster_queue}/pendingworkloads"
        lq_path = f"{VISIBILITY}/{version}/namespaces/{namespace}/localqueues/lq/pendingworkloads"
        answers[version] = [json.loads(dev_cluster.kubectl("get", "--raw", p).stdout)
                            for p in (cq_path, lq_path)]
    for old, new in zip(answers["v1beta1"], answers["v1beta2"], strict=True):
        assert old["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta1"
        assert new["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
        assert [i["metadata"]["name"] for i in old["items"]] == [wl["metadata"]["name"]]
        assert old["items"] == new["items"]
