"""ProvisioningRequest admission checks on the dev cluster's real cluster autoscaler.

Everything goes through ``kubectl apply`` as Kueue's ProvisioningRequest documentation
shows it (``site/static/examples/provisioning``): a ClusterQueue lists an AdmissionCheck of
``kueue.x-k8s.io/provisioning-request`` whose ProvisioningRequestConfig names the class,
and a Job asks for GPUs. pykueue makes the ProvisioningRequest, Kubernetes' cluster
autoscaler (kwok provider, ``pykueue dev up --autoscaler``) answers it, and the test only
reads what they did:

* ``best-effort-atomic-scale-up``: the autoscaler adds GPU nodes and marks the request
  Provisioned; the Workload, its topology assignment delayed until then, is admitted onto a
  rack of the new nodes and the Job completes; its request is deleted once it finished.
* ``check-capacity`` (with ``noRetry``) for more than any node has: Failed, retried once with
  a new request, then the check is Rejected, the Workload deactivated (its checks reset to
  Pending by the eviction, as in Kueue) and its quota free.
* deactivating a Workload whose request is still being worked on deletes the request.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.devcluster import autoscaler
from pykueue.devcluster.nodes import RACK_LABEL
from pykueue.manager.core.tas.assignment import decode_v1beta2

from .conftest import DevCluster, wait_until
from .test_tas_manager import BLOCK, KWOK_COMPLETE_DELAY, condition, workload_of

pytestmark = pytest.mark.e2e

GPU = autoscaler.GPU
SCALE_UP = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
ADDED_NODES = f"{autoscaler.NODE_GROUP_LABEL}={autoscaler.NODE_GROUP}"


@dataclass(frozen=True)
class Queue:
    namespace: str
    check: str


@pytest.fixture(scope="module")
def with_autoscaler(dev_cluster: DevCluster) -> Iterator[None]:
    result = dev_cluster.dev("up", "--autoscaler", timeout_s=600.0)
    assert result.returncode == 0, result.stderr[-2000:]
    try:
        yield
    finally:
        # The nodes it added are the autoscaler's to remove, after a minute unneeded; later
        # tests of the session expect the eight nodes they know, so they go now.
        dev_cluster.kubectl("delete", "nodes", "-l", ADDED_NODES, "--wait=false", check=False)


def _queue(dev_cluster: DevCluster, namespace: str, class_name: str, retry: dict[str, int],
           parameters: dict[str, str] | None = None) -> Iterator[Queue]:
    suffix = uuid.uuid4().hex[:6]
    topo, flavor, cq = f"e2e-gpu-topo-{suffix}", f"e2e-gpu-{suffix}", f"e2e-prov-cq-{suffix}"
    check, config = f"e2e-prov-{suffix}", f"e2e-prov-config-{suffix}"
    objects: list[dict[str, Any]] = [
        # The added nodes share their template's labels: racks and blocks tell them apart, not hostnames.
        {"apiVersion": keys.API_VERSION, "kind": "Topology", "metadata": {"name": topo},
         "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK_LABEL}]}},
        {"apiVersion": keys.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": flavor},
         "spec": {"nodeLabels": {"instance-type": "gpu"}, "topologyName": topo,
                  "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]}},
        {"apiVersion": keys.API_VERSION, "kind": "ProvisioningRequestConfig", "metadata": {"name": config},
         "spec": {"provisioningClassName": class_name, "managedResources": [GPU], "retryStrategy": retry,
                  "parameters": parameters or {}}},
        {"apiVersion": keys.API_VERSION, "kind": "AdmissionCheck", "metadata": {"name": check},
         "spec": {"controllerName": keys.PROVISIONING_REQUEST_CONTROLLER,
                  "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                                 "name": config}}},
        {"apiVersion": keys.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cq},
         "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                  "resourceGroups": [{"coveredResources": ["cpu", GPU], "flavors": [
                      {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": 32},
                                                     {"name": GPU, "nominalQuota": 16}]}]}],
                  "admissionChecksStrategy": {"admissionChecks": [{"name": check}]}}},
        {"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
         "metadata": {"name": "lq", "namespace": namespace}, "spec": {"clusterQueue": cq}},
    ]
    for obj in objects:
        dev_cluster.apply(obj)
    wait_until(f"AdmissionCheck {check} to turn Active", lambda: _active(dev_cluster, check), 60.0)
    try:
        yield Queue(namespace, check)
    finally:
        dev_cluster.kubectl("delete", "jobs,pods", "--all", "-n", namespace, "--wait=false", check=False)
        for obj in reversed(objects):
            where = ("-n", namespace) if obj["kind"] == "LocalQueue" else ()
            dev_cluster.kubectl("delete", f"{obj['kind'].lower()}s.kueue.x-k8s.io", obj["metadata"]["name"],
                                *where, "--wait=false", check=False)


def _active(dev_cluster: DevCluster, check: str) -> bool:
    ac = dev_cluster.get_json("admissionchecks.kueue.x-k8s.io", check)
    return _true(ac, "Active")


def gpu_job(name: str, pods: int, gpus: int, run_for: str = "5s") -> dict[str, Any]:
    """Kueue's sample ProvisioningRequest Job, asking for one rack of the GPU flavor."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": {keys.QUEUE_NAME: "lq"}},
        "spec": {"parallelism": pods, "completions": pods, "template": {
            "metadata": {"annotations": {keys.PODSET_REQUIRED_TOPOLOGY: RACK_LABEL,
                                         KWOK_COMPLETE_DELAY: run_for}},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {
                         "requests": {"cpu": "1", GPU: str(gpus)}, "limits": {GPU: str(gpus)}}}]}}},
    }


def _requests(dev_cluster: DevCluster, namespace: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = dev_cluster.get_json("provisioningrequests.autoscaling.x-k8s.io",
                                                       "-n", namespace)["items"]
    return items


def _notes(dev_cluster: DevCluster, namespace: str, reason: str) -> list[str]:
    events = dev_cluster.get_json("events.events.k8s.io", "-n", namespace)["items"]
    return sorted(str(e.get("note") or "") for e in events if e.get("reason") == reason)


def _true(obj: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or ())


def _check_state(wl: dict[str, Any] | None, check: str) -> dict[str, Any]:
    entries = ((wl or {}).get("status") or {}).get("admissionChecks") or ()
    return next((c for c in entries if c["name"] == check), {})


@pytest.fixture
def scale_up_queue(dev_cluster: DevCluster, namespace: str, with_autoscaler: None) -> Iterator[Queue]:
    yield from _queue(dev_cluster, namespace, SCALE_UP,
                      {"backoffLimitCount": 2, "backoffBaseSeconds": 5, "backoffMaxSeconds": 30})


@pytest.fixture
def check_capacity_queue(dev_cluster: DevCluster, namespace: str, with_autoscaler: None) -> Iterator[Queue]:
    # noRetry: the autoscaler marks a request it cannot meet Failed (else it keeps trying), so
    # that Kueue's retries apply.
    yield from _queue(dev_cluster, namespace, CHECK_CAPACITY,
                      {"backoffLimitCount": 1, "backoffBaseSeconds": 0, "backoffMaxSeconds": 30},
                      {"noRetry": "true"})


def test_the_autoscaler_adds_nodes_and_the_job_runs_on_one_rack_of_them(
        dev_cluster: DevCluster, scale_up_queue: Queue) -> None:
    ns, check = scale_up_queue.namespace, scale_up_queue.check
    dev_cluster.apply({**gpu_job("train", pods=2, gpus=3), "metadata": {
        "name": "train", "namespace": ns, "labels": {keys.QUEUE_NAME: "lq"}}})
    request = wait_until("the ProvisioningRequest of attempt 1",
                         lambda: next(iter(_requests(dev_cluster, ns)), None), 60.0)
    wl = workload_of(dev_cluster, ns, "train")
    assert wl is not None
    assert request["metadata"]["name"] == f"{wl['metadata']['name']}-{check}-1"
    assert request["spec"]["provisioningClassName"] == SCALE_UP
    assert [ps["count"] for ps in request["spec"]["podSets"]] == [2]
    template = dev_cluster.get_json("podtemplate", request["spec"]["podSets"][0]["podTemplateRef"]["name"],
                                    "-n", ns)
    assert template["template"]["spec"]["nodeSelector"] == {"instance-type": "gpu"}
    # Quota first, topology after the nodes exist: reserved with the topology request delayed.
    reserved = condition(wl, keys.WorkloadCondition.QUOTA_RESERVED).get("status") == "True"
    psa = ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or [{}]
    if reserved and condition(wl, keys.WorkloadCondition.ADMITTED).get("status") != "True":
        assert psa[0].get("delayedTopologyRequest") == "Pending" and not psa[0].get("topologyAssignment")

    def provisioned() -> bool:
        return _true(dev_cluster.get_json("provisioningrequests.autoscaling.x-k8s.io",
                                          request["metadata"]["name"], "-n", ns), "Provisioned")
    wait_until("the autoscaler to provision the request", provisioned, 120.0)
    added = dev_cluster.get_json("nodes", "-l", ADDED_NODES)["items"]
    assert len(added) >= 2, "each node has 4 GPUs: two pods of 3 need two nodes"

    def admitted() -> dict[str, Any] | None:
        current = workload_of(dev_cluster, ns, "train")
        return current if condition(current or {}, keys.WorkloadCondition.ADMITTED).get("status") == "True" \
            else None
    wl = wait_until("the Workload admitted once its check is Ready", admitted, 90.0)
    entry = _check_state(wl, check)
    assert entry["state"] == "Ready" and entry["podSetUpdates"][0]["annotations"] == {
        "autoscaling.x-k8s.io/consume-provisioning-request": request["metadata"]["name"],
        "autoscaling.x-k8s.io/provisioning-class-name": SCALE_UP}
    psa = wl["status"]["admission"]["podSetAssignments"][0]
    assignment = decode_v1beta2(psa["topologyAssignment"])
    assert assignment.levels == (BLOCK, RACK_LABEL)
    assert dict(assignment.leaf_values()) == {autoscaler.GPU_NODE_LABELS[RACK_LABEL]: 2}

    def finished() -> bool:
        job = dev_cluster.get_json("job", "train", "-n", ns)
        return any(c["type"] == "Complete" and c["status"] == "True"
                   for c in (job.get("status") or {}).get("conditions") or ())
    wait_until("the Job to complete on the added nodes", finished, 120.0)
    pods = dev_cluster.get_json("pods", "-n", ns, "-l", "job-name=train")["items"]
    added_names = {n["metadata"]["name"] for n in dev_cluster.get_json("nodes", "-l", ADDED_NODES)["items"]}
    assert {p["spec"].get("nodeName") for p in pods} <= added_names
    wait_until("the finished Workload's request to be deleted", lambda: not _requests(dev_cluster, ns), 60.0)


def test_a_request_the_autoscaler_cannot_meet_is_retried_then_rejected_and_frees_the_quota(
        dev_cluster: DevCluster, check_capacity_queue: Queue) -> None:
    ns, check = check_capacity_queue.namespace, check_capacity_queue.check
    # Five GPUs in one pod: no node has more than four.
    dev_cluster.apply({**gpu_job("too-big", pods=1, gpus=5), "metadata": {
        "name": "too-big", "namespace": ns, "labels": {keys.QUEUE_NAME: "lq"}}})

    def deactivated() -> dict[str, Any] | None:
        wl = workload_of(dev_cluster, ns, "too-big")
        return wl if wl is not None and wl["spec"].get("active") is False else None
    wl = wait_until("the Workload deactivated by its Rejected check", deactivated, 180.0)
    # As Kueue, the eviction resets its checks to Pending, saying what they were.
    def reset() -> dict[str, Any] | None:
        current = workload_of(dev_cluster, ns, "too-big")
        return current if _check_state(current, check).get("message") == \
            "Reset to Pending after eviction. Previously: Rejected" else None
    wl = wait_until("the eviction written", reset, 60.0)
    evicted = condition(wl, keys.WorkloadCondition.EVICTED)
    assert evicted.get("reason") == keys.Reason.DEACTIVATED_DUE_TO_ADMISSION_CHECK, evicted
    name = wl["metadata"]["name"]
    # Attempt 2 fails too and is past backoffLimitCount: from Pending (reset by the Retry's
    # eviction) straight to Rejected.
    created = [f'Created ProvisioningRequest: "{name}-{check}-{attempt}"' for attempt in (1, 2)]
    rejected = (f"Admission check {check} updated state from Pending to Rejected with message: "
                "CA could not find requested capacity")
    wait_until("the check's events", lambda: _notes(dev_cluster, ns, "ProvisioningRequestCreated") == created
               and rejected in _notes(dev_cluster, ns, "AdmissionCheckUpdated"), 30.0)

    def quota_free() -> bool:
        current = workload_of(dev_cluster, ns, "too-big") or {}
        return condition(current, keys.WorkloadCondition.QUOTA_RESERVED).get("status") != "True"
    wait_until("the rejected Workload's quota to be free", quota_free, 60.0)
    wait_until("its requests to be deleted", lambda: not _requests(dev_cluster, ns), 60.0)


def test_deactivating_a_workload_deletes_its_request(dev_cluster: DevCluster, scale_up_queue: Queue) -> None:
    ns = scale_up_queue.namespace
    # More GPUs than the node group's nodes have: the autoscaler keeps trying, the request stays.
    dev_cluster.apply({**gpu_job("waits", pods=1, gpus=5), "metadata": {
        "name": "waits", "namespace": ns, "labels": {keys.QUEUE_NAME: "lq"}}})
    wait_until("its ProvisioningRequest", lambda: _requests(dev_cluster, ns), 60.0)
    wl = workload_of(dev_cluster, ns, "waits")
    assert wl is not None
    name = wl["metadata"]["name"]

    def explained() -> str | None:
        # What a user asks: which check it waits on, and what the autoscaler said.
        done = subprocess.run([sys.executable, "-m", "pykueue", "explain", "-n", ns, "job/waits",
                               f"--kubeconfig={dev_cluster.kubeconfig}"], capture_output=True, text=True,
                              check=False, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout if "NotProvisioned (CapacityIsNotFound)" in done.stdout else None
    said = wait_until("explain to report the autoscaler's answer", explained, 60.0)
    assert f"Admission check {scale_up_queue.check}: Pending" in said
    assert f"ProvisioningRequest {name}-{scale_up_queue.check}-1 (attempt 1)" in said
    dev_cluster.kubectl("patch", "workloads.kueue.x-k8s.io", wl["metadata"]["name"], "-n", ns, "--type=merge",
                        "-p", '{"spec":{"active":false}}')
    wait_until("the evicted Workload's request to be deleted", lambda: not _requests(dev_cluster, ns), 60.0)
