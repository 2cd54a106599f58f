"""A webhook never blocks an object that is not Kueue's because it could not read the cluster.

The bug this guards: the pod webhook walked every pod's owners (ReplicaSet, then Deployment),
the walk's GET was refused (403), and the refusal became a denial, so no Deployment in the
cluster could create pods. Objects that may be Kueue's still get Kueue's answer to a failed
lookup: a denial naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykueue.api import keys
from pykueue.api.wire import JSON
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.integrations import OwnerKey
from pykueue.webhook.facts import LookupFailed, StaticLookup

from .conftest import WebhookServer, deny
from .objects import JOB_M, JOB_V, POD_M, POD_V, job, owner_ref, pod

POLICY = AdmissionPolicy(
    frameworks=frozenset({"batch/job", "pod", "leaderworkerset.x-k8s.io/leaderworkerset"}))
REPLICA_SET = owner_ref("apps/v1", "ReplicaSet", "web-5d4f", "uid-rs")


@dataclass
class RefusingLookup(StaticLookup):
    """Every owner GET is refused as a 403 would be; optionally the namespace read too."""

    refuse_namespaces: bool = False
    owner_gets: list[OwnerKey] = field(default_factory=list)

    async def get_object(self, key: OwnerKey) -> JSON | None:
        self.owner_gets.append(key)
        raise LookupFailed(f"GET {key[1]} {key[2]}/{key[3]}: 403 Forbidden")

    async def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        if self.refuse_namespaces:
            raise LookupFailed(f"GET namespace {namespace}: 403 Forbidden")
        return {keys.NAMESPACE_NAME_LABEL: namespace}


def _use(webhook: WebhookServer, lookup: RefusingLookup, policy: AdmissionPolicy = POLICY) -> RefusingLookup:
    webhook.deps.policy, webhook.deps.lookup = policy, lookup
    return lookup


def test_a_deployment_pod_is_admitted_untouched_without_reading_its_owners(webhook: WebhookServer) -> None:
    lookup = _use(webhook, RefusingLookup())
    for path in (POD_M, POD_V):
        response = webhook.admit(path, pod("web-5d4f-abcde", owner=REPLICA_SET))
        assert response["allowed"], response.get("status")
        assert "patch" not in response
    assert lookup.owner_gets == []  # not Kueue's whoever owns it: nothing to look up


def test_an_unlabelled_pod_passes_when_even_the_namespace_cannot_be_read(webhook: WebhookServer) -> None:
    _use(webhook, RefusingLookup(refuse_namespaces=True))
    for path in (POD_M, POD_V):
        response = webhook.admit(path, pod("web-5d4f-abcde", owner=REPLICA_SET))
        assert response["allowed"], response.get("status")
        assert "patch" not in response


def test_an_unlabelled_job_passes_when_the_cluster_cannot_be_read(webhook: WebhookServer) -> None:
    _use(webhook, RefusingLookup(refuse_namespaces=True))
    for path in (JOB_M, JOB_V):
        response = webhook.admit(path, job("plain"))
        assert response["allowed"], response.get("status")
    assert not webhook.admit(JOB_M, job("plain"))["object"]["spec"]["suspend"]


def test_a_queued_pod_whose_owner_cannot_be_read_is_denied_with_the_reason(webhook: WebhookServer) -> None:
    """It may be Kueue's (its owner may be a managed job): guessing either way would be wrong."""
    lookup = _use(webhook, RefusingLookup())
    message = deny(webhook, POD_M, pod("p", labels={keys.QUEUE_NAME: "user-queue"}, owner=REPLICA_SET))
    assert "403 Forbidden" in message and "ReplicaSet default/web-5d4f" in message
    assert lookup.owner_gets == [("apps/v1", "ReplicaSet", "default", "web-5d4f")]


def test_under_manage_jobs_without_queue_name_every_pod_may_be_kueues(webhook: WebhookServer) -> None:
    policy = AdmissionPolicy(frameworks=POLICY.frameworks, manage_jobs_without_queue_name=True)
    _use(webhook, RefusingLookup(), policy)
    assert "403 Forbidden" in deny(webhook, POD_M, pod("web-5d4f-abcde", owner=REPLICA_SET))
