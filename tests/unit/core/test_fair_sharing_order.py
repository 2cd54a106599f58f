"""The fair-sharing admission order kept incrementally equals the order decided from scratch.

:func:`~manager.core.fair_sharing.tournament` refreshes, after each yielded entry, only
the cohorts on that entry's path. The reference below re-plays the whole tournament of
the tree before every pick, as Kueue's fair-sharing iterator does. Random forests
(hierarchical cohorts, lending and borrowing limits, weights including 0, several heads
per queue, queues outside any cohort, entries without an assignment, preemptors) are
fed to both while a random caller admits, reserves part of, or skips each yielded entry.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.manager.core.assignment import Assignment, Entry, Mode
from pykueue.manager.core.fair_sharing import Share, Shares, borrows_on, tournament, weight_key
from pykueue.manager.core.objects import FR, Quota, WorkloadDef
from pykueue.manager.core.quota import QuotaNode, Usage, compute_subtree
from pykueue.manager.core.snapshot import Snapshot

FRS: tuple[FR, ...] = (("f", "cpu"), ("f", "mem"), ("g", "cpu"))


def _reference(entries: Sequence[Entry], snap: Snapshot, usage: Usage) -> Iterator[Entry]:
    """Every pick decided on the whole tree again (quadratic, but obviously right)."""
    shares = Shares(snap.weights)
    remaining = list(entries)
    while remaining:
        first = remaining[0]
        node = snap.nodes.get(first.cluster_queue)
        if node is None or node.parent is None or first.assignment is None:
            remaining.pop(0)
            yield first
            continue
        root = node.root()
        by_cq: dict[str, Entry] = {}
        for e in remaining:
            n = snap.nodes.get(e.cluster_queue)
            if n is not None and n.root() is root and e.assignment is not None:
                by_cq.setdefault(e.cluster_queue, e)
        values: dict[tuple[str, str], tuple[bool, Share]] = {}
        for cq_name, e in by_cq.items():
            n = snap.nodes[cq_name]
            assert e.assignment is not None
            requested = e.assignment.usage
            view = usage.overlay()
            view.add_all(n, requested)
            while n.parent is not None:
                borrows = borrows_on(n, view, requested)
                values[(n.parent.name, e.workload.key)] = (borrows, shares.share(n, view))
                n = n.parent

        chosen = _play_cohort(root, by_cq, values)
        assert chosen is not None
        remaining.remove(chosen)
        yield chosen


def _play_cohort(cohort: QuotaNode, by_cq: Mapping[str, Entry],
                 values: Mapping[tuple[str, str], tuple[bool, Share]]) -> Entry | None:
    """The winner among the cohort's child cohorts' winners and its child queues' first entries."""
    best: tuple[Any, ...] | None = None
    winner: Entry | None = None
    for child in cohort.children:
        cand = by_cq.get(child.name) if child.is_cq else _play_cohort(child, by_cq, values)
        if cand is None:
            continue
        borrows, share = values[(cohort.name, cand.workload.key)]
        k = (not cand.preempting, borrows, share, -cand.priority, cand.timestamp, cand.workload.key)
        if best is None or k < best:
            best, winner = k, cand
    return winner


def _quota(draw: st.DrawFn, cohort: bool) -> dict[FR, Quota]:
    out: dict[FR, Quota] = {}
    for fr in FRS:
        if draw(st.booleans()):
            bl = draw(st.one_of(st.none(), st.integers(0, 8)))
            ll = draw(st.one_of(st.none(), st.integers(0, 8)))
            out[fr] = Quota(draw(st.integers(0, 4 if cohort else 10)), bl, ll)
    return out


World = tuple[Snapshot, list[Entry], list[int]]


@st.composite
def worlds(draw: st.DrawFn) -> World:
    cohorts: list[QuotaNode] = []
    nodes: dict[str, QuotaNode] = {}
    weights: dict[str, float] = {}
    for i in range(draw(st.integers(1, 5))):
        c = QuotaNode(f"co{i}", False, _quota(draw, True))
        if len(cohorts) > 0 and draw(st.booleans()):
            parent = cohorts[draw(st.integers(0, len(cohorts) - 1))]
            c.parent = parent
            parent.children.append(c)
        cohorts.append(c)
    for i in range(draw(st.integers(1, 8))):
        q = QuotaNode(f"cq{i}", True, _quota(draw, False))
        if draw(st.integers(0, 5)):
            parent = cohorts[draw(st.integers(0, len(cohorts) - 1))]
            q.parent = parent
            parent.children.append(q)
        nodes[q.name] = q
    for n in [*cohorts, *nodes.values()]:
        if draw(st.integers(0, 2)) == 0:
            weights[weight_key(n)] = draw(st.sampled_from([0.0, 0.5, 2.0, 3.0]))
    for n in cohorts:
        if n.parent is None:
            compute_subtree(n)
    for q in nodes.values():
        if q.parent is None:
            compute_subtree(q)
    usage = Usage()
    for q in nodes.values():
        for fr in FRS:
            if draw(st.booleans()):
                usage.add(q, fr, draw(st.integers(0, 12)))
    snap = Snapshot(cluster_queues={}, nodes=nodes, flavors={}, namespaces={}, inactive={}, usage=usage,
                    weights=weights)
    entries: list[Entry] = []
    for j in range(draw(st.integers(1, 16))):
        cq = draw(st.sampled_from([*sorted(nodes), "missing"]))
        wl = WorkloadDef("ns", f"w{j}", "lq", 0, None, 0.0, (), True, None, f"uid{j}")
        assignment: Assignment | None = None
        if draw(st.integers(0, 6)):
            amounts = {fr: draw(st.integers(0, 6)) for fr in FRS if draw(st.booleans())}
            assignment = Assignment([], Mode.FIT, 0, amounts)
        entries.append(Entry(wl, cq, draw(st.integers(0, 2)), float(draw(st.integers(0, 3))), assignment,
                             preempting=draw(st.integers(0, 5)) == 0))
    actions = draw(st.lists(st.integers(0, 2), min_size=len(entries), max_size=len(entries)))
    return snap, entries, actions


def _play(order: Iterator[Entry], snap: Snapshot, usage: Usage, actions: Mapping[str, int]) -> list[str]:
    """Consume the order as a cycle would: admit, hold part of the request, or leave pending."""
    out: list[str] = []
    for e in order:
        out.append(e.workload.key)
        node = snap.nodes.get(e.cluster_queue)
        if node is None or e.assignment is None:
            continue
        action = actions[e.workload.key]
        if action == 1:
            usage.add_all(node, e.assignment.usage)
        elif action == 2:
            for fr, v in e.assignment.usage.items():
                usage.add(node, fr, v // 2)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_incremental_order_equals_the_order_decided_from_scratch(world: World) -> None:
    snap, entries, actions = world
    by_key = {e.workload.key: a for e, a in zip(entries, actions, strict=True)}
    want_usage, got_usage = snap.usage.overlay(), snap.usage.overlay()
    want = _play(_reference(entries, snap, want_usage), snap, want_usage, by_key)
    got = _play(iter(tournament(entries, snap, got_usage)), snap, got_usage, by_key)
    assert got == want
    assert sorted(got) == sorted(e.workload.key for e in entries)
