"""Kueue's maximum execution time: an admitted workload whose
``spec.maximumExecutionTimeSeconds`` runs out is deactivated (Evicted with
DeactivatedDueToMaximumExecutionTimeExceeded) and gives its quota back; the time is counted
from admission, less what it ran before (``status.accumulatedPastExecutionTimeSeconds``)."""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.manager.core import max_execution
from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.jobs_to_workloads import owned_workload
from pykueue.manager.core.objects import parse_time
from pykueue.manager.core.status import workload_status


def _core(hold_quota_until_stopped: bool = False) -> QueueingCore:
    core = QueueingCore(CoreConfig(hold_quota_until_stopped=hold_quota_until_stopped))
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
    return {c["type"]: c for c in workload_status(core.workload(key), core.now)["conditions"]}


def test_an_admitted_workload_is_deactivated_when_its_time_is_up() -> None:
    core = _core()
    core.apply(_wl("limited", 10))
    core.apply(_wl("free", None))
    core.run_until_idle()
    admitted_at = core.now
    assert core.workload("ns/limited").status == "Admitted"
    core.fire_timers(admitted_at + 9.5)
    core.run_until_idle()
    assert core.workload("ns/limited").status == "Admitted", "not before its 10 s"
    core.fire_timers(admitted_at + 10)
    core.run_until_idle()
    rec = core.workload("ns/limited")
    assert not rec.holds_quota and rec.deactivated
    evicted = _conditions(core, "ns/limited")["Evicted"]
    assert evicted["reason"] == keys.Reason.DEACTIVATED_DUE_TO_MAXIMUM_EXECUTION_TIME_EXCEEDED
    assert evicted["message"] == "The workload is deactivated due to exceeding the maximum execution time"
    assert core.usage_of("cq") == {("rf", "cpu"): 1000}, "only the unlimited one holds quota"
    assert core.workload("ns/free").status == "Admitted"


def test_time_run_before_counts_against_the_limit() -> None:
    core = _core()
    core.apply(_wl("resumed", 10, past_s=7))
    core.run_until_idle()
    core.fire_timers(core.now + 3)
    core.run_until_idle()
    assert core.workload("ns/resumed").deactivated


def test_a_job_label_becomes_the_workloads_limit() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "j", "namespace": "ns", "uid": "u", "labels": {keys.MAX_EXEC_TIME_SECONDS: "10"}}}
    assert owned_workload(job, "w", [], controller=True)["spec"]["maximumExecutionTimeSeconds"] == 10
    for bad in ("0", "-3", "ten"):
        job["metadata"]["labels"][keys.MAX_EXEC_TIME_SECONDS] = bad
        assert "maximumExecutionTimeSeconds" not in owned_workload(job, "w", [], controller=True)["spec"]


# -- the rule alone ---------------------------------------------------------------------------


def test_the_rule_counts_from_the_admitted_transition_less_the_time_run_before() -> None:
    spec = {max_execution.LIMIT: 600}
    assert max_execution.remaining_budget(spec, {}) == 600
    assert max_execution.remaining_budget(spec, {max_execution.PAST: 200}) == 400
    assert max_execution.remaining_budget({}, {max_execution.PAST: 200}) is None
    assert max_execution.remaining_budget({max_execution.LIMIT: "600"}, {}) is None, "not a number"
    due = max_execution.due_at(400, 1000.0)
    assert due == 1400.0
    assert max_execution.due_at(None, 1000.0) is None and max_execution.due_at(400, None) is None
    assert not max_execution.exceeded(due, 1399.9)
    assert max_execution.exceeded(due, 1400.0), "no time left: deactivated"
    assert max_execution.exceeded(due, 5000.0)
    assert not max_execution.exceeded(None, 5000.0)


def test_the_rule_read_off_a_stored_workload() -> None:
    since = "2026-01-01T00:00:00Z"
    wl: dict[str, Any] = {"spec": {max_execution.LIMIT: 10}, "status": {
        max_execution.PAST: 3,
        "conditions": [{"type": "Admitted", "status": "True", "lastTransitionTime": since}]}}
    start = parse_time(since)
    assert start is not None
    assert max_execution.admitted_since(wl["status"]) == start
    assert max_execution.workload_due(wl) == start + 7
    wl["status"]["conditions"][0]["status"] = "False"
    assert max_execution.workload_due(wl) is None, "only an admitted workload runs out of time"


def test_the_limit_is_counted_once_more_when_time_run_before_is_read_late() -> None:
    core = _core()
    wl = _wl("late", 100)
    core.apply(wl)
    core.run_until_idle()
    admitted_at = core.now
    assert core.next_deadline() == admitted_at + 100
    counted = {**wl, "status": {"accumulatedPastExecutionTimeSeconds": 95}}
    core.apply(counted)  # an earlier admission's run, stored after this admission
    assert core.next_deadline() == admitted_at + 5
    core.fire_timers(admitted_at + 5)
    core.run_until_idle()
    assert core.workload("ns/late").deactivated


def test_a_timer_that_fires_early_sets_the_next_one() -> None:
    core = _core()
    wl = _wl("moved", 10, past_s=8)
    core.apply(wl)
    core.run_until_idle()
    admitted_at = core.now
    assert core.next_deadline() == admitted_at + 2
    core.apply({**wl, "status": {}})  # what it ran before no longer counts
    core.fire_timers(admitted_at + 2)
    core.run_until_idle()
    assert core.workload("ns/moved").status == "Admitted", "its time is not up yet"
    assert core.next_deadline() == admitted_at + 10
    core.fire_timers(admitted_at + 10)
    core.run_until_idle()
    assert core.workload("ns/moved").deactivated


def test_the_eviction_is_counted_as_kueue_counts_a_deactivation() -> None:
    core = _core()
    core.apply(_wl("counted", 10))
    core.run_until_idle()
    core.fire_timers(core.now + 10)
    core.run_until_idle()
    status = workload_status(core.workload("ns/counted"), core.now)
    assert status["schedulingStats"] == {"evictions": [
        {"reason": "Deactivated", "underlyingCause": "MaximumExecutionTimeExceeded", "count": 1}]}


def test_a_workload_that_is_not_admitted_is_never_stopped_for_time() -> None:
    core = _core()
    core.apply(_wl("big", 10))
    big = core.workload("ns/big")
    core.apply({**_wl("bigger", 10), "spec": {**_wl("bigger", 10)["spec"], "podSets": [
        {"name": "main", "count": 3, "template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}})
    core.run_until_idle()
    assert big.status == "Admitted" and core.workload("ns/bigger").status == "Pending"
    core.fire_timers(core.now + 3600)
    core.run_until_idle()
    assert not core.workload("ns/bigger").deactivated


def test_spec_active_is_owed_from_the_eviction_not_from_the_stop() -> None:
    """Kueue sets spec.active first and evicts after: while the job stops, the deactivation
    is already to be written, and a copy showing it written is not taken for a user's."""
    core = _core(hold_quota_until_stopped=True)
    wl = _wl("held", 10)
    core.apply(wl)
    core.run_until_idle()
    core.fire_timers(core.now + 10)
    core.run_until_idle()
    rec = core.workload("ns/held")
    assert rec.stopping is not None and rec.holds_quota and rec.deactivation_unwritten
    core.apply({**wl, "spec": {**wl["spec"], "active": False}})  # the spec write read back
    assert not rec.deactivation_unwritten and rec.stopping is not None
    assert core.job_stopped("ns/held")
    assert rec.deactivated and not rec.holds_quota and not rec.deactivation_unwritten
    assert rec.evictions == [keys.Reason.DEACTIVATED_DUE_TO_MAXIMUM_EXECUTION_TIME_EXCEEDED]
