"""Pending reasons are values: decisions read their kind, and the text Kueue writes is
rendered from them (the texts are Kueue's, compared byte for byte by the scenarios too)."""

from __future__ import annotations

from pykueue.manager.core.reasons import (
    FlavorVerdict,
    Miss,
    Pending,
    PendingReason,
    PodSetMiss,
    Preemption,
)


def test_quota_verdicts_carry_amounts_and_render_kueues_text() -> None:
    over = FlavorVerdict(Miss.OVER_CAPACITY, "on-demand", "cpu", requested=6000, available=4000)
    short = FlavorVerdict(Miss.INSUFFICIENT_QUOTA, "on-demand", "memory", requested=3 * 2**30,
                          available=2**30)
    assert over.message() == ("insufficient quota for cpu in flavor on-demand, request > maximum capacity "
                              "(6 > 4)")
    assert short.shortfall == 2**31
    assert short.message() == "insufficient unused quota for memory in flavor on-demand, 2Gi more needed"


def test_pod_set_misses_join_as_kueue_joins_them() -> None:
    reason = PendingReason(Pending.NO_FIT, podsets=(
        PodSetMiss("driver", (FlavorVerdict(Miss.FLAVOR_NOT_FOUND, "spot"),
                              FlavorVerdict(Miss.UNTOLERATED_TAINT, "gpu", detail="team=a:NoSchedule"))),
        PodSetMiss("workers", (FlavorVerdict(Miss.RESOURCE_UNAVAILABLE, resource="nvidia.com/gpu"),)),
    ))
    assert reason.message() == (
        "couldn't assign flavors to pod set driver: flavor spot not found, untolerated taint "
        "team=a:NoSchedule in flavor gpu; couldn't assign flavors to pod set workers: resource "
        "nvidia.com/gpu unavailable in ClusterQueue")
    assert PendingReason(Pending.NO_FIT).message() == "no fit"
    assert PendingReason(Pending.NO_CANDIDATES).message() == "requires preemption, but no candidates"


def test_queue_problems_are_inadmissible_and_nothing_else_is() -> None:
    problems = {PendingReason(Pending.LOCAL_QUEUE_NOT_FOUND, "lq"),
                PendingReason(Pending.LOCAL_QUEUE_STOPPED, "lq"),
                PendingReason(Pending.CLUSTER_QUEUE_NOT_FOUND, "cq"),
                PendingReason(Pending.CLUSTER_QUEUE_GONE, "cq"),
                PendingReason(Pending.CLUSTER_QUEUE_INACTIVE, "cq", "Stopped")}
    assert all(r.queue_problem for r in problems)
    assert {r.message() for r in problems} == {
        "LocalQueue lq doesn't exist", "LocalQueue lq is inactive", "ClusterQueue cq doesn't exist",
        "ClusterQueue cq not found", "ClusterQueue cq is inactive: Stopped"}
    others = [PendingReason(k, "cq") for k in Pending if k not in {r.kind for r in problems}]
    assert others and not any(r.queue_problem for r in others)


def test_a_topology_failure_takes_the_placement_explanation() -> None:
    failed = PendingReason(Pending.NO_CANDIDATES, podsets=(
        PodSetMiss("main", (FlavorVerdict(Miss.TOPOLOGY, "tas"),)),))
    assert failed.topology_failed
    assert failed.message() == "couldn't assign flavors to pod set main: topology placement failed"
    explained = failed.with_topology_detail('topology "default" allows to fit only 3 out of 4 pod(s)')
    assert explained.kind is Pending.NO_CANDIDATES
    assert explained.message() == ('couldn\'t assign flavors to pod set main: topology "default" allows to '
                                   "fit only 3 out of 4 pod(s)")
    assert failed.with_topology_detail("") == failed
    no_quota = FlavorVerdict(Miss.NO_QUOTA, "f", "cpu")
    quota_only = PendingReason(Pending.NO_FIT, podsets=(PodSetMiss("main", (no_quota,)),))
    assert not quota_only.topology_failed


def test_a_preemption_renders_kueues_victim_message() -> None:
    cause = Preemption("InCohortReclamation", "uid-1", "", "/co/a", "/co/b")
    assert cause.message() == ("Preempted to accommodate a workload (UID: uid-1, JobUID: UNKNOWN) due to "
                               "reclamation within the cohort; preemptor path: /co/a; preemptee path: /co/b")
