"""Parking and requeueing: equivalence of pending workloads, batched requeues, and
updates that must not disturb the queues (status echoes of queue objects)."""

from __future__ import annotations

from typing import Any

from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.objects import PodSet
from pykueue.manager.core.queues import PendingQueue, scheduling_shape, sort_key
from pykueue.manager.core.settings import SchedulingSettings


def _podset(cpu: int, count: int = 1) -> PodSet:
    return PodSet("main", count, None, {"cpu": cpu * 1000}, {}, (), (), None)


def _cq(name: str = "cq", cpu: int = 4, **spec: Any) -> dict[str, Any]:
    return {"kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
        "namespaceSelector": {}, **spec,
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}}


def _core(config: CoreConfig | None = None, **spec: Any) -> QueueingCore:
    core = QueueingCore(config or CoreConfig())
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {}})
    core.apply(_cq(**spec))
    core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq"}})
    return core


def _wl(core: QueueingCore, name: str, cpu: int, priority: int = 0, queue: str = "lq") -> None:
    core.apply({"kind": "Workload", "metadata": {"name": name, "namespace": "ns"}, "spec": {
        "queueName": queue, "priority": priority, "podSets": [{
            "name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}})


def _evaluated(core: QueueingCore) -> list[str]:
    """Keys of every workload a scheduling pass evaluated, in order."""
    return [d.key for d in core.run_until_idle()]


# ------------------------------------------------------------------ PendingQueue


def test_shape_is_equal_for_equal_requests_and_priority_only() -> None:
    assert scheduling_shape(1, (_podset(2),)) == scheduling_shape(1, (_podset(2),))
    assert scheduling_shape(1, (_podset(2),)) != scheduling_shape(2, (_podset(2),))
    assert scheduling_shape(1, (_podset(2),)) != scheduling_shape(1, (_podset(3),))
    assert scheduling_shape(1, (_podset(2),)) != scheduling_shape(1, (_podset(2, count=2),))


def test_a_no_fit_shape_parks_its_queued_twins_and_later_arrivals_until_requeue() -> None:
    q = PendingQueue()
    for i, shape in enumerate((7, 7, 8, 7)):
        q.push(f"w{i}", sort_key(0, float(i), f"w{i}"), shape)
    assert q.pop() == "w0"
    q.park("w0", sort_key(0, 0.0, "w0"), 7)
    assert q.park_shape(7) == 2  # w1 and w3; w2 has another shape
    q.offer("w4", sort_key(0, 4.0, "w4"), 7)
    assert set(q.parked_keys()) == {"w0", "w1", "w3", "w4"}
    assert q.pop() == "w2" and q.pop() is None
    assert q.requeue_parked() == 4
    q.offer("w5", sort_key(0, 5.0, "w5"), 7)  # the verdict was forgotten with the requeue
    assert [q.pop() for _ in range(5)] == ["w0", "w1", "w3", "w4", "w5"]


def test_pushing_a_queued_workload_again_does_not_grow_the_heap() -> None:
    q = PendingQueue()
    for _ in range(1000):
        q.push("w", sort_key(0, 0.0, "w"), 1)
    assert q.heap_size == 1
    assert q.pop() == "w" and q.pop() is None


# ------------------------------------------------------------------ equivalence in the engine


def test_one_no_fit_verdict_parks_every_equivalent_workload() -> None:
    core = _core()
    for i in range(5):
        _wl(core, f"big{i}", 8)  # over the 4-CPU quota, all the same shape
    _wl(core, "small", 1)
    # Without equivalence each big one would be evaluated in its own cycle before "small".
    assert _evaluated(core) == ["ns/big0", "ns/small"]
    assert core.workload("ns/small").status == "Admitted"
    assert all(core.workload(f"ns/big{i}").status == "Pending" for i in range(5))
    assert set(core.pending_queue("cq").parked_keys()) == {f"ns/big{i}" for i in range(5)}


def test_without_equivalence_each_workload_is_evaluated() -> None:
    core = _core(CoreConfig(equivalence_hashing=False))
    for i in range(3):
        _wl(core, f"big{i}", 8)
    assert _evaluated(core) == ["ns/big0", "ns/big1", "ns/big2"]


def test_strict_fifo_never_parks_by_shape() -> None:
    core = _core(queueingStrategy="StrictFIFO")
    _wl(core, "big0", 8)
    _wl(core, "big1", 8)
    core.run_until_idle()
    assert not core.pending_queue("cq").parked_count


# ------------------------------------------------------------------ batched requeue


def test_batched_requeue_waits_for_the_period_then_requeues_once() -> None:
    core = _core(CoreConfig(scheduling=SchedulingSettings(requeue_batch_s=1.0)), cpu=2)
    _wl(core, "a", 2)
    _wl(core, "b", 2)
    _wl(core, "c", 1)
    core.run_until_idle()
    assert core.workload("ns/a").status == "Admitted"
    core.finish("ns/a")
    assert _evaluated(core) == []  # b and c stay parked: the requeue is not due yet
    assert core.next_deadline() == 1.0
    assert core.fire_timers(1.0) == 1
    core.run_until_idle()
    assert core.workload("ns/b").status == "Admitted"


def test_requests_inside_one_period_share_one_requeue() -> None:
    core = _core(CoreConfig(scheduling=SchedulingSettings(requeue_batch_s=1.0)), cpu=3)
    for name in ("a", "b", "c"):
        _wl(core, name, 1)
    _wl(core, "big", 3)
    core.run_until_idle()
    core.finish("ns/a")
    core.fire_timers(0.5)
    core.finish("ns/b")
    assert core.next_deadline() == 1.0  # the second finish joined the first request
    core.fire_timers(1.0)
    assert core.next_deadline() is None


def _cohort_core(queues: int, config: CoreConfig) -> QueueingCore:
    """``queues`` ClusterQueues of 2 CPU in cohort "co"; cq0 holds a and parks b."""
    core = QueueingCore(config)
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {}})
    for i in range(queues):
        core.apply(_cq(f"cq{i}", cpu=2 if i == 0 else 0, cohortName="co"))
    core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq0"}})
    _wl(core, "a", 2)
    _wl(core, "b", 2)
    core.run_until_idle()
    assert core.pending_queue("cq0").is_parked("ns/b")
    return core


def test_a_tree_of_many_queues_is_requeued_less_often_up_to_the_maximum() -> None:
    config = CoreConfig(scheduling=SchedulingSettings(
        requeue_batch_s=0.1, requeue_batch_per_queue_s=0.01, requeue_batch_max_s=1.0))
    for queues, period in ((3, 0.1), (30, 0.3), (200, 1.0)):
        core = _cohort_core(queues, config)
        core.finish("ns/a")
        assert core.next_deadline() == period
        core.fire_timers(period - 0.01)
        assert core.pending_queue("cq0").is_parked("ns/b")  # not due yet
        core.fire_timers(period)
        core.run_until_idle()
        assert core.workload("ns/b").status == "Admitted"


def test_a_tree_of_many_parked_shapes_is_requeued_less_often() -> None:
    config = CoreConfig(scheduling=SchedulingSettings(
        requeue_batch_s=0.1, requeue_batch_per_queue_s=0.01, requeue_batch_per_group_s=0.05))
    core = _cohort_core(3, config)
    assert core.pending_queue("cq0").parked_groups == 1
    for priority in range(1, 5):  # four more shapes, each parked in its own group
        _wl(core, f"p{priority}", 2, priority=priority)
    core.run_until_idle()
    assert core.pending_queue("cq0").parked_groups == 5
    core.finish("ns/a")
    assert core.next_deadline() == 0.25  # five groups, more than three queues or the base period
    core.fire_timers(0.25)
    core.run_until_idle()
    assert core.workload("ns/p4").status == "Admitted" and core.pending_queue("cq0").parked_groups == 4


def test_without_a_per_queue_period_every_tree_waits_the_base_period() -> None:
    core = _cohort_core(200, CoreConfig(scheduling=SchedulingSettings(requeue_batch_s=0.1)))
    core.finish("ns/a")
    assert core.next_deadline() == 0.1


# ------------------------------------------------------------------ status echoes


def test_reapplying_an_unchanged_cluster_queue_keeps_parked_workloads_parked() -> None:
    core = _core(cpu=2)
    _wl(core, "a", 2)
    _wl(core, "b", 2)
    core.run_until_idle()
    assert core.pending_queue("cq").is_parked("ns/b")
    echo = _cq(cpu=2)
    echo["status"] = {"pendingWorkloads": 1}
    core.apply(echo)
    assert _evaluated(core) == []
    assert core.pending_queue("cq").is_parked("ns/b")
    core.apply(_cq(cpu=4))  # a real change requeues
    assert _evaluated(core) == ["ns/b"]
    assert core.workload("ns/b").status == "Admitted"


def test_a_queued_workload_awaits_its_turn_until_evaluated() -> None:
    core = _core(cpu=2)
    _wl(core, "a", 2)
    _wl(core, "b", 4)  # over the quota: NoFit once evaluated
    for i in range(3):
        _wl(core, f"twin{i}", 4)  # b's shape: parked with it, never evaluated
    assert core.awaiting_turn("ns/b")
    core.run_until_idle()
    assert not core.awaiting_turn("ns/a")  # admitted
    assert not core.awaiting_turn("ns/b")  # has the scheduler's verdict
    assert all(core.awaiting_turn(f"ns/twin{i}") for i in range(3))
    assert not core.awaiting_turn("ns/unknown")


# ------------------------------------------------------------------ requeue of what cannot fit


def _full_cohort(**cq0_spec: Any) -> QueueingCore:
    """cq0 (4 CPU) and cq1 (2 CPU) in cohort "co", all 6 CPU in use: cq0 holds a (3 CPU,
    priority 1), cq1 holds one and two (1 and 2 CPU, borrowing 1 of cq0's); big0 (4 CPU,
    priority 1) waits in cq0, parked, with nothing of lower priority in its queue."""
    core = QueueingCore()
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {}})
    core.apply(_cq("cq0", cpu=4, cohortName="co", **cq0_spec))
    core.apply(_cq("cq1", cpu=2, cohortName="co"))
    for cq in ("cq0", "cq1"):
        core.apply({"kind": "LocalQueue", "metadata": {"name": cq, "namespace": "ns"},
                    "spec": {"clusterQueue": cq}})
    for name, cq, cpu in (("a", "cq0", 3), ("one", "cq1", 1), ("two", "cq1", 2)):
        _wl(core, name, cpu, priority=1, queue=cq)
    core.run_until_idle()
    assert all(core.workload(f"ns/{n}").status == "Admitted" for n in ("a", "one", "two"))
    _wl(core, "big0", 4, priority=1, queue="cq0")
    assert _evaluated(core) == ["ns/big0"]
    assert core.pending_queue("cq0").is_parked("ns/big0")
    return core


def test_freed_quota_less_than_a_parked_workload_lacks_leaves_it_parked_unevaluated() -> None:
    core = _full_cohort(preemption={"withinClusterQueue": "LowerPriority"})
    core.finish("ns/one")  # 1 CPU free: big0 still lacks 3, and a (priority 1) is not lower
    assert _evaluated(core) == []
    assert core.pending_queue("cq0").is_parked("ns/big0")
    _wl(core, "big1", 4, priority=1, queue="cq0")
    assert core.pending_queue("cq0").is_parked("ns/big1")  # its shape is still known not to fit
    core.finish("ns/a")  # now 4 CPU are free
    assert _evaluated(core) == ["ns/big0", "ns/big1"]
    assert core.workload("ns/big0").status == "Admitted"


def test_a_parked_workload_that_preemption_could_help_is_evaluated_again() -> None:
    core = _full_cohort(preemption={"withinClusterQueue": "LowerPriority"})
    _wl(core, "urgent", 4, priority=5, queue="cq0")  # a is a candidate, but frees only 3
    assert [d.outcome for d in core.run_until_idle()] == ["Pending"]
    assert core.pending_queue("cq0").is_parked("ns/urgent")
    core.finish("ns/one")  # with 1 CPU free, preempting a makes room
    assert not core.pending_queue("cq0").is_parked("ns/urgent")
    assert core.pending_queue("cq0").is_parked("ns/big0")  # lacks 3, nothing to preempt
    assert [(d.key, d.outcome) for d in core.next_cycle().decisions] == [("ns/urgent", "Preempt")]


def _parked_behind_a_release(withdraw: bool, big: int = 5) -> QueueingCore:
    """10 CPU: ``top`` (priority 9, 5 CPU) and ``done`` (priority 9, 2 CPU) admitted and
    written; ``big`` (priority 5, ``big`` CPU) parked: nothing lower to preempt. ``done``
    finishes, and the requeue waits for its batch."""
    core = _core(CoreConfig(scheduling=SchedulingSettings(requeue_batch_s=1.0),
                                  withdraw_unpublished=withdraw), cpu=10,
                 preemption={"withinClusterQueue": "LowerPriority"})
    _wl(core, "top", 5, priority=9)
    _wl(core, "done", 2, priority=9)
    core.run_until_idle()
    for key in ("ns/top", "ns/done"):
        core.publish(key)
    _wl(core, "big", big, priority=5)
    assert [d.outcome for d in core.run_until_idle()] == ["Pending"]
    assert core.pending_queue("cq").is_parked("ns/big")
    core.finish("ns/done")  # 5 CPU free; "big" waits for the batch
    return core


def test_a_reservation_recalls_a_parked_higher_priority_workload_it_gives_room_to_preempt() -> None:
    core = _parked_behind_a_release(withdraw=True)
    _wl(core, "small", 1, priority=1)
    decisions = [(d.key, d.outcome) for d in core.run_until_idle()]
    # "small" takes 1 of the 5 free CPU; that makes it a victim "big" can use, so "big" is
    # looked at again at once and takes the reservation back before anyone saw it.
    assert decisions[:2] == [("ns/small", "Admit"), ("ns/big", "Preempt")]
    assert core.workload("ns/big").status == "Admitted"
    assert core.workload("ns/small").status == "Pending"
    assert core.workload("ns/small").evictions == []
    assert core.take_changes().withdrawals == {"cq": 1}


def test_without_withdrawals_a_reservation_recalls_nothing() -> None:
    core = _parked_behind_a_release(withdraw=False)
    _wl(core, "small", 1, priority=1)
    assert [(d.key, d.outcome) for d in core.run_until_idle()] == [("ns/small", "Admit")]
    assert core.pending_queue("cq").is_parked("ns/big")  # as in Kueue: until the requeue is due


def test_a_reservation_recalls_only_parked_workloads_that_may_now_preempt() -> None:
    core = _parked_behind_a_release(withdraw=True)
    _wl(core, "same", 1, priority=5)  # not lower than "big": no victim for it
    assert [(d.key, d.outcome) for d in core.run_until_idle()] == [("ns/same", "Admit")]
    assert core.pending_queue("cq").is_parked("ns/big")
    core = _parked_behind_a_release(withdraw=True, big=6)
    _wl(core, "small", 1, priority=1)  # 4 CPU free and 1 to take: "big" still lacks 1
    assert [(d.key, d.outcome) for d in core.run_until_idle()] == [("ns/small", "Admit")]
    assert core.pending_queue("cq").is_parked("ns/big")
