"""The fault suite's observer flags each thing it is there to catch (no cluster: the
states its watch streams would deliver are fed in directly)."""

from __future__ import annotations

from typing import Any

from tests.e2e.fault_observer import ApiObserver

JOB_UID = "job-1"


def _job(suspend: bool, complete: bool = False) -> dict[str, Any]:
    conditions = [{"type": "Complete", "status": "True"}] if complete else []
    return {"metadata": {"uid": JOB_UID, "name": "j"}, "spec": {"suspend": suspend},
            "status": {"conditions": conditions}}


def _owned(uid: str, name: str) -> dict[str, Any]:
    return {"uid": uid, "name": name, "ownerReferences": [{"uid": JOB_UID, "controller": True}]}


def _pod(uid: str, phase: str, deleting: bool = False) -> dict[str, Any]:
    meta = _owned(uid, f"pod-{uid}")
    if deleting:
        meta["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


def _workload(uid: str, cpu: str | None, finished: bool = False, cq: str = "cq") -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": []}
    if cpu is not None:
        status["admission"] = {"clusterQueue": cq, "podSetAssignments": [{"resourceUsage": {"cpu": cpu}}]}
        status["conditions"].append({"type": "QuotaReserved", "status": "True"})
    if finished:
        status["conditions"].append({"type": "Finished", "status": "True"})
    return {"metadata": _owned(uid, f"wl-{uid}"), "status": status}


def _event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": obj}


def test_a_running_job_suspended_is_flagged_and_a_finished_one_is_not() -> None:
    observer = ApiObserver("ns", {})
    observer.observe_event("jobs", _event("ADDED", _job(suspend=True)))
    observer.observe_event("jobs", _event("MODIFIED", _job(suspend=False)))
    assert observer.suspended_running == []
    observer.observe_event("jobs", _event("MODIFIED", _job(suspend=True)))
    assert len(observer.suspended_running) == 1
    done = ApiObserver("ns", {})
    done.observe_event("jobs", _event("ADDED", _job(suspend=False)))
    done.observe_event("jobs", _event("MODIFIED", _job(suspend=True, complete=True)))
    assert done.suspended_running == []


def test_an_unfinished_pod_deleted_is_flagged_even_across_a_relist() -> None:
    observer = ApiObserver("ns", {})
    observer.observe_list("pods", [_pod("a", "Running"), _pod("b", "Running")])
    observer.observe_event("pods", _event("MODIFIED", _pod("a", "Succeeded")))
    observer.observe_event("pods", _event("DELETED", _pod("a", "Succeeded")))
    assert observer.deleted_pods == []
    observer.observe_list("pods", [])  # b vanished while the API was away
    assert [m.split(" ", 1)[1] for m in observer.deleted_pods] == ["pod pod-b (Running) deleted"]
    assert observer.pods_ran[JOB_UID] == {"a", "b"}
    assert observer.ran_more_than_once() == [JOB_UID]


def test_usage_above_the_quota_is_flagged_at_the_state_that_shows_it() -> None:
    observer = ApiObserver("ns", {"cq": 1000})
    observer.observe_event("workloads", _event("ADDED", _workload("w1", "600m")))
    observer.observe_event("workloads", _event("ADDED", _workload("w2", None)))
    observer.observe_event("workloads", _event("MODIFIED", _workload("w1", "600m", finished=True)))
    observer.observe_event("workloads", _event("MODIFIED", _workload("w2", "600m")))
    assert observer.over_quota == []  # w1's quota was freed before w2 took it
    observer.observe_event("workloads", _event("ADDED", _workload("w3", "600m", cq="other")))
    assert observer.over_quota == []  # another queue's quota, not checked here
    observer.observe_event("workloads", _event("MODIFIED", _workload("w1", "600m")))
    assert len(observer.over_quota) == 1
    cq = {"metadata": {"name": "cq", "uid": "cq-1"}, "status": {"flavorsReservation": [
        {"name": "f", "resources": [{"name": "cpu", "total": "1200m"}]}]}}
    observer.observe_event("clusterqueues", _event("MODIFIED", cq))
    assert len(observer.over_quota) == 2


def test_a_job_admitted_twice_or_with_two_workloads_is_flagged() -> None:
    observer = ApiObserver("ns", {"cq": 10_000})
    observer.observe_event("workloads", _event("ADDED", _workload("w1", "1")))
    assert observer.doubly_admitted() == []
    observer.observe_event("workloads", _event("MODIFIED", _workload("w1", None)))  # evicted
    observer.observe_event("workloads", _event("MODIFIED", _workload("w1", "1")))  # admitted again
    assert observer.doubly_admitted() == [JOB_UID]
    second = ApiObserver("ns", {})
    second.observe_event("workloads", _event("ADDED", _workload("w1", None)))
    second.observe_event("workloads", _event("ADDED", _workload("w2", None)))
    assert second.doubly_admitted() == [JOB_UID]
