"""Spec cases 1-28: batch/v1 Job defaulting and validation, over TLS (Kueue HEAD gates)."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.gates import FeatureGates
from pykueue.manager.jobs.registry import workloads_for
from pykueue.webhook.facts import StaticLookup

from .conftest import WebhookServer
from .objects import JOB_M, JOB_V, job, labels_of, owner_ref

MJWQN = AdmissionPolicy(manage_jobs_without_queue_name=True)
ALL = AdmissionPolicy(frameworks=frozenset({"batch/job", "kubeflow.org/mpijob"}))
SELECTOR = {
    "matchExpressions": [
        {"key": keys.NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": ["kube-system", "unmanaged-ns"]}
    ]
}


def mutate(w: WebhookServer, obj: dict[str, Any]) -> dict[str, Any]:
    response = w.admit(JOB_M, obj)
    assert response["allowed"], response
    result: dict[str, Any] = response["object"]
    return result


def deny_message(w: WebhookServer, obj: dict[str, Any], old: dict[str, Any] | None = None) -> str:
    response = w.admit(JOB_V, obj, old=old)
    assert not response["allowed"], "expected a denial"
    assert response["status"]["code"] == 403
    message: str = response["status"]["message"]
    return message


def allowed(w: WebhookServer, obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
    response = w.admit(JOB_V, obj, old=old)
    assert response["allowed"], response.get("status")


# -- mutating -----------------------------------------------------------------------------


def test_01_queue_named_job_is_suspended(webhook: WebhookServer) -> None:
    assert mutate(webhook, job(queue="queue"))["spec"]["suspend"] is True


def test_02_manage_without_queue_name_suspends(webhook: WebhookServer) -> None:
    webhook.reset(MJWQN)
    assert mutate(webhook, job())["spec"]["suspend"] is True


def test_03_unmanaged_job_untouched(webhook: WebhookServer) -> None:
    response = webhook.admit(JOB_M, job())
    assert response["allowed"] and "patch" not in response


def test_the_old_queue_name_annotation_names_no_queue(webhook: WebhookServer) -> None:
    # Kueue v0.19 reads only the label (v0.12 still read the annotation of the same key): a
    # Job named a queue by the annotation alone is not managed: it runs, with no Workload.
    obj = job(annotations={keys.QUEUE_NAME_ANNOTATION: "queue"})
    assert mutate(webhook, obj)["spec"].get("suspend") is not True
    assert workloads_for(obj) == []


def test_04_default_local_queue_labels_and_suspends(webhook: WebhookServer) -> None:
    webhook.reset(lookup=StaticLookup(local_queues={("default", "default")}))
    out = mutate(webhook, job())
    assert labels_of(out)[keys.QUEUE_NAME] == "default" and out["spec"]["suspend"] is True


def test_05_explicit_queue_kept_with_default_lq(webhook: WebhookServer) -> None:
    webhook.reset(lookup=StaticLookup(local_queues={("default", "default")}))
    assert labels_of(mutate(webhook, job(queue="test-queue")))[keys.QUEUE_NAME] == "test-queue"


def test_06_owned_by_enabled_mpijob_left_alone(webhook: WebhookServer) -> None:
    mpi = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "owner", "namespace": "default", "uid": "uid-owner"},
    }
    lookup = webhook.reset(ALL, StaticLookup(local_queues={("default", "default")}))
    lookup.objects[("kubeflow.org/v2beta1", "MPIJob", "default", "owner")] = mpi
    response = webhook.admit(
        JOB_M, job(owner=owner_ref("kubeflow.org/v2beta1", "MPIJob", "owner", "uid-owner"))
    )
    assert response["allowed"] and "patch" not in response


def test_07_owner_of_disabled_integration_gets_default_queue(webhook: WebhookServer) -> None:
    lookup = webhook.reset(lookup=StaticLookup(local_queues={("default", "default")}))
    lookup.objects[("jobset.x-k8s.io/v1alpha2", "JobSet", "default", "js")] = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "default", "uid": "uid-js"},
    }
    out = mutate(webhook, job(owner=owner_ref("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "uid-js")))
    assert labels_of(out)[keys.QUEUE_NAME] == "default"


def test_08_multikueue_sets_managed_by_unless_user_chose(webhook: WebhookServer) -> None:
    webhook.reset(lookup=StaticLookup(multikueue_queues={("default", "local-queue")}))
    out = mutate(webhook, job(queue="local-queue"))
    assert out["spec"]["managedBy"] == keys.MULTIKUEUE_CONTROLLER and out["spec"]["suspend"] is True
    out = mutate(webhook, job(queue="local-queue", managedBy="example.com/foo"))
    assert out["spec"]["managedBy"] == "example.com/foo"


def test_09_queue_existence_not_checked(webhook: WebhookServer) -> None:
    assert mutate(webhook, job(queue="invalid-local-queue"))["spec"]["suspend"] is True


def test_10_default_lq_not_applied_in_excluded_namespace(webhook: WebhookServer) -> None:
    webhook.reset(
        AdmissionPolicy(managed_jobs_namespace_selector=SELECTOR),
        StaticLookup(local_queues={("unmanaged-ns", "default")}),
    )
    response = webhook.admit(JOB_M, job(namespace="unmanaged-ns"))
    assert response["allowed"] and "patch" not in response


@pytest.mark.parametrize(
    ("gate", "label", "wpc", "owned", "expect"),
    [
        (True, None, True, False, "default"),
        (False, None, True, False, None),
        (True, "high", True, False, "high"),
        (True, None, False, False, None),
        (True, None, True, True, None),
    ],
)
def test_11_default_priority_class(
    webhook: WebhookServer, gate: bool, label: str | None, wpc: bool, owned: bool, expect: str | None
) -> None:
    lookup = webhook.reset(
        AdmissionPolicy(gates=FeatureGates({"WorkloadPriorityClassDefaulting": gate})),
        StaticLookup(priority_classes={"default"} if wpc else set()),
    )
    lookup.objects[("batch/v1", "Job", "default", "parent")] = job("parent", queue="q")
    obj = job(
        labels={keys.PRIORITY_CLASS: label} if label else None,
        owner=owner_ref("batch/v1", "Job", "parent", "uid-parent") if owned else None,
    )
    assert labels_of(mutate(webhook, obj)).get(keys.PRIORITY_CLASS) == expect


def test_12_missing_owner_denied_unless_deleting(webhook: WebhookServer) -> None:
    webhook.reset(MJWQN)
    child = job(owner=owner_ref("batch/v1", "Job", "parent", "uid-parent"))
    response = webhook.admit(JOB_M, child)
    assert not response["allowed"] and "not found" in response["status"]["message"]
    child["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    response = webhook.admit(JOB_M, child)
    assert response["allowed"] and "patch" not in response
    webhook.reset(
        AdmissionPolicy(
            manage_jobs_without_queue_name=True,
            gates=FeatureGates({"SkipAncestorCheckForDeletedWorkloads": False}),
        )
    )
    assert not webhook.admit(JOB_M, child)["allowed"]


def test_13_selector_excludes_queueless_but_not_queued(webhook: WebhookServer) -> None:
    webhook.reset(
        AdmissionPolicy(manage_jobs_without_queue_name=True, managed_jobs_namespace_selector=SELECTOR)
    )
    assert "patch" not in webhook.admit(JOB_M, job(namespace="unmanaged-ns"))
    assert mutate(webhook, job(namespace="unmanaged-ns", queue="q"))["spec"]["suspend"] is True


# -- validating ---------------------------------------------------------------------------


def test_14_queue_name_format(webhook: WebhookServer) -> None:
    message = deny_message(webhook, job(queue="queue name"))
    assert message.startswith('metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "queue name"')
    assert "RFC 1123" in message


@pytest.mark.parametrize(
    ("value", "elastic", "ok"),
    [("NaN", False, False), ("5", False, False), ("3", False, True), ("2", True, False)],
)
def test_15_min_parallelism(webhook: WebhookServer, value: str, elastic: bool, ok: bool) -> None:
    ann = {keys.JOB_MIN_PARALLELISM: value}
    if elastic:
        ann[keys.ELASTIC_JOB] = "true"
    obj = job(parallelism=4, completions=6, annotations=ann)
    if ok:
        allowed(webhook, obj)
    else:
        assert f"metadata.annotations[{keys.JOB_MIN_PARALLELISM}]: Invalid value" in deny_message(
            webhook, obj
        )


def test_16_completions_equal_parallelism(webhook: WebhookServer) -> None:
    key = keys.JOB_COMPLETIONS_EQUAL_PARALLELISM
    assert "ParseBool" in deny_message(webhook, job(annotations={key: "-"}))
    msg = deny_message(
        webhook, job(parallelism=4, completions=6, completionMode="Indexed", annotations={key: "true"})
    )
    assert msg.startswith("spec.completions: Invalid value: 6")
    for mode in (None, "NonIndexed"):
        extra = {"completionMode": mode} if mode else {}
        msg = deny_message(webhook, job(parallelism=4, completions=4, annotations={key: "true"}, **extra))
        assert msg.startswith(f"metadata.annotations[{key}]")
    allowed(webhook, job(parallelism=4, completions=4, completionMode="Indexed", annotations={key: "true"}))


def test_17_prebuilt_workload_name(webhook: WebhookServer) -> None:
    key = keys.PREBUILT_WORKLOAD_NAME
    assert 'Invalid value: "workload name"' in deny_message(webhook, job(labels={key: "workload name"}))
    allowed(webhook, job(labels={key: "workload-name"}))
    assert deny_message(webhook, job(annotations={key: "workload name"})).startswith(
        f"metadata.annotations[{key}]"
    )


@pytest.mark.parametrize(("value", "ok"), [("NaN", False), ("0", False), ("-10", False), ("10", True)])
def test_18_max_exec_time(webhook: WebhookServer, value: str, ok: bool) -> None:
    obj = job(labels={keys.MAX_EXEC_TIME_SECONDS: value})
    if ok:
        allowed(webhook, obj)
    else:
        assert deny_message(webhook, obj).startswith(f"metadata.labels[{keys.MAX_EXEC_TIME_SECONDS}]")


@pytest.mark.parametrize(
    ("annotations", "parallelism", "fragment"),
    [
        (
            {
                keys.PODSET_REQUIRED_TOPOLOGY: "cloud.com/block",
                keys.PODSET_PREFERRED_TOPOLOGY: "cloud.com/block",
            },
            1,
            "spec.template.metadata.annotations: Invalid value",
        ),
        (
            {keys.PODSET_REQUIRED_TOPOLOGY: "some required value"},
            1,
            f"spec.template.metadata.annotations[{keys.PODSET_REQUIRED_TOPOLOGY}]: Invalid value",
        ),
        (
            {
                keys.PODSET_REQUIRED_TOPOLOGY: "cloud.com/block",
                keys.PODSET_SLICE_REQUIRED_TOPOLOGY: "cloud.com/rack",
            },
            1,
            f"spec.template.metadata.annotations[{keys.PODSET_SLICE_SIZE}]: Required value",
        ),
        (
            {keys.PODSET_SLICE_REQUIRED_TOPOLOGY: "cloud.com/rack", keys.PODSET_SLICE_SIZE: "not a number"},
            1,
            'Invalid value: "not a number"',
        ),
        (
            {keys.PODSET_SLICE_REQUIRED_TOPOLOGY: "cloud.com/rack", keys.PODSET_SLICE_SIZE: "-1"},
            1,
            'Invalid value: "-1"',
        ),
        (
            {keys.PODSET_SLICE_REQUIRED_TOPOLOGY: "cloud.com/rack", keys.PODSET_SLICE_SIZE: "0"},
            1,
            'Invalid value: "0"',
        ),
        ({keys.PODSET_SLICE_SIZE: "1"}, 1, f"annotations[{keys.PODSET_SLICE_SIZE}]: Forbidden"),
        (
            {keys.PODSET_SLICE_REQUIRED_TOPOLOGY: "cloud.com/rack", keys.PODSET_SLICE_SIZE: "20"},
            4,
            "must not be greater than pod set count 4",
        ),
    ],
)
def test_19_tas_annotations(
    webhook: WebhookServer, annotations: dict[str, str], parallelism: int, fragment: str
) -> None:
    assert fragment in deny_message(webhook, job(parallelism=parallelism, template_annotations=annotations))


def test_19_tas_unconstrained_with_slices_ok(webhook: WebhookServer) -> None:
    allowed(
        webhook,
        job(
            parallelism=4,
            template_annotations={
                keys.PODSET_UNCONSTRAINED_TOPOLOGY: "true",
                keys.PODSET_SLICE_REQUIRED_TOPOLOGY: "cloud.com/rack",
                keys.PODSET_SLICE_SIZE: "2",
            },
        ),
    )


def test_20_elastic_with_topology(webhook: WebhookServer) -> None:
    elastic = {keys.ELASTIC_JOB: "true"}
    for key in (keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_PREFERRED_TOPOLOGY):
        msg = deny_message(webhook, job(annotations=elastic, template_annotations={key: "cloud.com/block"}))
        assert f"spec.template.metadata.annotations[{key}]: Forbidden" in msg
    allowed(
        webhook, job(annotations=elastic, template_annotations={keys.PODSET_UNCONSTRAINED_TOPOLOGY: "true"})
    )


@pytest.mark.parametrize(
    ("value", "ok", "fragment"),
    [
        ("example.com/controller", True, ""),
        ("example.com/a , example.com/b", True, ""),
        ("this is an invalid value", False, "Invalid value"),
        ("example.com/a,example.com/a", False, "duplicate gate"),
        ("example.com/" + "x" * 60, False, "Too long"),
        ("example .com/gate", False, "Invalid value"),
        ("", True, ""),
    ],
)
def test_21_admission_gated_by(webhook: WebhookServer, value: str, ok: bool, fragment: str) -> None:
    obj = job(annotations={keys.ADMISSION_GATED_BY: value})
    if ok:
        allowed(webhook, obj)
    else:
        assert fragment in deny_message(webhook, obj)


def test_21_admission_gated_by_gate_off(webhook: WebhookServer) -> None:
    webhook.reset(AdmissionPolicy(gates=FeatureGates({"AdmissionGatedBy": False})))
    allowed(webhook, job(annotations={keys.ADMISSION_GATED_BY: "this is an invalid value"}))


def test_22_queue_name_update(webhook: WebhookServer) -> None:
    assert "field is immutable" in deny_message(webhook, job(queue="queue"), job())
    allowed(webhook, job(queue="queue", suspend=True), job(suspend=True))
    assert "field is immutable" in deny_message(webhook, job(queue="queue2"), job(queue="queue"))
    allowed(webhook, job(queue="queue2", suspend=True), job(queue="queue", suspend=True))


def test_23_parallelism_locked_while_partially_admitted_job_runs(webhook: WebhookServer) -> None:
    ann = {keys.JOB_MIN_PARALLELISM: "3"}
    msg = deny_message(webhook, job(parallelism=5, annotations=ann), job(parallelism=4, annotations=ann))
    assert msg.startswith("spec.parallelism: Forbidden")
    stopping = {**ann, keys.STOPPING: "true"}
    allowed(
        webhook,
        job(parallelism=5, suspend=True, annotations=stopping),
        job(parallelism=4, suspend=True, annotations=stopping),
    )


def test_24_completions_equal_parallelism_locked_while_running(webhook: WebhookServer) -> None:
    key = keys.JOB_COMPLETIONS_EQUAL_PARALLELISM
    spec = {"parallelism": 4, "completions": 4, "completionMode": "Indexed"}
    msg = deny_message(
        webhook, job(annotations={key: "false"}, **spec), job(annotations={key: "true"}, **spec)
    )
    assert "Forbidden" in msg
    allowed(
        webhook,
        job(annotations={key: "false"}, suspend=True, **spec),
        job(annotations={key: "true"}, suspend=True, **spec),
    )


def test_25_priority_class_updates(webhook: WebhookServer) -> None:
    key = keys.PRIORITY_CLASS
    assert "Invalid value" in deny_message(webhook, job(labels={key: "test"}), job())
    allowed(webhook, job(labels={key: "new-test"}), job(labels={key: "test"}))
    for suspend in (False, True):
        assert "cannot be removed" in deny_message(
            webhook, job(suspend=suspend), job(labels={key: "test"}, suspend=suspend)
        )
    allowed(webhook, job(labels={key: "test"}, suspend=True), job(suspend=True))
    allowed(webhook, job(labels={key: "new"}, suspend=True), job(labels={key: "test"}, suspend=True))


def test_26_max_exec_time_and_prebuilt_updates(webhook: WebhookServer) -> None:
    key = keys.MAX_EXEC_TIME_SECONDS
    assert "immutable" in deny_message(webhook, job(labels={key: "20"}), job(labels={key: "10"}))
    assert "immutable" in deny_message(
        webhook, job(labels={key: "20"}), job(labels={key: "10"}, suspend=True)
    )
    allowed(webhook, job(labels={key: "20"}, suspend=True), job(labels={key: "10"}, suspend=True))
    pre = keys.PREBUILT_WORKLOAD_NAME
    assert "immutable" in deny_message(
        webhook, job(labels={pre: "new-workload"}), job(labels={pre: "old-workload"})
    )
    allowed(webhook, job(annotations={pre: "old-workload"}), job(labels={pre: "old-workload"}))


def test_27_admission_gated_by_updates(webhook: WebhookServer) -> None:
    key = keys.ADMISSION_GATED_BY
    assert "Forbidden" in deny_message(webhook, job(annotations={key: "example.com/a"}), job())
    both = "example.com/a,example.com/b"
    allowed(webhook, job(), job(annotations={key: both}))
    allowed(webhook, job(annotations={key: "example.com/a"}), job(annotations={key: both}))
    allowed(webhook, job(annotations={key: "example.com/b,example.com/a"}), job(annotations={key: both}))
    assert "Forbidden" in deny_message(
        webhook, job(annotations={key: "example.com/c"}), job(annotations={key: "example.com/a"})
    )


def test_28_queue_removal_with_default_lq(webhook: WebhookServer) -> None:
    webhook.reset(lookup=StaticLookup(local_queues={("default", "default")}))
    msg = deny_message(webhook, job(suspend=True), job(queue="q", suspend=True))
    assert msg.startswith("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value") and "default" in msg
