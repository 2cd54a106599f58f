"""Kueue's maximum execution time: an admitted workload whose
``spec.maximumExecutionTimeSeconds`` runs out is deactivated (Evicted with
DeactivatedDueToMaximumExecutionTimeExceeded) and gives its quota back; the time is counted
from admission, less what it ran before (``status.accumulatedPastExecutionTimeSeconds``)."""

from __future__ import annotations

from typing import Any

from api import keys
from manager.core.config import CoreConfig
from manager.core.engine import QueueingCore
from manager.core.jobs_to_workloads import owned_workload
from manager.core.status import workload_status


def _core() -> QueueingCore:
    core = QueueingCore(CoreConfig(hold_quota_until_stopped=False))
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}})
    core.apply({"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
        "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]}})
    core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq"}})
    return core


def _wl(name: str, max_s: int | None, past_s: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}
    if max_s is not None:
        spec["maximumExecutionTimeSeconds"] = max_s
    wl: dict[str, Any] = {"kind": "Workload", "metadata": {"name": name, "namespace": "ns"}, "spec": spec}
    if past_s is not None:
        wl["status"] = {"accumulatedPastExecutionTimeSeconds": past_s}
    return wl


def _conditions(core: QueueingCore, key: str) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in workload_status(core.workloads[key], core.now)["conditions"]}


def test_an_admitted_workload_is_deactivated_when_its_time_is_up() -> None:
    core = _core()
    core.apply(_wl("limited", 10))
    core.apply(_wl("free", None))
    core.run_until_idle()
    admitted_at = core.now
    assert core.workloads["ns/limited"].status == "Admitted"
    core.fire_timers(admitted_at + 9.5)
    core.run_until_idle()
    assert core.workloads["ns/limited"].status == "Admitted", "not before its 10 s"
    core.fire_timers(admitted_at + 10)
    core.run_until_idle()
    rec = core.workloads["ns/limited"]
    assert not rec.holds_quota and rec.deactivated
    evicted = _conditions(core, "ns/limited")["Evicted"]
    assert evicted["reason"] == keys.Reason.DEACTIVATED_DUE_TO_MAXIMUM_EXECUTION_TIME_EXCEEDED
    assert evicted["message"] == "The workload is deactivated due to exceeding the maximum execution time"
    assert core.usage_of("cq") == {("rf", "cpu"): 1000}, "only the unlimited one holds quota"
    assert core.workloads["ns/free"].status == "Admitted"


def test_time_run_before_counts_against_the_limit() -> None:
    core = _core()
    core.apply(_wl("resumed", 10, past_s=7))
    core.run_until_idle()
    core.fire_timers(core.now + 3)
    core.run_until_idle()
    assert core.workloads["ns/resumed"].deactivated


def test_a_job_label_becomes_the_workloads_limit() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "j", "namespace": "ns", "uid": "u", "labels": {keys.MAX_EXEC_TIME_SECONDS: "10"}}}
    assert owned_workload(job, "w", [], controller=True)["spec"]["maximumExecutionTimeSeconds"] == 10
    for bad in ("0", "-3", "ten"):
        job["metadata"]["labels"][keys.MAX_EXEC_TIME_SECONDS] = bad
        assert "maximumExecutionTimeSeconds" not in owned_workload(job, "w", [], controller=True)["spec"]
