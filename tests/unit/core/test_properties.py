"""Properties of the core over random scenarios (hypothesis).

Random cohort trees of ClusterQueues with nominal quotas, borrowing and lending limits,
random workloads, random completions and deletions. After every step:

* quota is never exceeded, at any level: recomputed here from the workloads holding
  quota, independently of the core's ledger, following Kueue's resource-node rules;
* the core's ledger equals that recomputation (nothing counted twice or forgotten);
* a workload is never admitted twice (no eviction happens in these scenarios);
* StrictFIFO queues admit in queue order (the admitted set is a prefix of the order);
* every pending workload has a reason.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.objects import FR
from pykueue.manager.scenario.loader import Scenario
from pykueue.manager.scenario.runner import Simulation

FLAVORS = ("f1", "f2")


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    objects: list[dict[str, Any]] = [{"kind": "ResourceFlavor", "metadata": {"name": f}} for f in FLAVORS]
    n_cohorts = draw(st.integers(0, 3))
    cohorts = [f"co{i}" for i in range(n_cohorts)]
    for i, name in enumerate(cohorts):
        parent = draw(st.sampled_from([None, *cohorts[:i]]))
        spec: dict[str, Any] = {"parentName": parent} if parent else {}
        if draw(st.booleans()):
            q: dict[str, Any] = {"name": "cpu", "nominalQuota": draw(st.integers(0, 4))}
            if parent and draw(st.booleans()):
                q["borrowingLimit"] = draw(st.integers(0, 3))
            if parent and draw(st.booleans()):
                q["lendingLimit"] = draw(st.integers(0, q["nominalQuota"]))
            spec["resourceGroups"] = [{"coveredResources": ["cpu"],
                                       "flavors": [{"name": "f1", "resources": [q]}]}]
        objects.append({"kind": "Cohort", "metadata": {"name": name}, "spec": spec})
    n_cqs = draw(st.integers(1, 5))
    for i in range(n_cqs):
        cohort = draw(st.sampled_from([None, *cohorts])) if cohorts else None
        flavors = []
        for f in draw(st.lists(st.sampled_from(FLAVORS), min_size=1, max_size=2, unique=True)):
            q = {"name": "cpu", "nominalQuota": draw(st.integers(0, 6))}
            if cohort and draw(st.booleans()):
                q["borrowingLimit"] = draw(st.integers(0, 4))
            if cohort and draw(st.booleans()):
                q["lendingLimit"] = draw(st.integers(0, q["nominalQuota"]))
            flavors.append({"name": f, "resources": [q]})
        spec = {"namespaceSelector": {},
                "queueingStrategy": draw(st.sampled_from(["BestEffortFIFO", "StrictFIFO"])),
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}],
                "flavorFungibility": {"whenCanBorrow": draw(st.sampled_from(["Borrow", "TryNextFlavor"]))}}
        if cohort:
            spec["cohortName"] = cohort
        objects.append({"kind": "ClusterQueue", "metadata": {"name": f"cq{i}"}, "spec": spec})
        objects.append({"kind": "LocalQueue", "metadata": {"name": f"lq{i}", "namespace": "ns"},
                        "spec": {"clusterQueue": f"cq{i}"}})
    n_wl = draw(st.integers(1, 14))
    for i in range(n_wl):
        objects.append({"kind": "Workload", "metadata": {"name": f"w{i}", "namespace": "ns"}, "spec": {
            "queueName": f"lq{draw(st.integers(0, n_cqs - 1))}", "priority": draw(st.integers(0, 2)),
            "podSets": [{"name": "main", "count": draw(st.integers(1, 3)),
                         "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": str(draw(st.integers(1, 3)))}}}]}}}]}})
    steps = draw(st.lists(st.one_of(
        st.builds(lambda i: {"finish": f"ns/w{i}"}, st.integers(0, n_wl - 1)),
        st.builds(lambda i: {"delete": {"kind": "Workload", "namespace": "ns", "name": f"w{i}"}},
                  st.integers(0, n_wl - 1)),
        st.just({"advance": "1m"}),
    ), max_size=6))
    return objects, steps


def _check_quota(core: QueueingCore) -> None:
    """Recompute usage bottom-up from the workloads and check every node's limits."""
    tree = core.quota_tree()
    nodes = {**{("cq", n): node for n, node in tree.cluster_queues.items()},
             **{("co", n): node for n, node in tree.cohorts.items()}}
    recomputed: dict[int, dict[FR, int]] = {id(n): {} for n in nodes.values()}
    for rec in core.all_workloads().values():
        if rec.holds_quota:
            row = recomputed[id(tree.cluster_queues[rec.cluster_queue or ""])]
            for fr, v in rec.usage.items():
                row[fr] = row.get(fr, 0) + v

    def settle(node: Any) -> dict[FR, int]:
        row = recomputed[id(node)]
        for child in node.children:
            for fr, v in settle(child).items():
                row[fr] = row.get(fr, 0) + max(0, v - child.local.get(fr, 0))
        return row

    for node in nodes.values():
        if node.parent is None:
            settle(node)
    for node in nodes.values():
        row = recomputed[id(node)]
        ledger = {k: v for k, v in core.usage_at(node).items() if v}
        assert ledger == {k: v for k, v in row.items() if v}, node
        for fr, used in row.items():
            subtree = node.subtree.get(fr, 0)
            if node.parent is None:
                assert used <= subtree, (node, fr, used, subtree)
            bl = node.quota(fr).borrowing_limit
            if bl is not None:
                assert used <= subtree + bl, (node, fr, used, subtree, bl)


def _order(core: QueueingCore, cq: str) -> list[str]:
    recs = [r for r in core.all_workloads().values() if r.wl.queue_name == f"lq{cq[2:]}"]
    return [r.key for r in sorted(recs, key=lambda r: (-r.priority, r.queue_ts, r.key))]


@settings(max_examples=150, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_invariants_hold_after_every_step(data: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    objects, steps = data
    sim = Simulation(Scenario(objects=objects))
    core = sim.core
    ever_admitted: set[str] = set()
    admissions: dict[str, int] = {}
    deleted: set[str] = set()

    def observe() -> None:
        _check_quota(core)
        for rec in core.all_workloads().values():
            if rec.holds_quota and rec.key not in ever_admitted:
                ever_admitted.add(rec.key)
                admissions[rec.key] = admissions.get(rec.key, 0) + 1
            if rec.status == "Pending":
                assert rec.reason, rec.key
        assert all(n == 1 for n in admissions.values())
        for name, cq in core.cluster_queues().items():
            if cq.queueing_strategy != "StrictFIFO":
                continue
            order = [k for k in _order(core, name) if k not in deleted]
            taken = [k in ever_admitted for k in order]
            # Admitted workloads form a prefix of the queue order.
            assert taken == sorted(taken, reverse=True), (name, order, taken)

    for obj in objects:
        sim.apply(obj)
    sim.settle()
    observe()
    for step in steps:
        if "delete" in step:
            key = f"ns/{step['delete']['name']}"
            if key not in core.all_workloads():
                continue
            deleted.add(key)
        if "finish" in step:
            if step["finish"] not in core.all_workloads():
                continue
            if step["finish"] not in ever_admitted:
                deleted.add(step["finish"])  # finished while pending: it leaves the order
        sim.step(step)
        observe()


@st.composite
def eviction_scenarios(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """Scenarios with admission checks and waitForPodsReady, so workloads get evicted and return."""
    objects, _ = draw(scenarios())
    objects.append({"kind": "AdmissionCheck", "metadata": {"name": "chk"}})
    for obj in objects:
        if obj["kind"] == "ClusterQueue" and draw(st.booleans()):
            obj["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "chk"}]}
        if obj["kind"] == "Workload" and draw(st.booleans()):
            after = draw(st.sampled_from(["never", "1m", "10m"]))
            obj["metadata"]["annotations"] = {"pykueue.dev/pods-ready-after": after}
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "Workload"]
    steps = draw(st.lists(st.one_of(
        st.builds(lambda n, s: {"checkState": {"workload": f"ns/{n}", "check": "chk", "state": s}},
                  st.sampled_from(names), st.sampled_from(["Ready", "Retry", "Rejected", "Pending"])),
        st.builds(lambda n: {"finish": f"ns/{n}"}, st.sampled_from(names)),
        st.sampled_from([{"advance": "1m"}, {"advance": "5m"}, {"advance": "30m"}]),
    ), max_size=10))
    config = {"waitForPodsReady": {"timeout": "5m", "requeuingStrategy": {
        "backoffBaseSeconds": 60, "backoffLimitCount": draw(st.sampled_from([None, 1, 3]))}}}
    return objects, steps, config


@settings(max_examples=100, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(eviction_scenarios())
def test_invariants_hold_across_evictions_and_requeues(
        data: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]) -> None:
    objects, steps, config = data
    sim = Simulation(Scenario(objects=objects, config=config))
    core = sim.core

    def observe() -> None:
        _check_quota(core)
        for rec in core.all_workloads().values():
            queues = map(core.pending_queue, core.cluster_queues())
            queued = any(q is not None and rec.key in q for q in queues)
            if rec.holds_quota:
                # Holding quota and waiting in a queue at once would be a double admission.
                assert not queued, rec.key
                assert [cq for cq, held in core.holders_by_queue().items() if rec.key in held] == \
                    [rec.cluster_queue]
            elif rec.status == "Pending":
                assert rec.reason, rec.key
                if rec.deactivated or rec.requeue_at is not None:
                    assert not queued, rec.key  # deactivated or backing off: not schedulable

    for obj in objects:
        sim.apply(obj)
    sim.settle()
    observe()
    for step in steps:
        (kind, arg), = step.items()
        if kind == "checkState":
            key = arg["workload"]
            cq = core.cluster_queue(core.workload(key).cluster_queue or "")
            if cq is None or not cq.checks:
                continue
        sim.step(step)
        observe()
