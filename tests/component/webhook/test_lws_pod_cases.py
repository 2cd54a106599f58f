"""Spec cases 29-35 and 39-42: LeaderWorkerSet and pod admission, plus PyTorchJob, over TLS."""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.gates import FeatureGates
from pykueue.webhook.facts import StaticLookup

from .conftest import WebhookServer, allow, deny, mutate
from .objects import (
    LWS_M,
    LWS_V,
    POD_M,
    POD_V,
    PT_M,
    PT_V,
    annotations_of,
    job,
    labels_of,
    lws,
    owner_ref,
    pod,
    pytorchjob,
)

LWS_ON = AdmissionPolicy(
    frameworks=frozenset({"batch/job", "leaderworkerset.x-k8s.io/leaderworkerset", "kubeflow.org/pytorchjob"})
)
PARENT = keys.POD_SUSPENDING_PARENT
LWS_NAME = "leaderworkerset.x-k8s.io/leaderworkerset"


def _tmpl(obj: dict[str, Any], which: str) -> dict[str, Any]:
    result: dict[str, Any] = obj["spec"]["leaderWorkerTemplate"][which]
    return result


def test_29_lws_default_queue_stamped_into_templates(webhook: WebhookServer) -> None:
    webhook.reset(LWS_ON, StaticLookup(local_queues={("default", "default")}))
    out = mutate(webhook, LWS_M, lws(labels={keys.PRIORITY_CLASS: "high-priority"}))
    assert labels_of(out)[keys.QUEUE_NAME] == "default"
    for which in ("leaderTemplate", "workerTemplate"):
        t = _tmpl(out, which)
        assert labels_of(t) == {keys.QUEUE_NAME: "default", keys.PRIORITY_CLASS: "high-priority"}
        assert annotations_of(t)[PARENT] == LWS_NAME and annotations_of(t)[keys.POD_GROUP_SERVING] == "true"
    assert annotations_of(_tmpl(out, "workerTemplate"))[keys.POD_INDEX_OFFSET] == "1"
    assert keys.POD_INDEX_OFFSET not in annotations_of(_tmpl(out, "leaderTemplate"))


def test_30_lws_variants(webhook: WebhookServer) -> None:
    webhook.reset(LWS_ON, StaticLookup(local_queues={("default", "default")}))
    out = mutate(webhook, LWS_M, lws(leader=False))
    assert keys.POD_INDEX_OFFSET not in annotations_of(_tmpl(out, "workerTemplate"))
    assert annotations_of(_tmpl(out, "workerTemplate"))[PARENT] == LWS_NAME
    out = mutate(webhook, LWS_M, lws(worker_annotations={keys.PODSET_GROUP_NAME: "g"}))
    assert keys.POD_INDEX_OFFSET not in annotations_of(_tmpl(out, "workerTemplate"))
    out = mutate(webhook, LWS_M, lws(queue="test-queue", worker_labels={keys.QUEUE_NAME: "user-queue"}))
    assert labels_of(_tmpl(out, "workerTemplate"))[keys.QUEUE_NAME] == "test-queue"
    webhook.reset(LWS_ON)
    assert "patch" not in webhook.admit(LWS_M, lws())


def test_lws_queueless_under_manage_without_queue_name_is_held_per_group(webhook: WebhookServer) -> None:
    """The v0.12 fix: the decision is made on the LWS, so every pod is held by its parent."""
    webhook.reset(AdmissionPolicy(manage_jobs_without_queue_name=True, frameworks=LWS_ON.frameworks))
    out = mutate(webhook, LWS_M, lws())
    for which in ("leaderTemplate", "workerTemplate"):
        assert annotations_of(_tmpl(out, which))[PARENT] == LWS_NAME
        assert keys.QUEUE_NAME not in labels_of(_tmpl(out, which))
    leader_pod = pod(annotations={PARENT: LWS_NAME})
    held = mutate(webhook, POD_M, leader_pod)
    assert {"name": keys.ADMISSION_GATE} in held["spec"]["schedulingGates"]
    assert keys.MANAGED not in labels_of(held) and not held["metadata"].get("finalizers")


def test_31_lws_create_validation(webhook: WebhookServer) -> None:
    webhook.reset(LWS_ON)
    for replicas in (-1, 1_000_001):
        assert deny(webhook, LWS_V, lws(replicas=replicas)).startswith("spec.replicas: Invalid value")
    assert 'Invalid value: "test/queue"' in deny(webhook, LWS_V, lws(queue="test/queue"))
    assert "Forbidden" in deny(webhook, LWS_V, lws(annotations={keys.ELASTIC_JOB: "true"}))
    both = {
        keys.PODSET_REQUIRED_TOPOLOGY: "cloud.com/block",
        keys.PODSET_PREFERRED_TOPOLOGY: "cloud.com/block",
    }
    msg = deny(webhook, LWS_V, lws(leader_annotations=both, worker_annotations=both))
    assert (
        "leaderTemplate.metadata.annotations: Invalid" in msg
        and "workerTemplate.metadata.annotations: Invalid" in msg
    )
    req = {keys.PODSET_REQUIRED_TOPOLOGY: "cloud.com/block"}
    g = keys.PODSET_GROUP_NAME
    bad = [
        lws(leader_annotations={**req, g: "g"}, worker_annotations=req),
        lws(leader_annotations={**req, g: "a"}, worker_annotations={**req, g: "b"}),
        lws(
            leader_annotations={keys.PODSET_REQUIRED_TOPOLOGY: "cloud.com/rack", g: "g"},
            worker_annotations={**req, g: "g"},
        ),
        lws(leader_annotations={**req, g: "123"}, worker_annotations={**req, g: "123"}),
        lws(leader=False, worker_annotations={**req, g: "g"}),
    ]
    for obj in bad:
        assert "Invalid value" in deny(webhook, LWS_V, obj)
    allow(webhook, LWS_V, lws(leader_annotations={**req, g: "g"}, worker_annotations={**req, g: "g"}))


def test_32_lws_queue_updates(webhook: WebhookServer) -> None:
    webhook.reset(LWS_ON)
    allow(webhook, LWS_V, lws(queue="new-test-queue", ready=0), lws(queue="test-queue", ready=0))
    assert "immutable" in deny(
        webhook, LWS_V, lws(queue="new-test-queue", ready=1), lws(queue="test-queue", ready=1)
    )
    # kueue v0.19.2 leaderworkerset_webhook_test.go TestValidateUpdate "delete queue name"
    assert deny(webhook, LWS_V, lws(), lws(queue="test-queue")) == (
        f'metadata.labels[{keys.QUEUE_NAME}]: Invalid value: "": field is immutable')


def test_33_lws_size_and_replicas(webhook: WebhookServer) -> None:
    webhook.reset(LWS_ON)
    for size in (10, 1):
        msg = deny(webhook, LWS_V, lws(queue="q", size=size), lws(queue="q", size=2))
        assert msg.startswith("spec.leaderWorkerTemplate.size: Invalid value")
    webhook.reset(
        AdmissionPolicy(frameworks=LWS_ON.frameworks, gates=FeatureGates({"LWSImmutableGroupSize": False}))
    )
    allow(webhook, LWS_V, lws(queue="q", size=10), lws(queue="q", size=2))
    webhook.reset(LWS_ON)
    allow(webhook, LWS_V, lws(size=10), lws(size=2))
    allow(webhook, LWS_V, lws(queue="q", replicas=3), lws(queue="q", replicas=1))


def test_34_lws_template_shape(webhook: WebhookServer) -> None:
    webhook.reset(LWS_ON)
    old = lws(queue="q")
    new = lws(queue="q")
    for which in ("leaderTemplate", "workerTemplate"):
        _tmpl(new, which)["spec"]["containers"][0]["image"] = "nginx:2"
    allow(webhook, LWS_V, new, old)
    _tmpl(new, "workerTemplate")["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    msg = deny(webhook, LWS_V, new, old)
    assert msg.startswith(
        "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.requests: Invalid"
    )
    new = lws(queue="q")
    _tmpl(new, "leaderTemplate")["spec"]["initContainers"] = [
        {"name": "i", "resources": {"requests": {"cpu": "1"}}}
    ]
    _tmpl(old, "leaderTemplate")["spec"]["initContainers"] = [{"name": "i"}]
    assert "leaderTemplate.spec.initContainers[0].resources.requests" in deny(webhook, LWS_V, new, old)


def test_35_lws_priority_class_updates(webhook: WebhookServer) -> None:
    webhook.reset(LWS_ON)
    p = keys.PRIORITY_CLASS
    assert "Invalid" in deny(webhook, LWS_V, lws(labels={p: "a"}, ready=1), lws(ready=1))
    allow(webhook, LWS_V, lws(labels={p: "b"}, ready=1), lws(labels={p: "a"}, ready=1))
    for ready in (0, 1):
        assert "cannot be removed" in deny(
            webhook, LWS_V, lws(ready=ready), lws(labels={p: "a"}, ready=ready)
        )
    allow(webhook, LWS_V, lws(labels={p: "a"}, ready=0), lws(ready=0))
    allow(webhook, LWS_V, lws(labels={p: "b"}, ready=0), lws(labels={p: "a"}, ready=0))


def test_39_parent_held_pod_gets_gate_and_role_hash_only(webhook: WebhookServer) -> None:
    webhook.reset(
        AdmissionPolicy(frameworks=LWS_ON.frameworks, gates=FeatureGates({"TopologyAwareScheduling": False}))
    )
    out = mutate(webhook, POD_M, pod(labels={keys.QUEUE_NAME: "test-queue"}, annotations={PARENT: "test"}))
    assert out["spec"]["schedulingGates"] == [{"name": keys.ADMISSION_GATE}]
    assert len(annotations_of(out)[keys.ROLE_HASH]) == 8
    assert keys.MANAGED not in labels_of(out) and not out["metadata"].get("finalizers")


def test_40_standalone_pod(webhook: WebhookServer) -> None:
    webhook.reset(
        AdmissionPolicy(frameworks=frozenset({"pod"}), gates=FeatureGates({"TopologyAwareScheduling": False}))
    )
    out = mutate(webhook, POD_M, pod(labels={keys.QUEUE_NAME: "test-queue"}))
    assert labels_of(out)[keys.MANAGED] == "true" and out["metadata"]["finalizers"] == [
        keys.MANAGED_POD_FINALIZER
    ]
    assert out["spec"]["schedulingGates"] == [
        {"name": keys.ADMISSION_GATE}
    ] and keys.ROLE_HASH in annotations_of(out)
    webhook.reset(AdmissionPolicy(frameworks=frozenset({"pod"})))
    out = mutate(
        webhook,
        POD_M,
        pod(
            labels={keys.QUEUE_NAME: "test-queue", "test-label": "test-value"},
            annotations={
                keys.PODSET_REQUIRED_TOPOLOGY: "cloud.com/block",
                keys.POD_GROUP_POD_INDEX_LABEL: "test-label",
            },
        ),
    )
    assert {"name": keys.TOPOLOGY_GATE} in out["spec"]["schedulingGates"]
    assert labels_of(out)[keys.POD_GROUP_POD_INDEX] == "test-value"


def test_a_labelled_pod_is_left_alone_while_only_lws_implies_the_pod_integration(
        webhook: WebhookServer) -> None:
    # Kueue gates it and its reconciler then skips it for good; here it runs unmanaged.
    webhook.reset(LWS_ON)
    response = webhook.admit(POD_M, pod(labels={keys.QUEUE_NAME: "test-queue"}))
    assert response["allowed"] and "patch" not in response


def test_41_pod_owned_by_queued_job(webhook: WebhookServer) -> None:
    lookup = webhook.reset(AdmissionPolicy(frameworks=frozenset({"pod", "batch/job"})))
    lookup.objects[("batch/v1", "Job", "default", "parent")] = job("parent", queue="q")
    child = pod(labels={keys.QUEUE_NAME: "q"}, owner=owner_ref("batch/v1", "Job", "parent", "uid-parent"))
    assert "patch" not in webhook.admit(POD_M, child)
    webhook.reset(AdmissionPolicy(frameworks=frozenset({"pod"})), lookup)
    assert labels_of(mutate(webhook, POD_M, child))[keys.MANAGED] == "true"


def test_42_pod_group_validation(webhook: WebhookServer) -> None:
    webhook.reset(LWS_ON)
    group = {keys.POD_GROUP_NAME: "group"}
    assert "Required value" in deny(webhook, POD_V, pod(annotations=group))
    for total in ("0", ""):
        msg = deny(webhook, POD_V, pod(annotations={**group, keys.POD_GROUP_TOTAL_COUNT: total}))
        assert f"metadata.annotations[{keys.POD_GROUP_TOTAL_COUNT}]: Invalid" in msg
    full = {**group, keys.POD_GROUP_TOTAL_COUNT: "2"}
    assert deny(webhook, POD_V, pod(annotations={**full, keys.PREBUILT_WORKLOAD_NAME: "other"})) == (
        f'metadata.annotations[{keys.PREBUILT_WORKLOAD_NAME}]: Invalid value: "other": '
        "prebuilt workload and pod group should be equal")
    allow(webhook, POD_V, pod(annotations=full))
    assert "immutable" in deny(
        webhook, POD_V, pod(annotations={**full, keys.POD_GROUP_NAME: "other"}), pod(annotations=full)
    )


def test_ordinary_pods_pass_untouched(webhook: WebhookServer) -> None:
    webhook.reset(LWS_ON)
    response = webhook.admit(POD_M, pod())
    assert response["allowed"] and "patch" not in response
    allow(webhook, POD_V, pod())


def test_pytorchjob_suspended_in_run_policy_and_tas_checked(webhook: WebhookServer) -> None:
    webhook.reset(LWS_ON)
    out = mutate(webhook, PT_M, pytorchjob(queue="q"))
    assert out["spec"]["runPolicy"]["suspend"] is True
    msg = deny(
        webhook,
        PT_V,
        pytorchjob(
            worker_annotations={
                keys.PODSET_SLICE_REQUIRED_TOPOLOGY: "cloud.com/rack",
                keys.PODSET_SLICE_SIZE: "3",
            }
        ),
    )
    assert msg.startswith("spec.pytorchReplicaSpecs[Worker].template.metadata.annotations")
    assert 'Invalid value: "bad q"' in deny(webhook, PT_V, pytorchjob(queue="bad q"))


def test_disabled_integration_is_a_no_op(webhook: WebhookServer) -> None:
    webhook.reset(AdmissionPolicy())  # only batch/job
    response = webhook.admit(PT_M, pytorchjob(queue="q"))
    assert response["allowed"] and "patch" not in response
    assert webhook.admit(LWS_V, lws(queue="bad q"))["allowed"]
