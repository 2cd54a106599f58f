"""An elastic Job's slices as Kueue's workloadslicing keeps them: first slice, scale-up into a
replacement slice, scale-down in place, and pods ungated up to the admitted count."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.api import keys
from pykueue.manager.jobs.batchjob.kind import workloads
from pykueue.manager.jobs.workload_slices import plan_slices, pods_to_ungate

NS = "default"


def _job(parallelism: int, generation: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "sample-elastic-job", "namespace": NS, "uid": "job-uid",
                         "generation": generation, "labels": {keys.QUEUE_NAME: "user-queue"},
                         "annotations": {keys.ELASTIC_JOB: "true"}},
            "spec": {"parallelism": parallelism, "completions": 100, "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}}}


def _slice(parallelism: int, generation: int, reserved: bool, created: str) -> dict[str, Any]:
    [wl] = workloads(_job(parallelism, generation))
    wl["metadata"]["creationTimestamp"] = created
    if reserved:
        wl["status"] = {"admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "count": parallelism}]},
            "conditions": [{"type": "QuotaReserved", "status": "True"}]}
    return wl


def _counts(wl: dict[str, Any]) -> int:
    return int(wl["spec"]["podSets"][0]["count"])


def test_slices_are_named_per_generation_and_name_their_chain() -> None:
    [first] = workloads(_job(3, 1))
    [later] = workloads(_job(5, 2))
    assert first["metadata"]["name"] != later["metadata"]["name"]
    assert first["metadata"]["name"].startswith("job-sample-elastic-job-")
    assert first["metadata"]["annotations"] == {keys.ELASTIC_JOB: "true",
                                                keys.WORKLOAD_SLICE_NAME: first["metadata"]["name"]}


def test_the_first_slice_is_created() -> None:
    [desired] = workloads(_job(3, 1))
    plan = plan_slices(desired, [])
    assert plan.create is desired and plan.current == desired["metadata"]["name"] and not plan.update


def test_a_scale_up_of_an_admitted_slice_makes_a_replacement_and_keeps_running_the_old() -> None:
    old = _slice(3, 1, reserved=True, created="2026-01-01T00:00:00Z")
    [desired] = workloads(_job(5, 3))
    plan = plan_slices(desired, [old])
    assert plan.current == old["metadata"]["name"], "the job keeps running under the admitted slice"
    assert plan.create is not None and _counts(plan.create) == 5
    annotations = plan.create["metadata"]["annotations"]
    assert annotations[keys.WORKLOAD_SLICE_REPLACEMENT_FOR] == f"{NS}/{old['metadata']['name']}"
    assert annotations[keys.WORKLOAD_SLICE_NAME] == old["metadata"]["name"]
    # Seen again with the replacement pending: nothing more to write.
    pending = copy.deepcopy(plan.create)
    pending["metadata"]["creationTimestamp"] = "2026-01-01T00:01:00Z"
    again = plan_slices(desired, [old, pending])
    assert (again.create, again.update, again.finish) == (None, [], [])
    assert again.current == old["metadata"]["name"]
    # The job grows again before the replacement is admitted: the replacement follows it.
    [bigger] = workloads(_job(6, 4))
    follow = plan_slices(bigger, [old, pending])
    assert [(u["metadata"]["name"], _counts(u)) for u in follow.update] == [(pending["metadata"]["name"], 6)]


def test_once_the_replacement_holds_quota_the_job_runs_under_it() -> None:
    old = _slice(3, 1, reserved=True, created="2026-01-01T00:00:00Z")
    new = _slice(5, 3, reserved=True, created="2026-01-01T00:01:00Z")
    new["metadata"]["annotations"][keys.WORKLOAD_SLICE_REPLACEMENT_FOR] = f"{NS}/{old['metadata']['name']}"
    plan = plan_slices(workloads(_job(5, 3))[0], [old, new])
    assert plan.current == new["metadata"]["name"] and plan.create is None


def test_a_scale_down_lowers_the_admitted_slice_in_place() -> None:
    old = _slice(5, 1, reserved=True, created="2026-01-01T00:00:00Z")
    plan = plan_slices(workloads(_job(2, 2))[0], [old])
    assert plan.create is None and plan.current == old["metadata"]["name"]
    [update] = plan.update
    assert update["metadata"]["name"] == old["metadata"]["name"] and _counts(update) == 2
    assert update["status"] == old["status"], "the admission stays as written"


def test_a_pending_slice_follows_the_job_and_older_pending_ones_finish() -> None:
    a = _slice(3, 1, reserved=False, created="2026-01-01T00:00:00Z")
    b = _slice(4, 2, reserved=False, created="2026-01-01T00:01:00Z")
    plan = plan_slices(workloads(_job(5, 3))[0], [a, b])
    assert plan.current == b["metadata"]["name"]
    assert [w["metadata"]["name"] for w in plan.finish] == [a["metadata"]["name"]]
    assert [(u["metadata"]["name"], _counts(u)) for u in plan.update] == [(b["metadata"]["name"], 5)]


def _pod(name: str, gated: bool, phase: str = "Pending") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if gated:
        spec["schedulingGates"] = [{"name": keys.ELASTIC_JOB_GATE}]
    return {"metadata": {"name": name}, "spec": spec, "status": {"phase": phase}}


def test_pods_are_ungated_up_to_the_admitted_count_lowest_names_first() -> None:
    pods = [_pod("p-e", True), _pod("p-a", False, "Running"), _pod("p-b", False, "Running"),
            _pod("p-c", False, "Running"), _pod("p-d", True)]
    assert pods_to_ungate(pods, 3) == [], "three run already"
    started = pods_to_ungate(pods, 4)
    assert [p["metadata"]["name"] for p in started] == ["p-d"]
    assert "schedulingGates" not in started[0]["spec"]
    pods[1]["status"]["phase"] = "Succeeded"  # a finished pod leaves room
    assert [p["metadata"]["name"] for p in pods_to_ungate(pods, 4)] == ["p-d", "p-e"]
