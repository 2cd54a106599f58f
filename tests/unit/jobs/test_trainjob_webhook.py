"""TrainJob admission: Kueue's runtime patch on every TrainJob, the shared job defaults, and
topology validation of the pod sets its runtime gives it (read through the webhook's lookups);
Kueue v0.19.2's webhook cases ported."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch
import pytest
from aiohttp.test_utils import TestClient, TestServer

from pykueue.api import keys
from pykueue.api.field_errors import aggregate
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionDenied, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.gates import FeatureGates
from pykueue.manager.jobs.registry import webhook_path
from pykueue.manager.jobs.related import Related
from pykueue.manager.jobs.trainjob.kind import KIND
from pykueue.manager.jobs.trainjob.webhook import WEBHOOK
from pykueue.webhook.app import WebhookDeps, make_app
from pykueue.webhook.facts import StaticLookup

from .trainjob_objects import cluster_runtime, related, replicated_job, rj_patch, runtime_patch, trainjob

JSON = dict[str, Any]
POLICY = AdmissionPolicy(frameworks=frozenset({"trainer.kubeflow.org/trainjob"}))
NS_LABELS = {keys.NAMESPACE_NAME_LABEL: "ns"}
KUEUE = "kueue.x-k8s.io/manager"
# Kueue's message goes on with "(e.g. 'example.com', regex used for validation is '...')";
# pykueue's shared job validation stops before it, for every kind.
RFC1123 = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
           "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
           "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
QUEUE_PATH = "metadata.labels[kueue.x-k8s.io/queue-name]"
HINT = ('. Adjust either the "TrainJob.spec.runtimePatches" or the "TrainingRuntime.Template" annotations '
        "for the corresponding Job")
MORE_THAN_ONE = ('job[node].annotations: Invalid value: must not contain more than one topology annotation: '
                 '["kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology", '
                 '"kueue.x-k8s.io/podset-unconstrained-topology"]' + HINT)


def _ctx(policy: AdmissionPolicy = POLICY, rel: Related | None = None, **facts: Any) -> AdmissionContext:
    return AdmissionContext(policy, ClusterFacts(namespace_labels=NS_LABELS, related=rel or {}, **facts))


# -- Kueue v0.19.2 trainjob_webhook_test.go TestDefault ---------------------------------------


NOT_SUSPENDED_WITHOUT_MJWQN = ("should not suspend a TrainJob without a queue label if "
                               "manageJobsWithoutQueueName is not enabled")
SUSPENDED_WITH_MJWQN = ("should suspend a TrainJob without a queue label if manageJobsWithoutQueueName "
                        "is enabled")


def _default_case(name: str) -> tuple[JSON, AdmissionContext, JSON]:
    base = trainjob(suspend=False)
    want = trainjob(suspend=False, patches=[runtime_patch(KUEUE)])
    if name == "should suspend a TrainJob with a queue label":
        base["metadata"]["labels"] = want["metadata"]["labels"] = {keys.QUEUE_NAME: "local-queue"}
        want["spec"]["suspend"] = True
        return base, _ctx(), want
    if name == NOT_SUSPENDED_WITHOUT_MJWQN:
        return base, _ctx(), want
    if name == SUSPENDED_WITH_MJWQN:
        want["spec"]["suspend"] = True
        policy = AdmissionPolicy(manage_jobs_without_queue_name=True, frameworks=POLICY.frameworks)
        return base, _ctx(policy), want
    if name == "should set the default local queue if enabled and the user didn't specify any":
        want["metadata"]["labels"] = {keys.QUEUE_NAME: "default"}
        want["spec"]["suspend"] = True
        return base, _ctx(default_local_queue=True), want
    if name == "should not set the default local queue if doesn't exists":
        return base, _ctx(default_local_queue=False), want
    base["metadata"]["labels"] = want["metadata"]["labels"] = {keys.QUEUE_NAME: "local-queue"}
    want["spec"]["suspend"] = True
    gates = AdmissionPolicy(frameworks=POLICY.frameworks, gates=FeatureGates({"AdmissionGatedBy": True}))
    if name == "should set managedBy to multiKueue if the user didn't specify any":
        want["spec"]["managedBy"] = keys.MULTIKUEUE_CONTROLLER
        return base, _ctx(gates, queue_uses_multikueue=True), want
    if name == "should not set managedBy to multiKueue if already specified by the user":
        base["spec"]["managedBy"] = want["spec"]["managedBy"] = "user"
        return base, _ctx(gates, queue_uses_multikueue=True), want
    assert name == ("should not set managedBy to multiKueue if the selected clusterQueue doesn't have the "
                    "corresponding admissionCheck")
    return base, _ctx(gates, queue_uses_multikueue=False), want


@pytest.mark.parametrize("case", [
    "should suspend a TrainJob with a queue label",
    NOT_SUSPENDED_WITHOUT_MJWQN,
    SUSPENDED_WITH_MJWQN,
    "should set the default local queue if enabled and the user didn't specify any",
    "should not set the default local queue if doesn't exists",
    "should set managedBy to multiKueue if the user didn't specify any",
    "should not set managedBy to multiKueue if already specified by the user",
    "should not set managedBy to multiKueue if the selected clusterQueue doesn't have the corresponding "
    "admissionCheck",
])
def test_kueue_default(case: str) -> None:
    """kueue v0.19.2 trainjob_webhook_test.go TestDefault."""
    obj, ctx, want = _default_case(case)
    assert WEBHOOK.default(obj, ctx) == want


def test_the_patch_is_appended_after_the_users() -> None:
    user = runtime_patch("example.com/user", rj_patch("node", node_selector={"a": "b"}))
    out = WEBHOOK.default(trainjob(patches=[user]), _ctx())
    assert out["spec"]["runtimePatches"] == [user, runtime_patch(KUEUE)]


# -- Kueue v0.19.2 trainjob_webhook_test.go TestValidateCreate -----------------------------------


def _test_ctr() -> JSON:
    return cluster_runtime("testCtr", replicated_job("node"))


def _annotated_ctr(annotations: dict[str, str]) -> JSON:
    # ReplicatedJobRequirements{Name: "node", PodAnnotations: ...}: zero replicas and pods.
    return cluster_runtime("testCtr", replicated_job("node", replicas=0, parallelism=0, completions=0,
                                                     pod_annotations=annotations))


def _validate_case(name: str) -> tuple[JSON, JSON, str]:
    tj = trainjob(runtime="testCtr", suspend=False)
    required = {"kueue.x-k8s.io/podset-required-topology": "cloud.com/block"}
    both = {"kueue.x-k8s.io/podset-preferred-topology": "cloud.com/block", **required}
    if name == "base":
        tj["metadata"]["labels"] = {keys.QUEUE_NAME: "local-queue"}
        return tj, _test_ctr(), ""
    if name == "invalid queue-name label":
        tj["metadata"]["labels"] = {keys.QUEUE_NAME: "queue_name"}
        return tj, _test_ctr(), f'{QUEUE_PATH}: Invalid value: "queue_name": {RFC1123}'
    if name == "with prebuilt workload":
        tj["metadata"]["labels"] = {keys.QUEUE_NAME: "local-queue",
                                    keys.PREBUILT_WORKLOAD_NAME: "prebuilt-workload"}
        return tj, _test_ctr(), ""
    if name == "valid topology request in RuntimePatch":
        tj["spec"]["runtimePatches"] = [runtime_patch(KUEUE, rj_patch("node", pod_annotations=required))]
        return tj, _test_ctr(), ""
    if name == "valid topology request in TrainingRuntime":
        return tj, _annotated_ctr(required), ""
    if name == "invalid topology request in TrainJob":
        tj["spec"]["runtimePatches"] = [runtime_patch(KUEUE, rj_patch("node", pod_annotations=both))]
        return tj, _test_ctr(), MORE_THAN_ONE
    if name == "invalid topology request in TrainingRuntime":
        return tj, _annotated_ctr(both), MORE_THAN_ONE
    assert name == "invalid slice topology request - slice size larger than number of podsets"
    tj["spec"]["runtimePatches"] = [runtime_patch(KUEUE, rj_patch("node", pod_annotations={
        **required, "kueue.x-k8s.io/podset-slice-required-topology": "cloud.com/block",
        "kueue.x-k8s.io/podset-slice-size": "20"}))]
    return tj, _test_ctr(), ('job[node].annotations[kueue.x-k8s.io/podset-slice-size]: Invalid value: "20": '
                             "must not be greater than pod set count 1" + HINT)


@pytest.mark.parametrize("case", [
    "base",
    "invalid queue-name label",
    "with prebuilt workload",
    "valid topology request in RuntimePatch",
    "valid topology request in TrainingRuntime",
    "invalid topology request in TrainJob",
    "invalid topology request in TrainingRuntime",
    "invalid slice topology request - slice size larger than number of podsets",
])
def test_kueue_validate_create(case: str) -> None:
    """kueue v0.19.2 trainjob_webhook_test.go TestValidateCreate (TopologyAwareScheduling at its
    default, on, in every case: the test's flag is never applied)."""
    tj, runtime, want = _validate_case(case)
    errors = WEBHOOK.validate(tj, None, _ctx(rel=related(runtime)))
    assert (aggregate(errors) if errors else "") == want


def test_a_trainjob_whose_runtime_is_missing_is_denied_under_tas_only() -> None:
    tj = trainjob(runtime="nowhere", suspend=False)
    with pytest.raises(AdmissionDenied, match=r"^runtime 'nowhere' not found$"):
        WEBHOOK.validate(tj, None, _ctx())
    no_tas = AdmissionPolicy(frameworks=POLICY.frameworks,
                             gates=FeatureGates({"TopologyAwareScheduling": False}))
    assert WEBHOOK.validate(tj, None, _ctx(no_tas)) == []


def test_an_update_reruns_the_creation_rules_and_the_update_rules() -> None:
    old = trainjob(suspend=False, queue="a")
    new = trainjob(suspend=False, queue="b_")
    errors = WEBHOOK.validate(new, old, _ctx(rel=related(cluster_runtime("test", replicated_job("node")))))
    path = "metadata.labels[kueue.x-k8s.io/queue-name]"
    assert [e.path for e in errors] == [path, path]
    assert errors[0].problem == 'Invalid value: "b_": field is immutable'
    assert errors[1].problem.startswith('Invalid value: "b_": a lowercase RFC 1123 subdomain')


# -- through the webhook's server: the runtime read with the other facts ---------------------


def _review(op: str, obj: JSON, old: JSON | None = None) -> JSON:
    gv = {"group": "trainer.kubeflow.org", "version": "v1alpha1"}
    request = {"uid": "u1", "kind": {**gv, "kind": "TrainJob"}, "resource": {**gv, "resource": "trainjobs"},
               "operation": op, "namespace": "ns", "name": "trainjob", "object": obj}
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


async def test_the_server_reads_the_runtime_for_validation() -> None:
    runtime = cluster_runtime("test", replicated_job("node", pod_annotations={
        "kueue.x-k8s.io/podset-required-topology": "rack",
        "kueue.x-k8s.io/podset-preferred-topology": "rack"}))
    lookup = StaticLookup(objects=dict(related(runtime)))
    tj = trainjob(queue="lq", suspend=False)
    async with TestClient(TestServer(make_app(WebhookDeps(policy=POLICY, lookup=lookup)))) as client:
        resp = await client.post(webhook_path("mutate", KIND.gvk), json=_review("CREATE", tj))
        answer = (await resp.json())["response"]
        patched = jsonpatch.apply_patch(tj, json.loads(base64.b64decode(answer["patch"])))
        assert patched["spec"]["suspend"] is True
        assert patched["spec"]["runtimePatches"] == [runtime_patch(KUEUE)]
        resp = await client.post(webhook_path("validate", KIND.gvk), json=_review("CREATE", patched))
        denied = (await resp.json())["response"]
        assert not denied["allowed"] and "job[node].annotations" in denied["status"]["message"]
        lookup.objects.clear()
        resp = await client.post(webhook_path("validate", KIND.gvk), json=_review("CREATE", patched))
        missing = (await resp.json())["response"]
        assert not missing["allowed"] and missing["status"]["message"] == "runtime 'test' not found"
