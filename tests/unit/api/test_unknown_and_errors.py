"""Unknown fields survive a round trip; bad input names the offending field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykueue.api import registry
from pykueue.api.clusterqueue import ClusterQueue
from pykueue.api.fields import FieldError
from pykueue.api.quantity import Quantity
from pykueue.api.validation import validate
from pykueue.api.workload import Workload


def _cq() -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "cq", "labels": {"a": "b"}, "managedFields": [{"manager": "x"}],
                     "creationTimestamp": None},
        "spec": {"futureField": {"x": [1, 2]}, "resourceGroups": [{
            "coveredResources": ["cpu", "memory"], "experimental": True,
            "flavors": [{"name": "default", "resources": [
                {"name": "cpu", "nominalQuota": "9", "someday": 1},
                {"name": "memory", "nominalQuota": "36Gi"}]}]}]},
        "status": {"newCounter": 4},
    }


def test_unknown_fields_survive_everywhere() -> None:
    doc = _cq()
    cq = ClusterQueue.from_dict(copy.deepcopy(doc))
    assert cq.to_dict() == doc
    assert cq.spec is not None and cq.spec.extra == {"futureField": {"x": [1, 2]}}
    assert cq.metadata is not None and "managedFields" in cq.metadata.extra


def test_unknown_fields_survive_an_edit_and_a_defaulting() -> None:
    cq = ClusterQueue.from_dict(_cq())
    assert cq.spec is not None and cq.spec.resource_groups is not None
    quota = cq.spec.resource_groups[0].flavors[0].resources[0]
    quota.nominal_quota = Quantity.parse("10")
    out = cq.with_defaults().to_dict()
    resource = out["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert resource == {"name": "cpu", "nominalQuota": "10", "someday": 1}
    assert out["spec"]["futureField"] == {"x": [1, 2]}
    assert out["spec"]["queueingStrategy"] == "BestEffortFIFO"


def test_typed_access_to_status() -> None:
    wl = Workload.from_dict({"status": {
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                        "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{
            "name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "3"}, "count": 3,
            "topologyAssignment": {"levels": ["rack"], "slices": [{
                "domainCount": 1, "valuesPerLevel": [{"universal": "r1"}],
                "podCounts": {"universal": 3}}]}}]},
        "requeueState": {"count": 2, "requeueAt": "2025-01-01T00:01:00Z"},
        "unhealthyNodes": [{"name": "n1"}],
        "accumulatedPastExecutionTimeSeconds": 5,
    }})
    assert wl.status is not None and wl.status.admission is not None
    psa = wl.status.admission.pod_set_assignments
    assert psa is not None and psa[0].resource_usage is not None
    assert psa[0].resource_usage["cpu"].milli_value() == 3000
    ta = psa[0].topology_assignment
    assert ta is not None and ta.slices[0].pod_counts.universal == 3
    assert wl.status.requeue_state is not None and wl.status.requeue_state.count == 2
    assert wl.status.unhealthy_nodes is not None and wl.status.unhealthy_nodes[0].name == "n1"


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d["spec"]["resourceGroups"][0]["flavors"][0].__setitem__("name", 5),
     "spec.resourceGroups[0].flavors[0].name: expected string"),
    (lambda d: d["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1].pop("nominalQuota"),
     "spec.resourceGroups[0].flavors[0].resources[1].nominalQuota: required field is missing"),
    (lambda d: d["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(nominalQuota="lots"),
     "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: quantity 'lots'"),
    (lambda d: d["spec"].__setitem__("queueingStrategy", "Random"),
     "spec.queueingStrategy: unsupported value 'Random'"),
    (lambda d: d["spec"].__setitem__("resourceGroups", {}), "spec.resourceGroups: expected array"),
    (lambda d: d["metadata"].__setitem__("labels", {"a": 1}), "metadata.labels.a: expected string"),
])
def test_errors_name_the_field_path(mutate: Any, message: str) -> None:
    doc = _cq()
    mutate(doc)
    with pytest.raises(FieldError) as info:
        ClusterQueue.from_dict(doc)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, ValueError)


def test_registry_knows_every_kind() -> None:
    assert len(registry.KINDS) == 11
    for kind in registry.KINDS:
        assert registry.model_for("kueue.x-k8s.io/v1beta2", kind.KIND) is kind
        info = registry.kind_info(kind.KIND)
        assert info is not None and info.plural == kind.PLURAL
    assert registry.BY_KIND["Workload"].scope == "Namespaced"
    assert registry.BY_KIND["ClusterQueue"].scope == "Cluster"
    assert registry.model_for("kueue.x-k8s.io/v1beta1", "Workload") is None
    with pytest.raises(LookupError):
        registry.parse({"apiVersion": "v1", "kind": "Pod"})


def test_registry_converts_v1beta1_documents() -> None:
    cq = registry.parse({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
                         "metadata": {"name": "cq"}, "spec": {"cohort": "c"}})
    assert isinstance(cq, ClusterQueue) and cq.spec is not None
    assert cq.spec.cohort_name == "c"
    assert cq.api_version == "kueue.x-k8s.io/v1beta2"


def test_validate_reports_broken_bounds() -> None:
    doc = _cq()
    assert validate(ClusterQueue.from_dict(doc)) == []
    group = doc["spec"]["resourceGroups"][0]
    group["flavors"][0]["name"] = "Not_A_Name"
    group["flavors"].append(copy.deepcopy(group["flavors"][0]))
    doc["spec"]["cohortName"] = "x" * 254
    problems = validate(ClusterQueue.from_dict(doc))
    bad_name = "spec.resourceGroups[0].flavors[0].name: 'Not_A_Name' should match"
    assert any(p.startswith(bad_name) for p in problems)
    assert "spec.resourceGroups[0].flavors[1]: duplicate entry for key ('Not_A_Name',)" in problems
    assert "spec.cohortName: may not be longer than 253" in problems
    wl = Workload.from_dict({"spec": {"podSets": [{"count": -1, "template": {}}]}})
    assert validate(wl) == ["spec.podSets[0].count: should be greater than or equal to 0"]


def test_a_go_pattern_with_flags_after_the_anchor_is_checked_not_a_crash() -> None:
    """Kueue's schema gives AdmissionCheck parameters' kind as `^(?i)[a-z]...`, which RE2
    takes and Python's re refuses as written."""
    check = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "prov"},
             "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request",
                      "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                                     "name": "config"}}}
    assert validate(registry.parse(check)) == []
    check["spec"]["parameters"]["kind"] = "9-not-a-kind"
    assert [e.split(":")[0] for e in validate(registry.parse(check))] == ["spec.parameters.kind"]
