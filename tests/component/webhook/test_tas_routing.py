"""Pods of topology-aware PodSets are sent to the TAS scheduler at CREATE, whichever
integration made them; other pods are left alone; a user's own scheduler is kept with a
warning. Over TLS, through the pod mutating webhook."""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.webhook.facts import StaticLookup

from .conftest import WebhookServer, mutate
from .objects import POD_M, owner_ref, pod

TAS = "pykueue-tas-scheduler"
JOBS_ONLY = AdmissionPolicy()  # batch/job only: the pod integration is off
LWS_ON = AdmissionPolicy(frameworks=frozenset({"batch/job", "leaderworkerset.x-k8s.io/leaderworkerset"}))


def _scheduler(obj: dict[str, Any]) -> str | None:
    value = obj["spec"].get("schedulerName")
    return None if value is None else str(value)


def _job_pod(**labels: str) -> dict[str, Any]:
    return pod(labels={keys.PODSET: "main", **labels}, owner=owner_ref("batch/v1", "Job", "j", "uid-j"))


def test_a_pod_started_with_a_topology_assignment_goes_to_the_tas_scheduler(webhook: WebhookServer) -> None:
    webhook.reset(JOBS_ONLY)
    out = mutate(webhook, POD_M, _job_pod(**{keys.TAS_LABEL: "true"}))
    assert _scheduler(out) == TAS
    explicit_default = _job_pod(**{keys.TAS_LABEL: "true"})
    explicit_default["spec"]["schedulerName"] = "default-scheduler"
    assert _scheduler(mutate(webhook, POD_M, explicit_default)) == TAS


def test_other_pods_are_untouched(webhook: WebhookServer) -> None:
    webhook.reset(JOBS_ONLY, StaticLookup(tas_only_queues={("default", "q")}))
    response = webhook.admit(POD_M, _job_pod())
    assert response["allowed"] and "patch" not in response
    # A topology annotation alone, on a pod Kueue does not queue, decides nothing.
    plain = pod(annotations={keys.PODSET_REQUIRED_TOPOLOGY: "rack"})
    assert _scheduler(mutate(webhook, POD_M, plain)) is None


def test_a_user_scheduler_is_kept_with_a_warning(webhook: WebhookServer) -> None:
    webhook.reset(JOBS_ONLY)
    obj = _job_pod(**{keys.TAS_LABEL: "true"})
    obj["spec"]["schedulerName"] = "volcano"
    response = webhook.admit(POD_M, obj)
    assert response["allowed"] and "patch" not in response
    assert len(response["warnings"]) == 1
    assert "'volcano' is kept" in response["warnings"][0] and TAS in response["warnings"][0]


def test_group_pods_created_before_admission_are_routed_by_annotation_or_implied_topology(
        webhook: WebhookServer) -> None:
    lookup = webhook.reset(LWS_ON, StaticLookup(local_queues={("default", "q"), ("default", "tas-q")},
                                                tas_only_queues={("default", "tas-q")}))
    annotated = pod(labels={keys.QUEUE_NAME: "q"},
                    annotations={keys.POD_SUSPENDING_PARENT: "leaderworkerset.x-k8s.io/leaderworkerset",
                                 keys.PODSET_REQUIRED_TOPOLOGY: "cloud.provider.com/topology-rack"})
    out = mutate(webhook, POD_M, annotated)
    assert _scheduler(out) == TAS
    assert any(g["name"] == keys.ADMISSION_GATE for g in out["spec"]["schedulingGates"])  # still gated
    implied = pod(labels={keys.QUEUE_NAME: "tas-q"},
                  annotations={keys.POD_SUSPENDING_PARENT: "leaderworkerset.x-k8s.io/leaderworkerset"})
    assert _scheduler(mutate(webhook, POD_M, implied)) == TAS
    not_tas = pod(labels={keys.QUEUE_NAME: "q"},
                  annotations={keys.POD_SUSPENDING_PARENT: "leaderworkerset.x-k8s.io/leaderworkerset"})
    assert _scheduler(mutate(webhook, POD_M, not_tas)) is None
    lookup.tas_only_queues.clear()
    assert _scheduler(mutate(webhook, POD_M, implied)) is None


def test_the_scheduler_name_comes_from_the_configuration(webhook: WebhookServer) -> None:
    policy = AdmissionPolicy.from_config({"tasScheduler": {"schedulerName": "racks-scheduler"}})
    assert policy.tas_scheduler == "racks-scheduler"
    assert AdmissionPolicy.from_config({}).tas_scheduler == TAS
    webhook.reset(policy)
    assert _scheduler(mutate(webhook, POD_M, _job_pod(**{keys.TAS_LABEL: "true"}))) == "racks-scheduler"


def test_an_update_is_not_routed(webhook: WebhookServer) -> None:
    webhook.reset(JOBS_ONLY)
    obj = _job_pod(**{keys.TAS_LABEL: "true"})
    response = webhook.admit(POD_M, obj, old=obj)
    assert response["allowed"] and "patch" not in response
