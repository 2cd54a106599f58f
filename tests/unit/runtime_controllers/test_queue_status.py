"""ClusterQueue/LocalQueue status derived from the core."""

from __future__ import annotations

from typing import Any

from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.runtime.controllers.queue_status import (
    cluster_queue_status,
    local_queue_status,
    same_status,
)


def _objects() -> list[dict[str, Any]]:
    api = "kueue.x-k8s.io/v1beta2"
    objs: list[dict[str, Any]] = [
        {"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"name": "on-demand"}},
        {"apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
             {"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": "2"}]}]}]}},
        {"apiVersion": api, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
         "spec": {"clusterQueue": "cq"}},
    ]
    container = {"name": "c", "resources": {"requests": {"cpu": "1"}}}
    for i in range(3):
        objs.append({"apiVersion": api, "kind": "Workload",
                     "metadata": {"name": f"w{i}", "namespace": "ns",
                                  "creationTimestamp": f"2026-01-01T00:00:0{i}Z"},
                     "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {
                         "spec": {"containers": [container]}}}]}})
    return objs


def test_two_of_three_admitted_within_quota() -> None:
    core = QueueingCore()
    for obj in _objects():
        core.apply(obj)
    core.run_until_idle()
    cq = cluster_queue_status(core, "cq")
    assert (cq["pendingWorkloads"], cq["admittedWorkloads"], cq["reservingWorkloads"]) == (1, 2, 2)
    assert cq["flavorsUsage"] == [{"name": "on-demand", "resources": [{"name": "cpu", "total": "2"}]}]
    lq = local_queue_status(core, "ns", "lq")
    assert (lq["pendingWorkloads"], lq["admittedWorkloads"]) == (1, 2)
    core.finish("ns/w0")
    core.finish("ns/w1")
    core.run_until_idle()
    core.finish("ns/w2")
    cq = cluster_queue_status(core, "cq")
    assert cq["flavorsUsage"] == [{"name": "on-demand", "resources": [{"name": "cpu", "total": "0"}]}]
    assert cq["pendingWorkloads"] == 0


def test_same_status_ignores_condition_times() -> None:
    a = {"pendingWorkloads": 1, "conditions": [{"type": "Active", "lastTransitionTime": "t1"}]}
    b = {"pendingWorkloads": 1, "conditions": [{"type": "Active", "lastTransitionTime": "t2"}]}
    assert same_status(a, b)
    assert not same_status(a, {**b, "pendingWorkloads": 2})


def test_queues_of_an_unserved_check_are_inactive_with_kueue_s_words() -> None:
    core = QueueingCore(CoreConfig(unreported_checks_active=False))
    objs = _objects()
    objs[1]["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "prov-test"}]}
    objs.insert(0, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                    "metadata": {"name": "prov-test"},
                    "spec": {"controllerName": "ProvisioningRequestController"}})
    for obj in objs:
        core.apply(obj)
    core.run_until_idle()
    cq, lq = cluster_queue_status(core, "cq"), local_queue_status(core, "ns", "lq")
    assert cq["conditions"] == [{"type": "Active", "status": "False", "reason": "AdmissionCheckInactive",
                                 "message": "Can't admit new workloads: references inactive "
                                            "AdmissionCheck(s): prov-test."}]
    assert (cq["pendingWorkloads"], cq["reservingWorkloads"]) == (3, 0)
    assert lq["conditions"] == [{"type": "Active", "status": "False", "reason": "ClusterQueueIsInactive",
                                 "message": "Can't submit new workloads to clusterQueue"}]


def test_a_stopped_local_queue_counts_nothing_pending() -> None:
    core = QueueingCore()
    objs = _objects()
    objs[2]["spec"]["stopPolicy"] = "Hold"
    for obj in objs:
        core.apply(obj)
    core.run_until_idle()
    lq = local_queue_status(core, "ns", "lq")
    assert lq["pendingWorkloads"] == 0
    assert lq["conditions"] == [{"type": "Active", "status": "False", "reason": "Stopped",
                                 "message": "LocalQueue is stopped"}]
    assert cluster_queue_status(core, "cq")["conditions"][0]["reason"] == "Ready"
