"""Defaulting a minimal object gives the values Kueue's schema and code give."""

from __future__ import annotations

from pykueue.api.clusterqueue import ClusterQueue
from pykueue.api.config import Configuration, parse_duration
from pykueue.api.provisioningrequestconfig import ProvisioningRequestConfig
from pykueue.api.workload import Workload


def test_minimal_cluster_queue_defaults() -> None:
    doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
           "spec": {}}
    cq = ClusterQueue.from_dict(doc)
    spec = cq.with_defaults().to_dict()["spec"]
    assert spec == {
        "queueingStrategy": "BestEffortFIFO",
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "preemption": {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never",
                       "borrowWithinCohort": {"policy": "Never"}},
        "stopPolicy": "None",
    }
    # Defaulting is a copy: the parsed object still round-trips to its input.
    assert cq.to_dict() == doc


def test_defaults_do_not_override_values() -> None:
    cq = ClusterQueue.from_dict({"spec": {"queueingStrategy": "StrictFIFO",
                                          "preemption": {"withinClusterQueue": "LowerPriority"}}})
    spec = cq.with_defaults().spec
    assert spec is not None and spec.preemption is not None
    assert spec.queueing_strategy == "StrictFIFO"
    assert spec.preemption.within_cluster_queue == "LowerPriority"
    assert spec.preemption.reclaim_within_cohort == "Never"


def test_minimal_workload_defaults() -> None:
    wl = Workload.from_dict({"spec": {"queueName": "q", "podSets": [
        {"template": {"spec": {"containers": []}}},
        {"name": "workers", "count": 3, "template": {}},
    ]}}).with_defaults()
    assert wl.spec is not None and wl.spec.pod_sets is not None
    assert wl.spec.active is True
    first, second = wl.spec.pod_sets
    assert (first.name, first.count) == ("main", 1)
    assert (second.name, second.count) == ("workers", 3)


def test_fair_sharing_weight_defaults_to_one() -> None:
    cq = ClusterQueue.from_dict({"spec": {"fairSharing": {}}}).with_defaults()
    assert cq.spec is not None and cq.spec.fair_sharing is not None
    weight = cq.spec.fair_sharing.weight
    assert weight is not None and weight.value() == 1


def test_provisioning_retry_strategy_defaults() -> None:
    prc = ProvisioningRequestConfig.from_dict({"spec": {"provisioningClassName": "x"}}).with_defaults()
    assert prc.to_dict()["spec"]["retryStrategy"] == {
        "backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}


def test_minimal_configuration_defaults() -> None:
    cfg = Configuration.from_dict({"apiVersion": "config.kueue.x-k8s.io/v1beta2",
                                   "kind": "Configuration"}).with_defaults()
    out = cfg.to_dict()
    assert out["namespace"] == "kueue-system"
    assert out["webhook"]["port"] == 9443
    assert out["metrics"]["bindAddress"] == ":8443"
    assert out["health"]["healthProbeBindAddress"] == ":8081"
    assert out["leaderElection"]["leaderElect"] is True
    assert out["leaderElection"]["resourceName"] == "c1f6bfd2.kueue.x-k8s.io"
    assert out["leaderElection"]["resourceLock"] == "leases"
    assert out["manageJobsWithoutQueueName"] is False
    assert out["clientConnection"] == {"qps": 300, "burst": 500}
    assert out["integrations"]["frameworks"] == ["batch/job"]
    assert out["internalCertManagement"]["webhookServiceName"] == "kueue-webhook-service"
    wfpr = out["waitForPodsReady"]
    assert parse_duration(wfpr["timeout"]) == 30 * 60
    assert wfpr["recoveryTimeout"] == wfpr["timeout"]
    assert wfpr["requeuingStrategy"] == {"timestamp": "Eviction", "backoffBaseSeconds": 60,
                                         "backoffMaxSeconds": 3600}
    assert out["managedJobsNamespaceSelector"] == {"matchExpressions": [{
        "key": "kubernetes.io/metadata.name", "operator": "NotIn",
        "values": ["kube-system", "kueue-system"]}]}
    assert "fairSharing" not in out and "admissionFairSharing" not in out


def test_configuration_selector_follows_namespace_and_keeps_user_values() -> None:
    cfg = Configuration.from_dict({"namespace": "pykueue-system", "integrations": {"frameworks": ["pod"]},
                                   "waitForPodsReady": {"timeout": "5m"}}).with_defaults()
    out = cfg.to_dict()
    assert out["managedJobsNamespaceSelector"]["matchExpressions"][0]["values"] == [
        "kube-system", "pykueue-system"]
    assert out["integrations"]["frameworks"] == ["pod"]
    assert out["waitForPodsReady"]["recoveryTimeout"] == "5m"


def test_parse_duration() -> None:
    assert parse_duration("1h30m") == 5400
    assert parse_duration("2.5s") == 2.5
    assert parse_duration("0") == 0
