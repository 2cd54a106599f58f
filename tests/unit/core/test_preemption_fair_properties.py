"""Properties of fair-sharing preemption over random flat cohorts (hypothesis).

Random ClusterQueues of one cohort, filled with random admitted workloads, then a random
preemptor request in one of them (its queue reclaims from any borrower, never within
itself). For every victim the search returns:

* under every strategy, the preemptor's share with its request is below the share the
  victim's queue had before preemption;
* under ``LessThanOrEqualToFinalShare`` alone, it is also at most the share the victim's
  queue keeps after all victims are gone;
* the request fits once the victims are removed, and no victim is in the preemptor's queue.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.fair_sharing import (
    IN_COHORT_FAIR_SHARING,
    LESS_THAN_INITIAL_SHARE,
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
    FairSharingPreemption,
    dominant_share,
)
from pykueue.manager.core.quota import available

FR = ("f", "cpu")
STRATEGIES = [
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,),
    (LESS_THAN_INITIAL_SHARE,),
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE),
]


World = tuple[list[dict[str, Any]], tuple[str, ...], str, int]


@st.composite
def worlds(draw: st.DrawFn) -> World:
    objects: list[dict[str, Any]] = [{"kind": "ResourceFlavor", "metadata": {"name": "f"}}]
    n = draw(st.integers(2, 4))
    for i in range(n):
        spec: dict[str, Any] = {
            "namespaceSelector": {},
            "cohortName": "co",
            "preemption": {"reclaimWithinCohort": "Any"},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": "f", "resources": [{"name": "cpu", "nominalQuota": draw(st.integers(0, 6))}]}
                    ],
                }
            ],
        }
        if draw(st.booleans()):
            spec["fairSharing"] = {"weight": draw(st.sampled_from(["1", "2", "500m"]))}
        objects.append({"kind": "ClusterQueue", "metadata": {"name": f"cq{i}"}, "spec": spec})
        objects.append(
            {
                "kind": "LocalQueue",
                "metadata": {"name": f"lq{i}", "namespace": "default"},
                "spec": {"clusterQueue": f"cq{i}"},
            }
        )
    for j in range(draw(st.integers(1, 10))):
        objects.append(
            {
                "kind": "Workload",
                "metadata": {"name": f"w{j}", "namespace": "default"},
                "spec": {
                    "queueName": f"lq{draw(st.integers(0, n - 1))}",
                    "podSets": [
                        {
                            "name": "main",
                            "count": 1,
                            "template": {
                                "spec": {
                                    "containers": [
                                        {
                                            "name": "c",
                                            "resources": {"requests": {"cpu": str(draw(st.integers(1, 4)))}},
                                        }
                                    ]
                                }
                            },
                        }
                    ],
                },
            }
        )
    return (
        objects,
        draw(st.sampled_from(STRATEGIES)),
        f"cq{draw(st.integers(0, n - 1))}",
        draw(st.integers(1, 4)) * 1000,
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_fair_preemption_respects_shares(world: World) -> None:
    objects, strategies, cq, amount = world
    core = QueueingCore(CoreConfig(fair_sharing=strategies))
    for obj in objects:
        core.apply(obj)
    core.run_until_idle()
    snap = core.snapshot()
    hook = FairSharingPreemption(strategies)
    request = {FR: amount}
    victims = [c for c, _ in hook.search(snap, cq, 0, 0.0, request, frozenset(request))]
    if not victims:
        return
    own = snap.nodes[cq]
    after = snap.usage.overlay()
    for v in victims:
        assert v.cluster_queue != cq
        after.add_all(snap.nodes[v.cluster_queue], v.record.usage, sign=-1)
    assert available(own, after, FR) >= amount
    with_request = snap.usage.overlay()
    with_request.add_all(own, request)
    preemptor_new = dominant_share(own, with_request, snap.weights)
    for v in victims:
        target = snap.nodes[v.cluster_queue]
        assert preemptor_new < dominant_share(target, snap.usage, snap.weights)
        if strategies == (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,):
            assert preemptor_new <= dominant_share(target, after, snap.weights)


def _queue(name: str, nominal: int) -> list[dict[str, Any]]:
    return [
        {"kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
            "namespaceSelector": {}, "cohortName": "co", "preemption": {"reclaimWithinCohort": "Any"},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "f", "resources": [{"name": "cpu", "nominalQuota": nominal}]}]}]}},
        {"kind": "LocalQueue", "metadata": {"name": f"lq{name[-1]}", "namespace": "default"},
         "spec": {"clusterQueue": name}},
    ]


def _admitted(name: str, lq: str, cpu: int) -> dict[str, Any]:
    return {"kind": "Workload", "metadata": {"name": name, "namespace": "default"}, "spec": {
        "queueName": lq, "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}}


# Found by this test: cq0 (nominal 1) holds a 1- and a 3-CPU workload admitted in one pass,
# cq1 (nominal 3) gets 4-CPU ones. Taking the older (1-CPU) victim first let each side
# reclaim from the other forever; the most recent reservation goes first now.
_PING_PONG: World = (
    [{"kind": "ResourceFlavor", "metadata": {"name": "f"}}, *_queue("cq0", 1), *_queue("cq1", 3),
     _admitted("w0", "lq0", 1), _admitted("w1", "lq0", 3), _admitted("w2", "lq0", 1)],
    (LESS_THAN_INITIAL_SHARE,), "cq1", 4000,
)


# Found by the test below: Kueue's rules themselves alternate here. cq0 (nominal 3) borrows
# 3; cq1 (nominal 4) wants 4 more while holding 1. Rule S2-b (LessThanInitialShare) looks
# at shares only and takes both of cq0's 0-priority workloads, leaving cq0 under its
# nominal quota; cq0, now within nominal, reclaims without a share check
# (FairSharingPreemptWithinNominal) and takes cq1's newcomer back; and so on. Kueue's own
# tables expect S2-b to strand a queue like this, so the core keeps the rule.
_STRANDED: World = (
    [{"kind": "ResourceFlavor", "metadata": {"name": "f"}}, *_queue("cq0", 3), *_queue("cq1", 4),
     _admitted("w0", "lq0", 3), _admitted("w1", "lq1", 4), _admitted("w2", "lq0", 1),
     _admitted("w3", "lq0", 1)],
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE), "cq0", 1000,
)
_STRANDED_ARRIVALS = [(0, 2, 1), (1, 1, 1), (1, 4, 1)]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(_PING_PONG, [(1, 4, 0)] * 3)
@example(_STRANDED, _STRANDED_ARRIVALS)
@given(worlds(), st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4), st.integers(0, 3)), max_size=6))
def test_fair_sharing_engine_keeps_quota_and_settles(
    world: World, arrivals: list[tuple[int, int, int]]
) -> None:
    """Through the engine: quota is never overrun, victims only come from preemptions that
    the strategies allow, and scheduling settles (no endless preemption ping-pong)."""
    objects, strategies, _, _ = world
    core = QueueingCore(CoreConfig(fair_sharing=strategies))
    for obj in objects:
        core.apply(obj)
    n = sum(1 for o in objects if o["kind"] == "ClusterQueue")
    for i, (cq, cpu, prio) in enumerate(arrivals):
        core.apply(
            {
                "kind": "Workload",
                "metadata": {"name": f"late{i}", "namespace": "default"},
                "spec": {
                    "queueName": f"lq{cq % n}",
                    "priority": prio,
                    "podSets": [
                        {
                            "name": "main",
                            "count": 1,
                            "template": {
                                "spec": {
                                    "containers": [
                                        {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}
                                    ]
                                }
                            },
                        }
                    ],
                },
            }
        )
    stranded = False  # see _STRANDED below
    for _ in range(300):
        result = core.next_cycle()
        chosen: set[str] = set()
        fair_victim_queues: set[str] = set()
        for d in result.decisions:
            assert not chosen.intersection(d.targets), "two preemptors share a victim"
            chosen.update(d.targets)
            fair_victim_queues.update(core.workload(t).cluster_queue or "" for t in d.targets
                                      if d.target_reasons.get(t) == IN_COHORT_FAIR_SHARING)
        if not core.apply_cycle(result):
            break
        nodes = core.quota_tree().cluster_queues
        stranded |= any(core.usage_at(nodes[q]).get(FR, 0) < nodes[q].quota(FR).nominal
                        for q in fair_victim_queues)
        pooled = sum(node.quota(FR).nominal for node in nodes.values())
        held = 0
        for name, node in nodes.items():
            used = sum(r.usage.get(FR, 0) for r in core.holders(name).values())
            assert core.usage_at(node).get(FR, 0) == used
            held += used
        assert held <= pooled, "cohort quota overrun"
    else:
        # Kueue's own rules loop only after a fair-sharing preemption left its victim's
        # queue under nominal quota (see _STRANDED); any other endless run is ours.
        assert stranded and LESS_THAN_INITIAL_SHARE in strategies, \
            "scheduling did not settle within 300 cycles"


def test_rule_s2b_strands_a_queue_that_then_reclaims_within_nominal() -> None:
    """The _STRANDED world through the engine, as Kueue decides it: an S2-b preemption
    takes cq0 under its nominal quota, and cq0 reclaims from the borrower right after."""
    objects, strategies, _, _ = _STRANDED
    core = QueueingCore(CoreConfig(fair_sharing=strategies))
    for obj in objects:
        core.apply(obj)
    for i, (cq, cpu, prio) in enumerate(_STRANDED_ARRIVALS):
        late = _admitted(f"late{i}", f"lq{cq}", cpu)
        late["spec"]["priority"] = prio
        core.apply(late)
    seen: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []
    for _ in range(12):
        result = core.next_cycle()
        for d in result.decisions:
            if d.targets:
                seen.append((d.key, tuple(sorted(d.targets)), tuple(sorted(set(d.target_reasons.values())))))
        core.apply_cycle(result)
    s2b = ("default/w1", ("default/w0", "default/w2"), (IN_COHORT_FAIR_SHARING,))
    reclaim = ("default/w2", ("default/w1",), ("InCohortReclamation",))
    assert s2b in seen and reclaim in seen
    assert seen.index(reclaim, seen.index(s2b)) > seen.index(s2b)
