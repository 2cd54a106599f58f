"""The shared decisions: who is managed, the ancestor walk, default queue and priority."""

from __future__ import annotations

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionDenied, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.defaulting import apply_default_local_queue
from pykueue.manager.jobs.integrations import OwnerLookupNeeded
from pykueue.manager.jobs.ownership import find_managed_ancestor, is_managed, workload_should_be_suspended

DEFAULT_NS = {keys.NAMESPACE_NAME_LABEL: "default"}


def job(
    name: str = "j", queue: str | None = None, owner: dict[str, object] | None = None, uid: str = "uid-j"
) -> dict[str, object]:
    meta: dict[str, object] = {"name": name, "namespace": "default", "uid": uid}
    if queue:
        meta["labels"] = {keys.QUEUE_NAME: queue}
    if owner:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {}}


def ref(kind: str, name: str, uid: str, api_version: str = "batch/v1") -> dict[str, object]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}


def test_policy_from_default_config_excludes_kube_system() -> None:
    policy = AdmissionPolicy.from_config({})
    assert not policy.manage_jobs_without_queue_name
    assert policy.frameworks == {"batch/job"}
    assert is_managed(job(queue="q"), policy, DEFAULT_NS)
    assert not is_managed(job(queue="q"), policy, {keys.NAMESPACE_NAME_LABEL: "kube-system"})
    assert not is_managed(job(), policy, DEFAULT_NS)


def test_manage_without_queue_name_follows_selector() -> None:
    policy = AdmissionPolicy.from_config({"manageJobsWithoutQueueName": True})
    assert is_managed(job(), policy, DEFAULT_NS)
    assert not is_managed(job(), policy, {keys.NAMESPACE_NAME_LABEL: "kueue-system"})


def test_ancestor_walk_asks_for_owner_then_finds_topmost() -> None:
    policy = AdmissionPolicy(manage_jobs_without_queue_name=True)
    child = job(owner=ref("Job", "parent", "uid-p"))
    ctx = AdmissionContext(policy, ClusterFacts(namespace_labels=DEFAULT_NS))
    with pytest.raises(OwnerLookupNeeded) as need:
        find_managed_ancestor(child, ctx)
    assert need.value.key == ("batch/v1", "Job", "default", "parent")
    parent = job("parent", uid="uid-p")
    ctx = AdmissionContext(policy, ClusterFacts(namespace_labels=DEFAULT_NS, owners={need.value.key: parent}))
    assert find_managed_ancestor(child, ctx) is parent
    assert not workload_should_be_suspended(child, ctx)


def test_missing_owner_denies_unless_deleting() -> None:
    policy = AdmissionPolicy(manage_jobs_without_queue_name=True)
    child = job(owner=ref("Job", "parent", "uid-p"))
    ctx = AdmissionContext(
        policy,
        ClusterFacts(namespace_labels=DEFAULT_NS, owners={("batch/v1", "Job", "default", "parent"): None}),
    )
    with pytest.raises(AdmissionDenied, match="not found"):
        workload_should_be_suspended(child, ctx)
    child["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"  # type: ignore[index]
    assert not workload_should_be_suspended(child, ctx)


def test_cycle_is_denied() -> None:
    policy = AdmissionPolicy(manage_jobs_without_queue_name=True)
    a = job("a", owner=ref("Job", "b", "uid-b"), uid="uid-a")
    b = job("b", owner=ref("Job", "a", "uid-a"), uid="uid-b")
    owners = {("batch/v1", "Job", "default", "b"): b, ("batch/v1", "Job", "default", "a"): a}
    ctx = AdmissionContext(policy, ClusterFacts(namespace_labels=DEFAULT_NS, owners=owners))
    with pytest.raises(AdmissionDenied, match="cyclic"):
        find_managed_ancestor(a, ctx)


def test_default_queue_not_added_in_unselected_namespace() -> None:
    policy = AdmissionPolicy.from_config({})
    ctx = AdmissionContext(
        policy,
        ClusterFacts(namespace_labels={keys.NAMESPACE_NAME_LABEL: "kueue-system"}, default_local_queue=True),
    )
    obj = job()
    apply_default_local_queue(obj, ctx)
    assert "labels" not in obj["metadata"]  # type: ignore[operator]
