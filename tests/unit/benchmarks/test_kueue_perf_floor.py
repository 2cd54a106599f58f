"""The floor's one write per workload: the admission patch it sends."""

from __future__ import annotations

from benchmarks.kueue_perf_config import WorkloadTemplate, workload_object
from benchmarks.kueue_perf_floor import admission_patch


def test_the_patch_admits_to_the_queue_named_by_the_workload_with_the_podset_total() -> None:
    obj = workload_object(WorkloadTemplate("medium", 500, 100, "250m", pod_count=3), "w-1", "cq-7", "cq-7")
    obj["metadata"]["resourceVersion"] = "41"
    patch = admission_patch(obj, "default-flavor", 0.0)
    assert patch["metadata"] == {"resourceVersion": "41"}  # a stale copy gets a conflict, not a second write
    admission = patch["status"]["admission"]
    assert admission == {"clusterQueue": "cq-7", "podSetAssignments": [
        {"name": "main", "count": 3, "flavors": {"cpu": "default-flavor"}, "resourceUsage": {"cpu": "750m"}}]}
    conditions = {c["type"]: c for c in patch["status"]["conditions"]}
    assert set(conditions) == {"QuotaReserved", "Admitted"}
    assert all(c["status"] == "True" and c["lastTransitionTime"] == "1970-01-01T00:00:00Z"
               for c in conditions.values())


def test_whole_cores_stay_whole() -> None:
    obj = workload_object(WorkloadTemplate("large", 1000, 200, "5", pod_count=4), "w-2", "cq-1", "cq-1")
    obj["metadata"]["resourceVersion"] = "7"
    usage = admission_patch(obj, "f", 0.0)["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]
    assert usage == {"cpu": "20"}
