"""Spec cases 43-46 (Kueue's own kinds), ConversionReview, and malformed requests over TLS."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.api import keys

from .conftest import WebhookServer, allow, deny
from .objects import JOB_M

CQ_V = "/validate-kueue-x-k8s-io-v1beta2-clusterqueue"
CQ_M = "/mutate-kueue-x-k8s-io-v1beta2-clusterqueue"
COHORT_V = "/validate-kueue-x-k8s-io-v1beta2-cohort"
RF_V = "/validate-kueue-x-k8s-io-v1beta2-resourceflavor"
WL_V = "/validate-kueue-x-k8s-io-v1beta2-workload"
V1B2 = "kueue.x-k8s.io/v1beta2"


def cq(groups: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": V1B2,
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"resourceGroups": groups, **spec},
    }


def group(covered: list[str], flavors: list[tuple[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    return {"coveredResources": covered, "flavors": [{"name": n, "resources": r} for n, r in flavors]}


def cpu(nominal: str = "1", **limits: str) -> dict[str, Any]:
    return {"name": "cpu", "nominalQuota": nominal, **limits}


def test_43_cluster_queue(webhook: WebhookServer) -> None:
    msg = deny(webhook, CQ_V, cq([group(["cpu"], [("x86", [cpu("-1")])])]))
    assert msg.startswith("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value")
    assert "must be nil when cohort is empty" in deny(
        webhook, CQ_V, cq([group(["cpu"], [("x86", [cpu(lendingLimit="1")])])])
    )
    assert "nominalQuota" in deny(
        webhook, CQ_V, cq([group(["cpu"], [("x86", [cpu("1", lendingLimit="2")])])], cohortName="c")
    )
    allow(webhook, CQ_V, cq([group(["cpu"], [("x86", [cpu("1", borrowingLimit="0")])])], cohortName="c"))
    mem = {"name": "memory", "nominalQuota": "1Gi"}
    msg = deny(webhook, CQ_V, cq([group(["cpu", "memory"], [("x86", [mem, cpu()])])]))
    assert "resources[0].name: Invalid" in msg and "resources[1].name: Invalid" in msg
    msg = deny(webhook, CQ_V, cq([group(["memory"], [("a", [mem])]), group(["memory"], [("b", [mem])])]))
    assert 'coveredResources[0]: Duplicate value: "memory"' in msg
    msg = deny(webhook, CQ_V, cq([group(["cpu"], [("beta", [cpu()])]), group(["memory"], [("beta", [mem])])]))
    assert 'flavors[0].name: Duplicate value: "beta"' in msg
    sel = {"matchExpressions": [{"key": "k", "operator": "In"}]}
    assert "Required value" in deny(webhook, CQ_V, cq([], namespaceSelector=sel))
    pre = {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}
    assert deny(webhook, CQ_V, cq([], preemption=pre)).startswith("spec.preemption: Invalid value")


def test_cluster_queue_and_flavor_get_finalizer(webhook: WebhookServer) -> None:
    out = webhook.admit(CQ_M, cq([]))["object"]
    assert out["metadata"]["finalizers"] == [keys.RESOURCE_IN_USE_FINALIZER]


def test_44_cohort_lending_needs_parent(webhook: WebhookServer) -> None:
    cohort = {
        "apiVersion": V1B2,
        "kind": "Cohort",
        "metadata": {"name": "c"},
        "spec": {"resourceGroups": [group(["cpu"], [("x86", [cpu(lendingLimit="1")])])]},
    }
    assert "must be nil when parent is empty" in deny(webhook, COHORT_V, cohort)
    cohort["spec"]["parentName"] = "root"
    cohort["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "5"
    allow(webhook, COHORT_V, cohort)  # not bounded by nominalQuota for cohorts


def test_45_resource_flavor(webhook: WebhookServer) -> None:
    def rf(**spec: Any) -> dict[str, Any]:
        return {"apiVersion": V1B2, "kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": spec}

    assert "Invalid" in deny(webhook, RF_V, rf(nodeLabels={"@bad": "v"}))
    assert "Invalid" in deny(webhook, RF_V, rf(nodeLabels={"ok": "bad value"}))
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    assert "spec.nodeTaints[1]: Duplicate value" in deny(
        webhook, RF_V, rf(nodeTaints=[taint, {**taint, "value": "w"}])
    )
    allow(webhook, RF_V, rf(nodeLabels={"kubernetes.io/arch": "amd64"}, nodeTaints=[taint]))


def wl(podsets: list[dict[str, Any]], status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": V1B2,
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"queueName": "q", "podSets": podsets},
    }
    if status:
        obj["status"] = status
    return obj


def ps(name: str, count: int, requests: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": requests or {"cpu": "1"}}}
    return {"name": name, "count": count, "template": {"spec": {"containers": [container]}}, **extra}


RESERVED = [
    {
        "type": "QuotaReserved",
        "status": "True",
        "reason": "QuotaReserved",
        "message": "",
        "lastTransitionTime": "2025-01-01T00:00:00Z",
    }
]


def admission(name: str, usage: str, count: int) -> dict[str, Any]:
    return {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {"name": name, "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": usage}, "count": count}
        ],
    }


def test_46_workload(webhook: WebhookServer) -> None:
    allow(webhook, WL_V, wl([ps("driver", 1), ps("workers", 100)]))
    bad = ps("main", 1, {"pods": "1"})
    bad["template"]["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"pods": "1"}}}]
    msg = deny(webhook, WL_V, wl([bad]))
    assert msg.count("Invalid value") == 2 and "reserved" in msg
    assert deny(webhook, WL_V, wl([ps("a", 2, minCount=1), ps("b", 2, minCount=1)])).startswith(
        "spec.podSets: Invalid"
    )
    status = {"conditions": RESERVED, "admission": admission("@invalid", "1", 1)}
    assert 'podSetAssignments[0].name: Not found: "@invalid"' in deny(
        webhook, WL_V, wl([ps("main", 1)], status)
    )
    status = {"conditions": RESERVED, "admission": admission("main", "1", 3)}
    assert "not divisible" in deny(webhook, WL_V, wl([ps("main", 3)], status))
    status = {"reclaimablePods": [{"name": "ps1", "count": 4}, {"name": "ps2", "count": 1}]}
    msg = deny(webhook, WL_V, wl([ps("ps1", 3)], status))
    assert "Invalid value: 4" in msg and 'Unsupported value: "ps2"' in msg
    old_status = {
        "conditions": RESERVED,
        "admission": admission("ps1", "3", 3),
        "reclaimablePods": [{"name": "ps1", "count": 2}, {"name": "ps2", "count": 1}],
    }
    new_status = {**old_status, "reclaimablePods": [{"name": "ps1", "count": 1}]}
    podsets = [ps("ps1", 3), ps("ps2", 1)]
    msg = deny(webhook, WL_V, wl(podsets, new_status), wl(podsets, old_status))
    assert "Invalid value: 1" in msg and "Required value" in msg
    assert deny(webhook, WL_V, wl([ps("main", 1)], {"conditions": RESERVED})).startswith(
        "status.admission: Required"
    )


def test_conversion_v1beta1_to_v1beta2_and_back(webhook: WebhookServer) -> None:
    old = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"cohort": "team", "resourceGroups": []},
    }
    review = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u1", "desiredAPIVersion": V1B2, "objects": [old]},
    }
    status, body = webhook.post_raw("/convert", json.dumps(review).encode())
    assert (
        status == 200
        and body["response"]["uid"] == "u1"
        and body["response"]["result"]["status"] == "Success"
    )
    up = body["response"]["convertedObjects"][0]
    assert up["apiVersion"] == V1B2 and up["spec"]["cohortName"] == "team" and "cohort" not in up["spec"]
    review["request"] = {"uid": "u2", "desiredAPIVersion": "kueue.x-k8s.io/v1beta1", "objects": [up]}
    _, body = webhook.post_raw("/convert", json.dumps(review).encode())
    assert body["response"]["convertedObjects"][0] == old
    review["request"] = {"uid": "u3", "desiredAPIVersion": "kueue.x-k8s.io/v9", "objects": [up]}
    status, body = webhook.post_raw("/convert", json.dumps(review).encode())
    assert status == 200 and body["response"]["result"]["status"] == "Failure"


def _review(request: Any) -> bytes:
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    ).encode()


def test_malformed_requests_get_400_with_reason(webhook: WebhookServer) -> None:
    job_kind = {"group": "batch", "version": "v1", "kind": "Job"}
    cases = {
        b"not json": "not JSON",
        b"[]": "expected a AdmissionReview",
        json.dumps(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
        ).encode(): "without a request",
        json.dumps(
            {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "u"}}
        ).encode(): "expected apiVersion",
        _review(
            {
                "uid": "u",
                "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
                "operation": "CREATE",
                "object": {},
            }
        ): "this path serves batch/v1 Job",
        _review(
            {
                "uid": "u",
                "kind": {"group": "batch", "version": "v2", "kind": "Job"},
                "operation": "CREATE",
                "object": {},
            }
        ): "this path serves",
        _review({"uid": "u", "kind": job_kind, "operation": "CREATE"}): "without an object",
        _review({"uid": "u", "kind": job_kind, "operation": "PATCH", "object": {}}): "operation",
        _review({"kind": job_kind, "operation": "CREATE", "object": {}}): "without a uid",
        _review(
            {"uid": "u", "kind": job_kind, "operation": "CREATE", "object": {"metadata": []}}
        ): "metadata",
    }
    for body, reason in cases.items():
        status, answer = webhook.post_raw(JOB_M, body)
        assert status == 400, (body, answer)
        assert reason in answer["error"], (reason, answer)
    status, answer = webhook.post_raw("/convert", b"{}")
    assert status == 400 and "expected apiVersion" in answer["error"]


def test_delete_is_always_allowed(webhook: WebhookServer) -> None:
    body = _review(
        {
            "uid": "d",
            "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "operation": "DELETE",
            "oldObject": {"metadata": {"name": "x"}},
        }
    )
    status, answer = webhook.post_raw(JOB_M, body)
    assert status == 200 and answer["response"] == {"uid": "d", "allowed": True}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
PATHS = [
    JOB_M,
    "/validate-batch-v1-job",
    "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
    "/validate--v1-pod",
    CQ_V,
    WL_V,
    RF_V,
    "/convert",
]
KINDS = {
    JOB_M: ("batch", "v1", "Job"),
    "/validate-batch-v1-job": ("batch", "v1", "Job"),
    "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset": (
        "leaderworkerset.x-k8s.io",
        "v1",
        "LeaderWorkerSet",
    ),
    "/validate--v1-pod": ("", "v1", "Pod"),
    CQ_V: ("kueue.x-k8s.io", "v1beta2", "ClusterQueue"),
    WL_V: ("kueue.x-k8s.io", "v1beta2", "Workload"),
    RF_V: ("kueue.x-k8s.io", "v1beta2", "ResourceFlavor"),
}


@st.composite
def malformed(draw: st.DrawFn) -> tuple[str, bytes]:
    path = draw(st.sampled_from(PATHS))
    shape = draw(st.integers(0, 3))
    if shape == 0:
        return path, draw(st.binary(max_size=64))
    if shape == 1:
        return path, json.dumps(draw(json_values)).encode()
    group, version, kind = KINDS.get(path, ("batch", "v1", "Job"))
    obj = draw(
        st.dictionaries(st.sampled_from(["metadata", "spec", "status", "kind"]), json_values, max_size=3)
    )
    request: dict[str, Any] = {
        "uid": draw(st.text(min_size=1, max_size=4)),
        "kind": {"group": group, "version": version, "kind": kind},
        "operation": draw(st.sampled_from(["CREATE", "UPDATE", "DELETE"])),
        "object": obj,
        "oldObject": draw(st.none() | st.just(obj)),
    }
    if shape == 3:
        request[draw(st.sampled_from(sorted(request)))] = draw(json_values)
    return path, _review(request)


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(case=malformed())
def test_fuzzed_requests_never_crash_or_5xx(server: WebhookServer, case: tuple[str, bytes]) -> None:
    path, body = case
    status, answer = server.post_raw(path, body)
    assert status in (200, 400), (status, answer)
    if status == 200:
        assert "response" in answer
