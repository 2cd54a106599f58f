"""JobSet admission over TLS: the mutating and validating paths of jobset.x-k8s.io/v1alpha2."""

from __future__ import annotations

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.webhook.facts import StaticLookup
from tests.unit.jobs.jobset_objects import jobset, replicated_job

from .conftest import WebhookServer, allow, deny, mutate

JS_M = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
JS_V = "/validate-jobset-x-k8s-io-v1alpha2-jobset"
ON = AdmissionPolicy(frameworks=frozenset({"batch/job", "jobset.x-k8s.io/jobset"}))
REQ, GROUP = keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_GROUP_NAME


def test_a_jobset_is_queued_in_the_default_local_queue_and_suspended(webhook: WebhookServer) -> None:
    webhook.reset(ON, StaticLookup(local_queues={("default", "default")}))
    out = mutate(webhook, JS_M, jobset("js", "default", replicated_job("rj"), suspend=False))
    assert out["metadata"]["labels"][keys.QUEUE_NAME] == "default"
    assert out["spec"]["suspend"] is True and "managedBy" not in out["spec"]


def test_a_jobset_for_a_multikueue_queue_is_managed_by_multikueue(webhook: WebhookServer) -> None:
    webhook.reset(ON, StaticLookup(local_queues={("default", "lq")}, multikueue_queues={("default", "lq")}))
    out = mutate(webhook, JS_M, jobset("js", "default", replicated_job("rj"), queue="lq"))
    assert out["spec"]["managedBy"] == keys.MULTIKUEUE_CONTROLLER


def test_the_integration_off_leaves_jobsets_alone(webhook: WebhookServer) -> None:
    webhook.reset(AdmissionPolicy(), StaticLookup(local_queues={("default", "default")}))
    response = webhook.admit(JS_M, jobset("js", "default", replicated_job("rj"), suspend=False))
    assert response["allowed"] and "patch" not in response


def test_pod_set_groups_are_denied_with_every_error(webhook: WebhookServer) -> None:
    webhook.reset(ON)
    bad = jobset("js", "default",
                 replicated_job("a", replicas=2, pod_annotations={REQ: "cloud.com/rack", GROUP: "g"}),
                 replicated_job("b", replicas=3, pod_annotations={REQ: "cloud.com/rack", GROUP: "g"}))
    message = deny(webhook, JS_V, bad)
    assert message.count("can only define groups where at least one pod set has only 1 replica") == 2
    assert "spec.replicatedJobs[1].template.spec.template.metadata.annotations[" in message
    good = jobset("js", "default",
                  replicated_job("a", pod_annotations={REQ: "cloud.com/rack", GROUP: "g"}),
                  replicated_job("b", replicas=3, pod_annotations={REQ: "cloud.com/rack", GROUP: "g"}))
    allow(webhook, JS_V, good)
    allow(webhook, JS_V, good, bad)


def test_queue_name_change_of_a_running_jobset_is_denied(webhook: WebhookServer) -> None:
    webhook.reset(ON)
    old = jobset("js", "default", replicated_job("rj"), queue="a", suspend=False)
    new = jobset("js", "default", replicated_job("rj"), queue="b", suspend=False)
    assert deny(webhook, JS_V, new, old) == \
        f'metadata.labels[{keys.QUEUE_NAME}]: Invalid value: "b": field is immutable'
