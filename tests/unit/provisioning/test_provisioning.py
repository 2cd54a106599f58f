"""Kueue v0.19.2's ProvisioningRequest check, decided purely: names, requests, check states."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykueue.manager.jobs.provisioning.checks import (
    CLASS_ANNOTATION,
    CONSUME_ANNOTATION,
    NO_REQUEST_NEEDED,
    NoRequestYet,
    attempt_to_create,
    next_check,
    retry_backoff_s,
)
from pykueue.manager.jobs.provisioning.config import CheckConfig, active_condition
from pykueue.manager.jobs.provisioning.names import (
    attempt_of,
    limit_object_name,
    pod_template_name,
    request_name,
)
from pykueue.manager.jobs.provisioning.requests import (
    current_request,
    hand_over,
    merged_podsets,
    pod_template,
    provisioning_request,
    request_needed,
)

CHECK = "prov"


def _config(**spec: Any) -> CheckConfig:
    return CheckConfig.of({"spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io", **spec}})


def _workload(*podsets: tuple[str, int, dict[str, str]], admitted: bool = False) -> dict[str, Any]:
    conditions = [{"type": "QuotaReserved", "status": "True"}]
    if admitted:
        conditions.append({"type": "Admitted", "status": "True"})
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "job-a-1b2c3", "namespace": "ns", "uid": "wl-uid",
                     "annotations": {"provreq.kueue.x-k8s.io/ValidUntilSeconds": "60", "other": "x"}},
        "spec": {"podSets": [{"name": n, "count": c, "template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": r, "limits": {"memory": "1Gi"}}}]}}}
            for n, c, r in podsets]},
        "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": n, "count": c, "flavors": {"cpu": "rack-flavor"}} for n, c, _ in podsets]},
            "conditions": conditions,
            "admissionChecks": [{"name": CHECK, "state": "Pending", "message": ""}]}}


def _request(attempt: int, *conditions: tuple[str, str], cls: str = "check-capacity.autoscaling.x-k8s.io",
             **status: Any) -> dict[str, Any]:
    name = request_name("job-a-1b2c3", CHECK, attempt)
    return {"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {"name": name, "namespace": "ns", "uid": f"pr-{attempt}"},
            "spec": {"provisioningClassName": cls, "parameters": {},
                     "podSets": [{"podTemplateRef": {"name": pod_template_name(name, "main")}, "count": 2}]},
            "status": {"conditions": [{"type": t, "status": "True", "message": m} for t, m in conditions],
                       **status}}


def test_names_follow_kueue_and_stay_unique_when_cut() -> None:
    assert request_name("wl", "prov", 2) == "wl-prov-2"
    assert pod_template_name("wl-prov-2", "main") == "ppt-wl-prov-2-main"
    assert attempt_of("wl-prov-12", "wl", "prov") == 12
    assert attempt_of("wl-other-1", "wl", "prov") is None
    long = "w" * 300
    cut = limit_object_name(long)
    assert len(cut) == 253 and cut.startswith("w" * 247 + "-") and cut != limit_object_name("w" * 301)


def test_config_defaults_and_the_checks_active_condition() -> None:
    config = _config()
    assert (config.backoff_limit, config.backoff_base_s, config.backoff_max_s) == (3, 60, 1800)
    check = {"spec": {"controllerName": "kueue.x-k8s.io/provisioning-request", "parameters": {
        "apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "cfg"}}}
    assert active_condition(check, {"cfg": {}}) == (True, "Active", "The admission check is active")
    assert active_condition(check, {}) == (
        False, "BadParametersRef", 'provisioningrequestconfigs.kueue.x-k8s.io "cfg" not found')
    wrong = copy.deepcopy(check)
    wrong["spec"]["parameters"]["kind"] = "MultiKueueConfig"
    assert active_condition(wrong, {"cfg": {}})[2] == \
        'wrong kind "MultiKueueConfig", expecting "ProvisioningRequestConfig": bad parameters reference'


def test_only_pod_sets_using_managed_resources_need_capacity() -> None:
    wl = _workload(("launcher", 1, {"cpu": "1"}), ("workers", 4, {"cpu": "1", "example.com/gpu": "1"}))
    assert request_needed(wl, _config())
    gpu = _config(managedResources=["example.com/gpu"])
    assert [m.name for m in merged_podsets(wl, gpu)] == ["workers"]
    assert not request_needed(_workload(("launcher", 1, {"cpu": "1"})), gpu)


def test_identical_pod_sets_merge_into_one_request_pod_set() -> None:
    wl = _workload(("a", 2, {"cpu": "1"}), ("b", 3, {"cpu": "1"}))
    assert [(m.name, m.count) for m in merged_podsets(wl, _config())] == [("a", 2), ("b", 3)]
    merged = merged_podsets(wl, _config(podSetMergePolicy="IdenticalPodTemplates"))
    assert [(m.name, m.count) for m in merged] == [("a", 5)]


def test_the_pod_template_carries_the_flavors_placement_and_limits_as_requests() -> None:
    wl = _workload(("main", 2, {"cpu": "1"}))
    flavors = {"rack-flavor": {"spec": {"nodeLabels": {"pool": "autoscaled"},
                                        "tolerations": [{"key": "autoscaled", "operator": "Exists"}]}}}
    (merged,) = merged_podsets(wl, _config())
    template = pod_template(wl, merged, "ppt-x", flavors)
    spec = template["template"]["spec"]
    assert spec["nodeSelector"] == {"pool": "autoscaled"}
    assert spec["tolerations"] == [{"key": "autoscaled", "operator": "Exists"}]
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert template["metadata"]["ownerReferences"][0]["uid"] == "wl-uid"
    assert template["metadata"]["labels"] == {"kueue.x-k8s.io/managed": "true"}


def test_the_request_names_its_attempt_class_parameters_and_templates() -> None:
    wl = _workload(("main", 2, {"cpu": "1"}))
    body = provisioning_request(wl, CHECK, 2, _config(parameters={"a": "b"}), [("ppt-t", 2)])
    assert body["metadata"]["name"] == "job-a-1b2c3-prov-2"
    assert body["spec"] == {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
                            "parameters": {"a": "b", "ValidUntilSeconds": "60"},
                            "podSets": [{"podTemplateRef": {"name": "ppt-t"}, "count": 2}]}
    assert body["metadata"]["ownerReferences"][0]["controller"] is True


def test_the_current_request_is_the_latest_attempt_matching_the_config() -> None:
    wl = _workload(("main", 2, {"cpu": "1"}))
    first, second = _request(1), _request(2)
    stale = _request(3, cls="best-effort-atomic-scale-up.autoscaling.x-k8s.io")
    assert current_request(wl, CHECK, _config(), [second, first, stale]) is second
    assert current_request(wl, CHECK, _config(), []) is None


def test_templates_are_handed_to_their_request() -> None:
    wl = _workload(("main", 2, {"cpu": "1"}))
    (merged,) = merged_podsets(wl, _config())
    template = pod_template(wl, merged, "ppt-x", {})
    moved = hand_over(template, wl, _request(1))
    assert moved is not None
    assert [r["uid"] for r in moved["metadata"]["ownerReferences"]] == ["pr-1"]
    assert hand_over(moved, wl, _request(1)) is None


def test_provisioned_makes_the_check_ready_with_pod_set_updates() -> None:
    wl = _workload(("main", 2, {"cpu": "1"}))
    selectors = [{"key": "pool", "valueFromProvisioningClassDetail": "pool"},
                 {"key": "x", "valueFromProvisioningClassDetail": "absent"}]
    config = _config(podSetUpdates={"nodeSelector": selectors})
    done = "Provisioning Request was successfully provisioned."
    request = _request(1, ("Accepted", ""), ("Provisioned", done), provisioningClassDetails={"pool": "p1"})
    entry = next_check(wl, wl["status"]["admissionChecks"][0], config, request, CHECK)
    assert entry["state"] == "Ready"
    assert entry["message"] == done
    assert entry["podSetUpdates"] == [{"name": "main", "nodeSelector": {"pool": "p1"}, "annotations": {
        CONSUME_ANNOTATION: "job-a-1b2c3-prov-1", CLASS_ANNOTATION: "check-capacity.autoscaling.x-k8s.io"}}]


def test_failures_retry_with_a_doubling_backoff_then_reject() -> None:
    wl = _workload(("main", 2, {"cpu": "1"}))
    strategy = {"backoffLimitCount": 2, "backoffBaseSeconds": 10, "backoffMaxSeconds": 15}
    config = _config(retryStrategy=strategy)
    pending = wl["status"]["admissionChecks"][0]
    first = next_check(wl, pending, config, _request(1, ("Failed", "no capacity")), CHECK)
    assert (first["state"], first["message"], first["requeueAfterSeconds"]) == (
        "Retry", "Retrying after failure: no capacity", 10)
    # Evicted and reserved again: the check counts the retry, the next request is attempt 2.
    again = {**pending, "retryCount": 1, "requeueAfterSeconds": 10}
    assert attempt_to_create(wl, again, None, CHECK) == 2
    second = next_check(wl, again, config, _request(2, ("Failed", "still none")), CHECK)
    assert (second["state"], second["requeueAfterSeconds"]) == ("Retry", 15)  # 20 s, capped at 15
    last = next_check(wl, {**pending, "retryCount": 2}, config, _request(3, ("Failed", "never")), CHECK)
    assert (last["state"], last["message"]) == ("Rejected", "never")
    assert retry_backoff_s(0, _config()) == 60 and retry_backoff_s(10, _config()) == 1800


def test_an_expired_booking_retries_only_before_admission_and_revoked_capacity_rejects() -> None:
    expired = _request(1, ("BookingExpired", "booking expired"))
    waiting = _workload(("main", 2, {"cpu": "1"}))
    pending = waiting["status"]["admissionChecks"][0]
    assert next_check(waiting, pending, _config(), expired, CHECK)["state"] == "Retry"
    running = _workload(("main", 2, {"cpu": "1"}), admitted=True)
    ready = {"name": CHECK, "state": "Ready", "message": "ok"}
    assert next_check(running, ready, _config(), expired, CHECK) == ready
    revoked = _request(1, ("CapacityRevoked", "nodes gone"))
    assert next_check(running, ready, _config(), revoked, CHECK)["state"] == "Rejected"


def test_a_workload_needing_nothing_is_ready_and_one_without_its_request_waits() -> None:
    wl = _workload(("main", 2, {"cpu": "1"}))
    gpu = _config(managedResources=["example.com/gpu"])
    entry = next_check(wl, wl["status"]["admissionChecks"][0], gpu, None, CHECK)
    assert (entry["state"], entry["message"]) == ("Ready", NO_REQUEST_NEEDED)
    with pytest.raises(NoRequestYet):
        next_check(wl, wl["status"]["admissionChecks"][0], _config(), None, CHECK)
    assert attempt_to_create(wl, wl["status"]["admissionChecks"][0], None, CHECK) == 1
    accepted = _request(1, ("Accepted", ""))
    assert attempt_to_create(wl, wl["status"]["admissionChecks"][0], accepted, CHECK) is None
