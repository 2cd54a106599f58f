"""Properties of classical preemption over random cohorts, policies and priorities.

Workloads of random sizes and priorities arrive in waves into ClusterQueues of one
cohort with random preemption policies. After every wave:

* no victim chosen within its own ClusterQueue has a higher priority than the preemptor
  (equal only under LowerOrNewerEqualPriority), and no victim taken while the preemptor
  borrows (InCohortReclaimWhileBorrowing) has a priority at or above the preemptor's;
* quota is never overrun: every ClusterQueue's usage equals the sum of the workloads
  holding quota there, and the cohort never uses more than its pooled quota;
* no two preemptors of one cycle share a victim.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.manager.core.assignment import Entry, Mode, Outcome
from pykueue.manager.core.cycle import Scheduler
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.flavor_assigner import FlavorAssigner
from pykueue.manager.core.preemption import IN_CLUSTER_QUEUE, IN_COHORT_RECLAIM_WHILE_BORROWING
from pykueue.manager.core.preemption.classical import ClassicalPreemption

WITHIN = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
RECLAIM = ("Never", "LowerPriority", "Any")


def _wl(name: str, cq: str, cpu: int, priority: int) -> dict[str, Any]:
    return {"kind": "Workload", "metadata": {"name": name, "namespace": "default"},
            "spec": {"queueName": f"lq-{cq}", "priority": priority,
                     "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                         {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}}


World = tuple[list[dict[str, Any]], dict[str, dict[str, Any]], list[list[dict[str, Any]]]]


@st.composite
def worlds(draw: st.DrawFn) -> World:
    objects: list[dict[str, Any]] = [{"kind": "ResourceFlavor", "metadata": {"name": "f"}}]
    policies: dict[str, dict[str, Any]] = {}
    cqs = [f"cq{i}" for i in range(draw(st.integers(1, 3)))]
    for name in cqs:
        reclaim = draw(st.sampled_from(RECLAIM))
        pol: dict[str, Any] = {"withinClusterQueue": draw(st.sampled_from(WITHIN)),
                               "reclaimWithinCohort": reclaim}
        if reclaim != "Never" and draw(st.booleans()):
            bwc: dict[str, Any] = {"policy": "LowerPriority"}
            if draw(st.booleans()):
                bwc["maxPriorityThreshold"] = draw(st.integers(0, 3))
            pol["borrowWithinCohort"] = bwc
        policies[name] = pol
        quota: dict[str, Any] = {"name": "cpu", "nominalQuota": draw(st.integers(0, 6))}
        if draw(st.booleans()):
            quota["borrowingLimit"] = draw(st.integers(0, 4))
        objects.append({"kind": "ClusterQueue", "metadata": {"name": name},
                        "spec": {"namespaceSelector": {}, "cohortName": "co", "preemption": pol,
                                 "resourceGroups": [{"coveredResources": ["cpu"],
                                                     "flavors": [{"name": "f", "resources": [quota]}]}]}})
        objects.append({"kind": "LocalQueue", "metadata": {"name": f"lq-{name}", "namespace": "default"},
                        "spec": {"clusterQueue": name}})
    waves: list[list[dict[str, Any]]] = []
    n = 0
    for _ in range(draw(st.integers(1, 4))):
        wave = []
        for _ in range(draw(st.integers(1, 4))):
            cq, cpu, prio = draw(st.sampled_from(cqs)), draw(st.integers(1, 4)), draw(st.integers(0, 4))
            wave.append(_wl(f"w{n}", cq, cpu, prio))
            n += 1
        waves.append(wave)
    return objects, policies, waves


def _core(objects: list[dict[str, Any]], preemption: ClassicalPreemption | None = None) -> QueueingCore:
    core = QueueingCore(preemption=preemption)
    for obj in objects:
        core.apply(obj)
    return core


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_classical_preemption_properties(world: World) -> None:
    objects, policies, waves = world
    core = _core(objects)
    for wave in waves:
        for obj in wave:
            core.apply(obj)
        for _ in range(200):
            result = core.next_cycle()
            if not result.decisions:
                break
            chosen: set[str] = set()
            for d in result.decisions:
                if d.outcome != Outcome.PREEMPT:
                    continue
                assert not chosen.intersection(d.targets), "two preemptors share a victim"
                chosen.update(d.targets)
                pre = core.workload(d.key)
                for t in d.targets:
                    victim = core.workload(t)
                    reason = d.target_reasons[t]
                    if reason == IN_CLUSTER_QUEUE:
                        if policies[d.cluster_queue]["withinClusterQueue"] == "LowerPriority":
                            assert victim.priority < pre.priority
                        else:
                            assert victim.priority <= pre.priority
                    if reason == IN_COHORT_RECLAIM_WHILE_BORROWING:
                        assert victim.priority < pre.priority
                    if policies[d.cluster_queue]["reclaimWithinCohort"] == "LowerPriority" \
                            and victim.cluster_queue != d.cluster_queue:
                        assert victim.priority < pre.priority
            if not core.apply_cycle(result) and all(d.outcome != Outcome.PREEMPT for d in result.decisions):
                break
            total = 0
            pooled = 0
            for name, node in core.quota_tree().cluster_queues.items():
                held = sum(r.usage.get(("f", "cpu"), 0) for r in core.holders(name).values())
                assert core.usage_at(node).get(("f", "cpu"), 0) == held
                q = node.quota(("f", "cpu"))
                if q.borrowing_limit is not None:
                    assert held <= q.nominal + q.borrowing_limit
                total += held
                pooled += q.nominal
            assert total <= pooled, "cohort quota overrun"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(), st.integers(0, 3))
def test_what_the_requeue_bound_rules_out_never_fits(world: World, finished: int) -> None:
    """Freed quota leaves parked a workload the flavor assigner's bound says cannot fit: for
    every pending workload, after some admitted ones finished, the bound says so only when
    the full assignment (with the preemption search for targets) is unusable too."""
    objects, _, waves = world
    hook = ClassicalPreemption()
    core = _core(objects, hook)
    for wave in waves:
        for obj in wave:
            core.apply(obj)
        # Some policy sets preempt in a ring without end, in Kueue too (test_preemption's
        # ring test): the bound must hold in whatever state the core is left in.
        core.run_until_idle(max_cycles=500)
    for key in [k for k, r in core.all_workloads().items() if r.status == "Admitted"][:finished]:
        core.finish(key)
    snap = core.snapshot()
    assigner = FlavorAssigner(snap, hook)
    scheduler = Scheduler(hook, None, core.config.partial_admission)  # as the core's own
    for rec in core.all_workloads().values():
        if rec.status != "Pending" or rec.cluster_queue is None:
            continue
        if assigner.cannot_fit(rec.wl, snap.cluster_queues[rec.cluster_queue], rec.priority):
            entry = Entry(rec.wl, rec.cluster_queue, rec.priority, rec.queue_ts)
            assignment = scheduler._assign(FlavorAssigner(snap, hook), entry, snap)
            assert assignment.mode != Mode.FIT and not entry.targets, rec.key


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(), st.integers(0, 3))
def test_what_searches_keep_across_cycles_answers_as_a_fresh_search(world: World, finished: int) -> None:
    """The core's preemption hook keeps victim lists across snapshots while the queues'
    holders stay the same; after every cycle (admissions, evictions, finishes), each pending
    workload's search finds the same victims as a hook that keeps nothing."""
    objects, _, waves = world
    hook = ClassicalPreemption()
    core = _core(objects, hook)
    fr = ("f", "cpu")

    def compare() -> None:
        snap = core.snapshot()
        for rec in core.all_workloads().values():
            if rec.status != "Pending" or rec.cluster_queue is None:
                continue
            cpu = sum(int(ps.requests.get("cpu", 0)) * ps.count for ps in rec.wl.podsets)
            args = (snap, rec.cluster_queue, rec.priority, rec.queue_ts, {fr: cpu}, frozenset({fr}))
            kept = [c.key for c in hook.search(*args)]
            assert kept == [c.key for c in ClassicalPreemption().search(*args)], rec.key

    for wave in waves:
        for obj in wave:
            core.apply(obj)
        for _ in range(60):
            compare()
            if not core.apply_cycle(core.next_cycle()):
                break
        for key in [k for k, r in core.all_workloads().items() if r.status == "Admitted"][:finished]:
            core.finish(key)
            compare()
