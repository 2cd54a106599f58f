"""Elastic jobs' workload slices in the core (Kueue's ElasticJobsViaWorkloadSlices).

A scaled-up slice names the admitted slice it replaces; it is judged with that slice's
quota counted as its own and with its flavors, and once admitted the old slice is finished
(reason WorkloadSliceReplaced) in the same step, so the queue never counts both. A slice
scaled down in place holds only what its pods need now.
"""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.manager.core.config import CoreConfig, config_from
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.status import workload_status
from pykueue.manager.core.workload_state import ADMITTED, FINISHED, PENDING


def _core(nominal: int = 5, flavors: tuple[str, ...] = ("rf",), **config: Any) -> QueueingCore:
    core = QueueingCore(CoreConfig(**config))
    for name in flavors:
        core.apply({"kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {}})
    core.apply({"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
        "namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": name, "resources": [{"name": "cpu", "nominalQuota": nominal}]} for name in flavors]}]}})
    core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq"}})
    return core


def _slice(name: str, count: int, replaces: str | None = None, priority: int = 0) -> dict[str, Any]:
    annotations = {keys.ELASTIC_JOB: "true", keys.WORKLOAD_SLICE_NAME: "first"}
    if replaces is not None:
        annotations[keys.WORKLOAD_SLICE_REPLACEMENT_FOR] = f"ns/{replaces}"
    return {"kind": "Workload", "metadata": {"name": name, "namespace": "ns", "annotations": annotations,
                                             "labels": {keys.JOB_UID: "job-uid"}},
            "spec": {"queueName": "lq", "priority": priority, "podSets": [
                {"name": "main", "count": count, "template": {"spec": {"containers": [
                    {"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def _cpu(core: QueueingCore, flavor: str = "rf") -> int:
    return core.usage_of("cq").get((flavor, "cpu"), 0) // 1000


def test_a_scale_up_that_fits_replaces_the_old_slice_and_counts_only_the_increase() -> None:
    core = _core(nominal=5)
    core.apply(_slice("first", 3))
    core.run_until_idle()
    assert core.workload("ns/first").status == ADMITTED and _cpu(core) == 3
    core.apply(_slice("second", 5, replaces="first"))  # 5 do not fit beside 3, 2 more do
    core.run_until_idle()
    new, old = core.workload("ns/second"), core.workload("ns/first")
    assert new.status == ADMITTED and new.took_over == "ns/first"
    assert old.status == FINISHED and _cpu(core) == 5, "never both slices' quota at once"
    finished = {c["type"]: c for c in workload_status(old, core.now)["conditions"]}["Finished"]
    assert finished["reason"] == "WorkloadSliceReplaced" and "JobUID: job-uid" in finished["message"]
    assert core.take_changes().replaced_slices == {"cq": 1} and core.take_changes().replaced_slices == {}


def test_a_scale_up_beyond_the_quota_waits_and_the_old_slice_keeps_running() -> None:
    core = _core(nominal=5)
    core.apply(_slice("first", 3))
    core.apply(_slice("other", 1))
    core.run_until_idle()
    core.apply(_slice("second", 5, replaces="first"))  # 2 more, 1 free
    core.run_until_idle()
    assert core.workload("ns/second").status == PENDING
    assert core.workload("ns/first").status == ADMITTED and _cpu(core) == 4
    reason = core.workload("ns/second").reason
    assert "1 more needed" in reason, reason  # only the increase is asked for


def test_a_replacement_never_preempts_the_slice_it_replaces() -> None:
    core = _core(nominal=4)
    core.apply(_slice("first", 3))
    core.run_until_idle()
    # Higher priority than its own old slice, yet the old slice is no victim: it is taken over.
    core.apply(_slice("second", 5, replaces="first", priority=10))
    core.run_until_idle()
    assert core.workload("ns/first").status == ADMITTED
    assert core.workload("ns/first").evictions == []
    assert core.workload("ns/second").status == PENDING


def test_the_replacement_keeps_the_flavor_of_the_slice_it_replaces() -> None:
    core = _core(nominal=3, flavors=("a", "b"))
    core.apply(_slice("first", 3))
    core.run_until_idle()
    assert _cpu(core, "a") == 3
    # Flavor b has room for all 4, but the job's pods run on a: it waits there.
    core.apply(_slice("second", 4, replaces="first"))
    core.run_until_idle()
    assert core.workload("ns/second").status == PENDING
    assert "since the original workload is assigned: a" in core.workload("ns/second").reason


def test_a_replacement_whose_old_slice_holds_nothing_asks_for_everything() -> None:
    core = _core(nominal=5)
    core.apply(_slice("second", 6, replaces="gone"))
    core.run_until_idle()
    assert core.workload("ns/second").status == PENDING
    core.apply(_slice("third", 5, replaces="gone"))
    core.run_until_idle()
    assert core.workload("ns/third").status == ADMITTED and _cpu(core) == 5


def test_with_the_gate_off_the_annotation_changes_nothing() -> None:
    core = _core(nominal=5, workload_slices=False)
    core.apply(_slice("first", 3))
    core.run_until_idle()
    core.apply(_slice("second", 5, replaces="first"))
    core.run_until_idle()
    assert core.workload("ns/second").status == PENDING and core.workload("ns/first").status == ADMITTED
    assert not config_from({"featureGates": {"ElasticJobsViaWorkloadSlices": False}}).workload_slices
    assert config_from({}).workload_slices, "on by default, as in Kueue v0.19"


def test_a_scale_down_in_place_frees_quota_at_once_and_keeps_the_admission() -> None:
    core = _core(nominal=5)
    core.apply(_slice("first", 5))
    core.run_until_idle()
    core.apply(_slice("other", 2))
    core.run_until_idle()
    assert core.workload("ns/other").status == PENDING
    core.apply(_slice("first", 3))  # the job's parallelism went down: the count follows
    core.run_until_idle()
    assert core.workload("ns/other").status == ADMITTED and _cpu(core) == 5
    admission = workload_status(core.workload("ns/first"), core.now)["admission"]
    assert admission["podSetAssignments"][0]["count"] == 5, "the admission itself is not rewritten"


def test_an_admission_read_back_after_a_scale_down_counts_the_current_pods() -> None:
    core = _core(nominal=5)
    obj = _slice("first", 2)
    obj["status"] = {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "count": 5, "flavors": {"cpu": "rf"}, "resourceUsage": {"cpu": "5"}}]},
        "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]}
    core.apply(obj)
    assert core.workload("ns/first").status == ADMITTED and _cpu(core) == 2


def test_a_replacement_may_preempt_others_for_its_increase() -> None:
    core = _core(nominal=5)
    core.apply(_slice("first", 3, priority=10))
    core.apply(_slice("low", 2))
    core.run_until_idle()
    core.apply(_slice("second", 5, replaces="first", priority=10))
    core.run_until_idle()
    assert core.workload("ns/low").evictions == ["Preempted"], "the increase needs low's 2 CPUs"
    assert core.workload("ns/first").evictions == [] and core.workload("ns/first").status == FINISHED
    assert core.workload("ns/second").status == ADMITTED and _cpu(core) == 5


def test_a_pending_slice_that_never_fit_is_judged_again_once_its_count_shrinks() -> None:
    # Kueue's PushOrUpdate: a changed spec leaves the inadmissible workloads.
    core = _core(nominal=5)
    core.apply(_slice("first", 3))
    core.run_until_idle()
    core.apply(_slice("second", 10, replaces="first"))  # more than the ClusterQueue can ever hold
    core.run_until_idle()
    assert core.workload("ns/second").status == PENDING
    core.apply(_slice("second", 4, replaces="first"))  # the job scaled back within quota
    core.run_until_idle()
    assert core.workload("ns/second").status == ADMITTED and _cpu(core) == 4
    assert core.workload("ns/first").status == FINISHED
