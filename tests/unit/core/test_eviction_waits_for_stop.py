"""With ``hold_quota_until_stopped`` (the running manager), an evicted workload keeps its
quota, shown as Evicted while QuotaReserved, until its job reports no running pods
(``job_stopped``); only then is it requeued and its room given to others, as in Kueue."""

from __future__ import annotations

from typing import Any

from pykueue.manager.core.config import CoreConfig, RequeuingStrategy, WaitForPodsReady
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.preemption.classical import victim_order
from pykueue.manager.core.status import workload_status
from pykueue.manager.core.workload_state import ADMITTED, PENDING, Stopping


def _core(hold: bool = True, preemption: str = "LowerPriority", **config: Any) -> QueueingCore:
    core = QueueingCore(CoreConfig(hold_quota_until_stopped=hold, **config))
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {}})
    core.apply({"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
        "namespaceSelector": {}, "preemption": {"withinClusterQueue": preemption},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]}})
    core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq"}})
    return core


def _wl(name: str, cpu: int = 1, priority: int = 0, active: bool = True,
        status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": "Workload", "metadata": {"name": name, "namespace": "ns"}, "spec": {
        "active": active, "queueName": "lq", "priority": priority,
        "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}}
    if status is not None:
        obj["status"] = status
    return obj


def _conditions(core: QueueingCore, key: str) -> dict[str, tuple[str, str]]:
    status = workload_status(core.workload(key), core.now)
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def _preempted_pair(core: QueueingCore) -> None:
    core.apply(_wl("low", cpu=2))
    core.run_until_idle()
    core.apply(_wl("high", cpu=2, priority=10))
    core.run_until_idle()


def test_the_victim_holds_its_quota_until_its_job_has_stopped() -> None:
    core = _core()
    _preempted_pair(core)
    low, high = core.workload("ns/low"), core.workload("ns/high")
    assert low.status == ADMITTED and low.stopping is not None and low.evictions == ["Preempted"]
    assert high.status == PENDING
    assert core.usage_of("cq") == {("rf", "cpu"): 2000}
    conditions = _conditions(core, "ns/low")
    assert conditions["Evicted"] == ("True", "Preempted")
    assert conditions["Preempted"] == ("True", "InClusterQueue")
    assert conditions["QuotaReserved"][0] == "True" and "Requeued" not in conditions
    assert "admission" in workload_status(low, core.now)
    assert core.take_stopping() == {"ns/low"} and core.take_stopping() == set()

    core.run_until_idle()  # the preemptor tries again: nothing is evicted twice
    assert low.evictions == ["Preempted"] and high.status == PENDING

    assert core.job_stopped("ns/low") and not core.job_stopped("ns/low")
    core.run_until_idle()
    assert high.status == ADMITTED and low.status == PENDING and low.stopping is None
    conditions = _conditions(core, "ns/low")
    assert conditions["QuotaReserved"][0] == "False"
    assert conditions["Evicted"] == ("True", "Preempted") and conditions["Requeued"] == ("True", "Preempted")


def test_without_holding_the_quota_goes_at_eviction_as_in_simulate() -> None:
    core = _core(hold=False)
    _preempted_pair(core)
    assert core.workload("ns/high").status == ADMITTED
    assert core.workload("ns/low").status == PENDING and core.workload("ns/low").stopping is None
    assert core.take_stopping() == set()


def test_an_evicted_candidate_is_taken_first() -> None:
    core = _core()
    _preempted_pair(core)
    low = core.workload("ns/low")
    other = core.workload("ns/high")
    # Kueue's candidate order: an already evicted workload before anything else, even one
    # of lower priority in another queue.
    assert victim_order("cq", low, "cq") < victim_order("other", other, "cq")


def test_a_finish_while_stopping_releases_once() -> None:
    core = _core()
    _preempted_pair(core)
    assert core.finish("ns/low")
    core.run_until_idle()
    assert core.workload("ns/high").status == ADMITTED
    assert not core.job_stopped("ns/low")
    assert core.usage_of("cq") == {("rf", "cpu"): 2000}


def test_a_backoff_runs_from_the_eviction_not_from_the_stop() -> None:
    core = _core(wait_for_pods_ready=WaitForPodsReady(timeout=10.0),
                 requeuing=RequeuingStrategy(backoff_base_seconds=60.0))
    core.apply(_wl("a"))
    core.run_until_idle()
    core.fire_timers(10.0)  # PodsReady timeout: evicted, its job told to stop
    rec = core.workload("ns/a")
    assert rec.stopping == Stopping("PodsReadyTimeout", backoff_until=70.0)
    core.fire_timers(30.0)
    assert core.job_stopped("ns/a")
    assert rec.status == PENDING and rec.requeue_at == 70.0


def test_a_user_deactivation_while_stopping_ends_deactivated_and_a_reactivation_undoes_it() -> None:
    core = _core()
    _preempted_pair(core)
    core.apply(_wl("low", cpu=2, active=False))
    core.job_stopped("ns/low")
    core.run_until_idle()
    low = core.workload("ns/low")
    assert low.deactivated and low.status == PENDING and not low.deactivation_unwritten

    core = _core()
    _preempted_pair(core)
    core.apply(_wl("low", cpu=2, active=False))
    core.apply(_wl("low", cpu=2, active=True))
    core.job_stopped("ns/low")
    core.run_until_idle()
    assert not core.workload("ns/low").deactivated


def test_a_workload_read_mid_eviction_still_holds_its_quota() -> None:
    admitted = {"admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "count": 1, "flavors": {"cpu": "rf"}, "resourceUsage": {"cpu": "2"}}]},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "message": ""},
            {"type": "Evicted", "status": "True", "reason": "Preempted", "message": ""}]}
    core = _core()
    core.apply(_wl("a", cpu=2, status=admitted))
    core.apply(_wl("b", cpu=2))
    core.run_until_idle()
    a = core.workload("ns/a")
    assert a.stopping == Stopping("Preempted") and a.status == ADMITTED
    assert core.workload("ns/b").status == PENDING
    assert core.job_stopped("ns/a")
    assert a.status == PENDING and a.stopping is None and not any(core.usage_of("cq").values())

    core = _core(hold=False)  # simulate: nothing runs, the eviction completes when read
    core.apply(_wl("a", cpu=2, status=admitted))
    a = core.workload("ns/a")
    assert a.status == PENDING and a.evictions == ["Preempted"] and not any(core.usage_of("cq").values())


# ------------------------------------------------------------------ unpublished reservations


def test_a_victim_no_write_has_carried_out_is_withdrawn_not_evicted() -> None:
    """The manager chose a victim whose admission it has not started writing yet: to its
    job and to the API it was never admitted, so it goes back to its queue with no
    Evicted condition, and its room is free at once."""
    core = _core(withdraw_unpublished=True)
    _preempted_pair(core)
    low, high = core.workload("ns/low"), core.workload("ns/high")
    assert low.status == PENDING and low.stopping is None and low.evictions == []
    assert low.preemption_reasons == [] and core.preempted_reason("ns/low") is None
    assert high.status == ADMITTED and high.unpublished
    assert "Evicted" not in _conditions(core, "ns/low")
    assert core.take_stopping() == set()  # no job to stop


def test_once_its_write_started_the_victim_is_evicted_as_before() -> None:
    core = _core(withdraw_unpublished=True)
    core.apply(_wl("low", cpu=2))
    core.run_until_idle()
    core.publish("ns/low")
    core.apply(_wl("high", cpu=2, priority=10))
    core.run_until_idle()
    low = core.workload("ns/low")
    assert low.status == ADMITTED and low.stopping is not None and low.evictions == ["Preempted"]
    assert _conditions(core, "ns/low")["Evicted"] == ("True", "Preempted")


def test_without_the_setting_every_reservation_counts_as_seen() -> None:
    core = _core()
    core.apply(_wl("low", cpu=2))
    core.run_until_idle()
    assert not core.workload("ns/low").unpublished


def test_a_release_that_only_withdrew_a_reservation_is_reported_as_such() -> None:
    """The manager waits for no write of a withdrawn reservation's release (nothing of it was
    sent); a release of a reservation it may have sent is not reported so."""
    core = _core(withdraw_unpublished=True)
    core.take_changes()  # the manager tracks releases from its first call
    _preempted_pair(core)
    changes = core.take_changes()
    assert (changes.released, changes.withdrawn) == ({"ns/low"}, {"ns/low"})
    core.publish("ns/high")
    core.apply(_wl("top", cpu=2, priority=20))
    core.run_until_idle()
    core.job_stopped("ns/high")  # the evicted job stopped: its quota is released
    changes = core.take_changes()
    assert "ns/high" in changes.released and "ns/high" not in changes.withdrawn
