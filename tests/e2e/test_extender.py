"""The TAS extender inside a real kube-scheduler, on the dev cluster.

A second kube-scheduler serves the profile ``pykueue-tas-scheduler`` with the shipped
configuration (``manifests/scheduler``) and calls ``pykueue extender`` running in a
subprocess on loopback (``devcluster.tas_scheduler``). The dev cluster's default
scheduler is left alone, so other tests on the same cluster are not affected.

Covered: pods without Kueue markers schedule normally through the extender-wired
scheduler; an unreachable extender fails pods closed (``ignorable: false``) and they bind
once it is back; a TAS PodSet admitted to one rack lands on exactly the assigned nodes;
after one of those nodes is deleted and marked unhealthy on the Workload (as the queue
manager's node controller does, ``status.unhealthyNodes``), the Job's replacement pods
bind inside the same rack and the extender rewrites the assignment without evicting the
Workload. The last two need the Kueue CRDs (Workload, ResourceFlavor, Topology) that
``dev up`` installs from ``manifests/crds``.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from api import keys
from devcluster.tas_scheduler import Started, start_extender, start_tas_scheduler
from manager.core.tas.assignment import DomainAssignment, TopologyAssignment, decode_v1beta2, encode_v1beta2

from .conftest import DevCluster, wait_until

pytestmark = pytest.mark.e2e

# This module's own scheduler profile and extender: the dev cluster's TAS scheduler serves
# the shipped "pykueue-tas-scheduler" profile, and these tests stop their extender.
TAS_SCHEDULER = "pykueue-tas-scheduler-e2e"
BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
RACK_R1 = ("kwok-node-2", "kwok-node-3")  # rack r1 of the dev cluster (block b0)
FAILED, SURVIVOR = RACK_R1
KUEUE_CRDS = ("workloads.kueue.x-k8s.io", "resourceflavors.kueue.x-k8s.io", "topologies.kueue.x-k8s.io")
# kwok completes Job-owned pods after this annotation's delay (1 s when absent).
KWOK_COMPLETE_DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"


@dataclass
class TasScheduling:
    """The extender and the scheduler wired to it; the extender can be restarted in place."""

    work_dir: Path
    extender: Started
    scheduler: Started

    def stop_extender(self) -> None:
        self.extender.stop()

    def restart_extender(self) -> None:
        port = urlparse(self.extender.url).port
        self.extender = start_extender(self.work_dir, port=port, profile=TAS_SCHEDULER)


@pytest.fixture(scope="module")
def tas(dev_cluster: DevCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TasScheduling]:
    work_dir = tmp_path_factory.mktemp("tas-scheduler")
    extender = start_extender(work_dir, profile=TAS_SCHEDULER)
    try:
        assert extender.tls is not None
        scheduler = start_tas_scheduler(work_dir, extender.url, extender.tls, TAS_SCHEDULER)
    except BaseException:
        extender.stop()
        raise
    wiring = TasScheduling(work_dir, extender, scheduler)
    try:
        yield wiring
    finally:
        wiring.scheduler.stop()
        wiring.extender.stop()


def plain_pod(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "plain"}},
        "spec": {
            "schedulerName": TAS_SCHEDULER,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m"}}}],
        },
    }


def pods(dev_cluster: DevCluster, namespace: str, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = dev_cluster.get_json("pods", "-n", namespace, "-l", selector)["items"]
    return items


def node_of(pod: dict[str, Any]) -> str:
    return str(pod["spec"].get("nodeName") or "")


def scheduled_by(dev_cluster: DevCluster, namespace: str, pod: str) -> set[str]:
    """Which schedulers reported a Scheduled event for the pod."""
    events = dev_cluster.get_json("events.v1.events.k8s.io", "-n", namespace,
                                  "--field-selector", f"regarding.name={pod}")["items"]
    return {str(e.get("reportingController")) for e in events if e.get("reason") == "Scheduled"}


def test_unmanaged_pods_schedule_through_the_extender_wired_scheduler(
    dev_cluster: DevCluster, namespace: str, tas: TasScheduling
) -> None:
    names = [f"plain-{i}" for i in range(6)]
    for name in names:
        dev_cluster.apply(plain_pod(name, namespace))

    def all_running() -> list[dict[str, Any]] | None:
        items = pods(dev_cluster, namespace, "app=plain")
        ok = len(items) == len(names) and all(node_of(p) and p["status"].get("phase") == "Running"
                                               for p in items)
        return items if ok else None

    items = wait_until("6 plain pods bound and Running", all_running, 60.0)
    assert {node_of(p) for p in items} <= {f"kwok-node-{i}" for i in range(8)}

    # The Scheduled events name the TAS profile: these pods went through the extender.
    def all_scheduled_by_tas() -> bool:
        return all(TAS_SCHEDULER in scheduled_by(dev_cluster, namespace, name) for name in names)

    wait_until("Scheduled events from the TAS profile", all_scheduled_by_tas, 30.0)


def test_unreachable_extender_fails_closed_and_pods_bind_when_it_is_back(
    dev_cluster: DevCluster, namespace: str, tas: TasScheduling
) -> None:
    tas.stop_extender()
    try:
        dev_cluster.apply(plain_pod("waits", namespace))

        def failed_scheduling() -> bool:
            events = dev_cluster.get_json("events.v1.events.k8s.io", "-n", namespace,
                                          "--field-selector", "regarding.name=waits")["items"]
            return any(e.get("reason") == "FailedScheduling" and e.get("reportingController") == TAS_SCHEDULER
                       for e in events)

        wait_until("FailedScheduling of the pod while the extender is down", failed_scheduling, 60.0)
        # Not ignorable: the scheduler did not place the pod without the extender.
        assert node_of(dev_cluster.get_json("pod", "waits", "-n", namespace)) == ""
    finally:
        tas.restart_extender()
    wait_until("the pod to bind once the extender is back",
               lambda: node_of(dev_cluster.get_json("pod", "waits", "-n", namespace)), 90.0)


# -- a TAS-admitted Job and the replacement of a failed node -----------------------------


def require_kueue_crds(dev_cluster: DevCluster) -> None:
    missing = [crd for crd in KUEUE_CRDS
               if dev_cluster.kubectl("get", "crd", crd, check=False).returncode != 0]
    if missing:
        pytest.fail(f"the Kueue CRDs are not installed ({', '.join(missing)}); `pykueue dev up` installs "
                    "them from manifests/crds", pytrace=False)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(kind: str, reason: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": "True", "reason": reason, "message": message, "lastTransitionTime": now()}


def topology(name: str) -> dict[str, Any]:
    return {"apiVersion": keys.API_VERSION, "kind": "Topology", "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": level} for level in (BLOCK, RACK, keys.HOSTNAME_LABEL)]}}


def flavor(name: str, topology_name: str) -> dict[str, Any]:
    return {"apiVersion": keys.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": {"nodeLabels": {"instance-type": "on-demand"}, "topologyName": topology_name}}


def pod_template_spec() -> dict[str, Any]:
    return {
        "schedulerName": TAS_SCHEDULER,
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "500m"}}}],
    }


def workload(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "queueName": "e2e-lq",
            "podSets": [{
                "name": "main",
                "count": 4,
                "topologyRequest": {"required": RACK},
                "template": {"spec": pod_template_spec()},
            }],
        },
    }


def admission_status(flavor_name: str, nodes: dict[str, int]) -> dict[str, Any]:
    """What the queue manager writes when it admits the PodSet with this placement."""
    domains = tuple(DomainAssignment((node,), count) for node, count in sorted(nodes.items()))
    assignment = TopologyAssignment((keys.HOSTNAME_LABEL,), domains)
    return {
        "admission": {
            "clusterQueue": "e2e-cq",
            "podSetAssignments": [{
                "name": "main",
                "flavors": {"cpu": flavor_name},
                "resourceUsage": {"cpu": "2"},
                "count": 4,
                "topologyAssignment": encode_v1beta2(assignment),
            }],
        },
        "conditions": [
            condition(keys.WorkloadCondition.QUOTA_RESERVED, "QuotaReserved", "Quota reserved in e2e-cq"),
            condition(keys.WorkloadCondition.ADMITTED, "Admitted", "The workload is admitted"),
        ],
    }


def job(name: str, namespace: str, workload_name: str) -> dict[str, Any]:
    """A Job whose pod template carries what the manager stamps at admission."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "parallelism": 4,
            "completions": 4,
            "completionMode": "Indexed",
            "backoffLimit": 6,
            # A pod lost with its node is replaced without counting as a failure.
            "podFailurePolicy": {"rules": [{"action": "Ignore",
                                            "onPodConditions": [{"type": "DisruptionTarget"}]}]},
            "template": {
                "metadata": {
                    "labels": {keys.PODSET: "main", keys.TAS_LABEL: "true", "e2e-job": name},
                    "annotations": {keys.WORKLOAD_ANNOTATION: workload_name,
                                    keys.PODSET_REQUIRED_TOPOLOGY: RACK,
                                    KWOK_COMPLETE_DELAY: "1h"},
                },
                "spec": pod_template_spec(),
            },
        },
    }


def patch_status(dev_cluster: DevCluster, namespace: str, name: str, status: dict[str, Any]) -> None:
    dev_cluster.kubectl("patch", "workloads.kueue.x-k8s.io", name, "-n", namespace, "--subresource=status",
                        "--type=merge", "-p", json.dumps({"status": status}))


def live_pods(dev_cluster: DevCluster, namespace: str, job_name: str) -> list[dict[str, Any]]:
    return [p for p in pods(dev_cluster, namespace, f"e2e-job={job_name}")
            if not p["metadata"].get("deletionTimestamp")
            and p["status"].get("phase") not in ("Succeeded", "Failed")]


def assigned_nodes(wl: dict[str, Any]) -> dict[str, int]:
    raw = wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    return {d.values[-1]: d.count for d in decode_v1beta2(raw).domains}


def test_tas_job_lands_on_its_rack_and_a_failed_node_is_replaced_inside_it(
    dev_cluster: DevCluster, namespace: str, tas: TasScheduling
) -> None:
    require_kueue_crds(dev_cluster)
    suffix = uuid.uuid4().hex[:6]
    topo_name, flavor_name, wl_name, job_name = f"e2e-topo-{suffix}", f"e2e-tas-{suffix}", "job-tas", "tas"
    dev_cluster.apply(topology(topo_name))
    dev_cluster.apply(flavor(flavor_name, topo_name))
    try:
        dev_cluster.apply(workload(wl_name, namespace))
        admitted = admission_status(flavor_name, dict.fromkeys(RACK_R1, 2))
        patch_status(dev_cluster, namespace, wl_name, admitted)
        dev_cluster.apply(job(job_name, namespace, wl_name))

        def placed() -> list[dict[str, Any]] | None:
            items = live_pods(dev_cluster, namespace, job_name)
            return items if len(items) == 4 and all(node_of(p) for p in items) else None

        first = wait_until("4 TAS pods bound", placed, 90.0)
        # Exactly the assignment: two pods on each node of rack r1.
        assert Counter(node_of(p) for p in first) == Counter(dict.fromkeys(RACK_R1, 2))

        try:
            dev_cluster.kubectl("delete", "node", FAILED)
            # The queue manager's node controller marks the lost node on the Workload.
            patch_status(dev_cluster, namespace, wl_name, {"unhealthyNodes": [{"name": FAILED}]})
            lost = {p["metadata"]["uid"] for p in first if node_of(p) == FAILED}

            def replaced() -> list[dict[str, Any]] | None:
                # Pod GC removes the pods of the deleted node; the Job recreates them.
                items = live_pods(dev_cluster, namespace, job_name)
                fresh = [p for p in items if p["metadata"]["uid"] not in lost]
                ok = len(items) == 4 and len(fresh) == 4 and all(node_of(p) for p in items)
                return items if ok else None

            after = wait_until("the lost pods to be recreated and bound", replaced, 180.0)
            assert {node_of(p) for p in after} == {SURVIVOR}  # inside rack r1, on its healthy node

            wl = dev_cluster.get_json("workloads.kueue.x-k8s.io", wl_name, "-n", namespace)
            assert assigned_nodes(wl) == {SURVIVOR: 4}
            assert not wl["status"].get("unhealthyNodes")
            conditions = {c["type"]: c["status"] for c in wl["status"].get("conditions") or []}
            assert conditions.get(keys.WorkloadCondition.EVICTED) != "True"
            assert conditions.get(keys.WorkloadCondition.ADMITTED) == "True"
        finally:
            restored = dev_cluster.dev("up")
            assert restored.returncode == 0, restored.stderr
    finally:
        for kind, name, where in (("job", job_name, ("-n", namespace)),
                                  ("resourceflavors.kueue.x-k8s.io", flavor_name, ()),
                                  ("topologies.kueue.x-k8s.io", topo_name, ())):
            dev_cluster.kubectl("delete", kind, name, *where, "--wait=false", check=False)
