"""v1beta1 <-> v1beta2 conversion: Kueue's renames, and lossless round trips."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykueue.api import registry
from pykueue.api.conversion import (
    CONVERTERS,
    V1BETA1,
    V1BETA2,
    ConversionError,
    convert,
    domains_to_slices,
    slices_to_domains,
)


def _cq_v1beta1() -> dict[str, Any]:
    return {
        "apiVersion": V1BETA1, "kind": "ClusterQueue", "metadata": {"name": "cq", "uid": "u1"},
        "spec": {
            "cohort": "team", "queueingStrategy": "StrictFIFO", "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "500m", "borrowingLimit": 2}]}]}],
            "admissionChecksStrategy": {"admissionChecks": [{"name": "prov", "onFlavors": ["f"]}]},
            "flavorFungibility": {"whenCanBorrow": "TryNextFlavor"},
            "unknownFutureField": {"kept": True},
        },
        "status": {"pendingWorkloads": 3, "flavorsUsage": [{"name": "f", "resources": [
            {"name": "cpu", "total": "1", "borrowed": "0"}]}]},
    }


def _wl_v1beta1() -> dict[str, Any]:
    return {
        "apiVersion": V1BETA1, "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"queueName": "q", "priority": 100, "priorityClassName": "high",
                 "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
                 "podSets": [{"name": "main", "count": 4, "template": {"spec": {"containers": []}}}]},
        "status": {
            "accumulatedPastExexcutionTimeSeconds": 42,
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{
                "name": "main", "count": 4, "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "4"},
                "topologyAssignment": {"levels": ["block", "rack"], "domains": [
                    {"values": ["b1", "r1"], "count": 2}, {"values": ["b1", "r2"], "count": 2}]}}]},
        },
    }


def test_cluster_queue_cohort_is_renamed() -> None:
    up = convert(_cq_v1beta1(), V1BETA2)
    assert up["apiVersion"] == V1BETA2
    assert up["spec"]["cohortName"] == "team" and "cohort" not in up["spec"]
    assert up["spec"]["unknownFutureField"] == {"kept": True}
    # The converted object is a valid v1beta2 document for our models.
    assert registry.parse(up).to_dict() == up


def test_cluster_queue_legacy_admission_checks_and_fungibility() -> None:
    doc = _cq_v1beta1()
    del doc["spec"]["admissionChecksStrategy"]
    doc["spec"]["admissionChecks"] = ["a", "b"]
    doc["spec"]["flavorFungibility"] = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}
    doc["status"]["pendingWorkloadsStatus"] = {"lastChangeTime": "2025-01-01T00:00:00Z"}
    up = convert(doc, V1BETA2)
    assert up["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "a"}, {"name": "b"}]}
    assert "admissionChecks" not in up["spec"]
    assert up["spec"]["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch",
                                               "whenCanPreempt": "MayStopSearch"}
    assert "pendingWorkloadsStatus" not in up["status"]


def test_local_queue_flavor_usage_is_renamed() -> None:
    doc = {"apiVersion": V1BETA1, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
           "spec": {"clusterQueue": "cq"},
           "status": {"flavorUsage": [{"name": "f", "resources": [{"name": "cpu", "total": "1"}]}],
                      "flavors": [{"name": "f", "resources": ["cpu"]}]}}
    up = convert(doc, V1BETA2)
    assert up["status"] == {"flavorsUsage": doc["status"]["flavorUsage"]}
    down = convert(up, V1BETA1)
    assert down["status"]["flavorUsage"] == doc["status"]["flavorUsage"]


def test_workload_priority_typo_and_topology() -> None:
    up = convert(_wl_v1beta1(), V1BETA2)
    spec, status = up["spec"], up["status"]
    assert spec["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                        "name": "high"}
    assert "priorityClassName" not in spec and "priorityClassSource" not in spec
    assert status["accumulatedPastExecutionTimeSeconds"] == 42
    assert "accumulatedPastExexcutionTimeSeconds" not in status
    ta = status["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert ta["slices"] == [{"domainCount": 2, "podCounts": {"universal": 2},
                             "valuesPerLevel": [{"universal": "b1"},
                                                {"individual": {"roots": ["r1", "r2"]}}]}]
    assert registry.parse(up).to_dict() == up


def test_pod_priority_class_source() -> None:
    doc = _wl_v1beta1()
    doc["spec"]["priorityClassSource"] = "scheduling.k8s.io/priorityclass"
    up = convert(doc, V1BETA2)
    assert up["spec"]["priorityClassRef"] == {"group": "scheduling.k8s.io", "kind": "PriorityClass",
                                              "name": "high"}


@pytest.mark.parametrize("make", [_cq_v1beta1, _wl_v1beta1])
def test_v1beta1_round_trip_is_lossless(make: Any) -> None:
    original = make()
    kept = copy.deepcopy(original)
    back = convert(convert(original, V1BETA2), V1BETA1)
    assert back == kept
    assert original == kept, "convert must not mutate its input"


def test_v1beta2_round_trip_for_shared_fields() -> None:
    up = convert(_wl_v1beta1(), V1BETA2)
    assert convert(convert(up, V1BETA1), V1BETA2) == up


def test_slices_with_prefix_suffix_and_individual_counts_expand() -> None:
    slices = [{"domainCount": 2, "podCounts": {"individual": [3, 1]},
               "valuesPerLevel": [{"individual": {"prefix": "rack-", "roots": ["a", "b"], "suffix": "-x"}}]}]
    assert slices_to_domains(slices) == [{"values": ["rack-a-x"], "count": 3},
                                         {"values": ["rack-b-x"], "count": 1}]


@given(st.lists(st.tuples(st.lists(st.sampled_from(["a", "b", "c"]), min_size=2, max_size=2),
                          st.integers(min_value=1, max_value=5)), max_size=6))
def test_domains_survive_slices(raw: list[tuple[list[str], int]]) -> None:
    domains = [{"values": values, "count": count} for values, count in raw]
    assert slices_to_domains(domains_to_slices(domains)) == domains


def test_same_version_and_plain_kinds_only_change_api_version() -> None:
    doc = {"apiVersion": V1BETA1, "kind": "ResourceFlavor", "metadata": {"name": "rf"},
           "spec": {"nodeLabels": {"a": "b"}}}
    assert convert(doc, V1BETA1) == doc
    assert convert(doc, V1BETA2) == {**doc, "apiVersion": V1BETA2}
    assert {"ClusterQueue", "LocalQueue", "Cohort", "Workload", "ResourceFlavor"} <= set(CONVERTERS)


def test_a_copy_leaves_the_input_and_in_place_converts_the_input_itself() -> None:
    original = _wl_v1beta1()
    copied = convert(original, V1BETA2)
    assert original == _wl_v1beta1()
    same = convert(original, V1BETA2, in_place=True)
    assert same is original
    assert same == copied


@pytest.mark.parametrize(("doc", "target", "needle"), [
    ({"apiVersion": V1BETA1, "kind": "Pod"}, V1BETA2, "kind 'Pod'"),
    ({"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Workload"}, V1BETA2, "source apiVersion"),
    ({"apiVersion": V1BETA1, "kind": "Workload"}, "kueue.x-k8s.io/v2", "desired apiVersion"),
])
def test_conversion_errors(doc: dict[str, Any], target: str, needle: str) -> None:
    with pytest.raises(ConversionError, match=needle):
        convert(doc, target)
    assert issubclass(ConversionError, ValueError)
