"""KEP-10852 tiers: one mapping from the core's pending reasons to the QuotaReserved=False
reason, its precedence, the multi-PodSet resolution, and each tier reached by the core."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.manager.core.config import CoreConfig, config_from
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.reasons import FlavorVerdict, Miss, Pending, PendingReason, PodSetMiss
from pykueue.manager.core.status import legacy_admitted, workload_status
from pykueue.manager.core.tiers import (
    AdmittedReason,
    Tier,
    most_severe,
    no_fit_tier,
    podset_tier,
    record_tier,
    tier_of,
    unadmitted_labels,
    verdict_tier,
)


def test_every_pending_kind_has_exactly_the_tier_kueue_writes_for_it() -> None:
    expected = {
        Pending.NO_QUEUE_NAME: Tier.MISCONFIGURED,
        Pending.LOCAL_QUEUE_NOT_FOUND: Tier.MISCONFIGURED,
        Pending.LOCAL_QUEUE_STOPPED: Tier.SUSPENDED,
        Pending.CLUSTER_QUEUE_NOT_FOUND: Tier.MISCONFIGURED,
        Pending.CLUSTER_QUEUE_GONE: Tier.MISCONFIGURED,
        Pending.CLUSTER_QUEUE_INACTIVE: Tier.SUSPENDED,
        Pending.NAMESPACE_MISMATCH: Tier.MISCONFIGURED,
        Pending.INVALID_RESOURCES: Tier.MISCONFIGURED,
        Pending.WAITING_FOR_TURN: Tier.PENDING_EVALUATION,
        Pending.DEACTIVATED: Tier.DEACTIVATED,
        Pending.REQUEUE_BACKOFF: Tier.PENDING_EVALUATION,
        Pending.NO_FIT: Tier.WAITING_FOR_QUOTA,  # no pod set verdicts at all
        Pending.NO_CANDIDATES: Tier.WAITING_FOR_QUOTA,
        Pending.OVERLAPPING_TARGETS: Tier.WAITING_FOR_QUOTA,
        Pending.NO_LONGER_FITS: Tier.WAITING_FOR_QUOTA,
        Pending.PREEMPTING: Tier.WAITING_FOR_PREEMPTED_WORKLOADS,
        Pending.TOPOLOGY_RESERVATION: Tier.TOPOLOGY_PLACEMENT_FAILED,
        Pending.WAITING_FOR_PODS_READY: Tier.WAITING_FOR_PODS_READY,
        Pending.ADMISSION_GATED: Tier.ADMISSION_GATED,
        Pending.EQUIVALENT_NO_FIT: Tier.WAITING_FOR_QUOTA,  # the equivalent's tier, in ``detail``
        Pending.ON_HOLD: Tier.ON_HOLD,
    }
    assert set(expected) == set(Pending)
    assert {kind: tier_of(PendingReason(kind, "q")) for kind in Pending} == expected
    assert tier_of(None) is Tier.PENDING_EVALUATION
    assert tier_of(PendingReason(Pending.EQUIVALENT_NO_FIT, "q", "ExceedsMaxQuota")) is Tier.EXCEEDS_MAX_QUOTA


def test_precedence_is_the_keps_workload_wide_then_nominated_then_pending_evaluation() -> None:
    order = [Tier.DEACTIVATED, Tier.ON_HOLD, Tier.MISCONFIGURED, Tier.NO_MATCHING_FLAVOR, Tier.SUSPENDED,
             Tier.ADMISSION_GATED, Tier.WAITING_FOR_PODS_READY,
             Tier.EXCEEDS_MAX_QUOTA, Tier.WAITING_FOR_QUOTA, Tier.TOPOLOGY_PLACEMENT_FAILED,
             Tier.WAITING_FOR_PREEMPTED_WORKLOADS, Tier.PENDING_EVALUATION]
    assert list(Tier) == order
    for i, higher in enumerate(order):
        for lower in order[i:]:
            assert most_severe(lower, higher) is higher
    assert most_severe() is Tier.PENDING_EVALUATION


def _v(kind: Miss, flavor: str, group: int = 0, blocking: bool = True) -> FlavorVerdict:
    return FlavorVerdict(kind, flavor, "cpu", group=group, blocking=blocking)


def test_a_pod_sets_tier_is_its_nominated_flavors_per_group_and_the_worst_group() -> None:
    # One group: the flavor closest to fitting decides.
    assert podset_tier(PodSetMiss("main", (_v(Miss.UNTOLERATED_TAINT, "a"), _v(Miss.OVER_CAPACITY, "b")))) \
        is Tier.EXCEEDS_MAX_QUOTA
    assert podset_tier(PodSetMiss("main", (_v(Miss.OVER_CAPACITY, "a"), _v(Miss.INSUFFICIENT_QUOTA, "b")))) \
        is Tier.WAITING_FOR_QUOTA
    assert podset_tier(PodSetMiss("main", (_v(Miss.NODE_AFFINITY, "a"), _v(Miss.FLAVOR_NOT_FOUND, "b")))) \
        is Tier.NO_MATCHING_FLAVOR
    # A flavor is judged by its worst resource.
    assert podset_tier(PodSetMiss("main", (_v(Miss.INSUFFICIENT_QUOTA, "a"), _v(Miss.OVER_CAPACITY, "a")))) \
        is Tier.EXCEEDS_MAX_QUOTA
    # Groups are all needed: the worst group decides.
    assert podset_tier(PodSetMiss("main", (_v(Miss.INSUFFICIENT_QUOTA, "a", 0),
                                           _v(Miss.TOPOLOGY, "gpu", 1)))) is Tier.WAITING_FOR_QUOTA
    # A flavor that fits by preempting was no NoFit attempt; with nothing tried: no matching flavor.
    assert podset_tier(PodSetMiss("main", (_v(Miss.INSUFFICIENT_QUOTA, "a", blocking=False),
                                           _v(Miss.OVER_CAPACITY, "b")))) is Tier.EXCEEDS_MAX_QUOTA
    assert podset_tier(PodSetMiss("main", ())) is Tier.NO_MATCHING_FLAVOR
    assert podset_tier(PodSetMiss("main", (FlavorVerdict(Miss.RESOURCE_UNAVAILABLE, resource="gpu"),))) \
        is Tier.NO_MATCHING_FLAVOR


def test_the_first_pod_set_without_a_flavor_decides() -> None:
    preempting = PodSetMiss("driver", (_v(Miss.INSUFFICIENT_QUOTA, "a", blocking=False),), no_fit=False)
    waiting = PodSetMiss("a", (_v(Miss.INSUFFICIENT_QUOTA, "a"),))
    over = PodSetMiss("b", (_v(Miss.OVER_CAPACITY, "a"),))
    assert no_fit_tier((preempting, over)) is Tier.EXCEEDS_MAX_QUOTA  # the KEP's example 2
    assert no_fit_tier((waiting, over)) is Tier.WAITING_FOR_QUOTA  # Kueue never looks at "b"
    assert tier_of(PendingReason(Pending.NO_FIT, podsets=(over, waiting))) is Tier.EXCEEDS_MAX_QUOTA


def test_a_topology_failure_on_quota_that_fits_is_topology_placement_failed() -> None:
    tas = PendingReason(Pending.NO_CANDIDATES, podsets=(PodSetMiss("main", (_v(Miss.TOPOLOGY, "tas"),)),))
    assert tier_of(tas) is Tier.TOPOLOGY_PLACEMENT_FAILED
    assert tier_of(PendingReason(Pending.NO_CANDIDATES)) is Tier.WAITING_FOR_QUOTA


# -- reached by the core ---------------------------------------------------------------------

def _cq(core: QueueingCore, name: str = "cq", cpu: int = 4, flavor: str = "rf", **spec: Any) -> None:
    core.apply({"kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
        "namespaceSelector": {}, **spec, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}})


def _core(config: CoreConfig | None = None, **cq_spec: Any) -> QueueingCore:
    core = QueueingCore(config)
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {}})
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "tainted"}, "spec": {
        "nodeTaints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}})
    _cq(core, **cq_spec)
    _cq(core, "cq-tainted", flavor="tainted")
    for lq, cq in (("lq", "cq"), ("lq-tainted", "cq-tainted"), ("lq-nowhere", "absent")):
        core.apply({"kind": "LocalQueue", "metadata": {"name": lq, "namespace": "ns"},
                    "spec": {"clusterQueue": cq}})
    return core


def _wl(core: QueueingCore, name: str, cpu: int, queue: str = "lq", priority: int = 0,
        active: bool = True, namespace: str = "ns") -> str:
    core.apply({"kind": "Workload", "metadata": {"name": name, "namespace": namespace}, "spec": {
        "queueName": queue, "priority": priority, "active": active, "podSets": [{
            "name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}})
    return f"{namespace}/{name}"


def _tier(core: QueueingCore, key: str) -> Tier:
    return record_tier(core.workload(key))


def test_each_tier_the_core_produces_is_reached() -> None:
    # The runtime's setting: an evicted workload's quota is held until its job stops.
    core = _core(CoreConfig(hold_quota_until_stopped=True),
                 preemption={"withinClusterQueue": "LowerPriority"})
    queued = _wl(core, "queued", 1)
    assert _tier(core, queued) is Tier.PENDING_EVALUATION  # not evaluated yet
    core.run_until_idle()
    assert core.workload(queued).status == "Admitted"
    keys = {
        Tier.DEACTIVATED: _wl(core, "inactive", 1, active=False),
        Tier.MISCONFIGURED: _wl(core, "no-lq", 1, queue="missing"),
        Tier.NO_MATCHING_FLAVOR: _wl(core, "tainted", 1, queue="lq-tainted"),
        Tier.EXCEEDS_MAX_QUOTA: _wl(core, "huge", 9),
        Tier.WAITING_FOR_QUOTA: _wl(core, "later", 4),
    }
    core.run_until_idle()
    assert {tier: _tier(core, key) for tier, key in keys.items()} == {tier: tier for tier in keys}
    assert record_tier(core.all_workloads()[_wl(core, "no-cq", 1, queue="lq-nowhere")]) is Tier.MISCONFIGURED

    # A preemptor waits for its victim, whose job has not stopped yet.
    urgent = _wl(core, "urgent", 4, priority=10)
    core.run_until_idle()
    assert _tier(core, urgent) is Tier.WAITING_FOR_PREEMPTED_WORKLOADS

    # A stopped ClusterQueue suspends what waits in it; a deactivation still outranks it.
    _cq(core, stopPolicy="Hold", preemption={"withinClusterQueue": "LowerPriority"})
    core.run_until_idle()
    assert _tier(core, keys[Tier.WAITING_FOR_QUOTA]) is Tier.SUSPENDED
    assert _tier(core, keys[Tier.DEACTIVATED]) is Tier.DEACTIVATED


def test_a_namespace_the_queue_does_not_select_is_misconfigured() -> None:
    core = _core(namespaceSelector={"matchLabels": {"team": "a"}})
    key = _wl(core, "w", 1)
    core.run_until_idle()
    assert core.workload(key).pending is not None
    assert core.workload(key).pending.kind is Pending.NAMESPACE_MISMATCH
    assert _tier(core, key) is Tier.MISCONFIGURED


def _conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


def test_the_tier_is_the_condition_reason_and_admitted_says_no_reservation() -> None:
    core = _core()
    _wl(core, "first", 3)
    key = _wl(core, "second", 3)
    core.run_until_idle()
    rec = core.workload(key)
    conds = _conditions(workload_status(rec, core.now))
    assert conds["QuotaReserved"] == ("False", "WaitingForQuota", rec.reason)
    assert conds["Admitted"] == ("False", "NoReservation", "The workload has no reservation")
    assert unadmitted_labels(rec) == ("NoReservation", "WaitingForQuota")
    # The gate off: Kueue's legacy reason and no Admitted condition.
    legacy = _conditions(workload_status(rec, core.now, tiered=False))
    assert legacy == {"QuotaReserved": ("False", "Pending", rec.reason)}


def test_a_queue_problem_was_inadmissible_and_is_now_its_tier() -> None:
    core = _core()
    rec = core.all_workloads()[_wl(core, "w", 1, queue="missing")]
    assert _conditions(workload_status(rec, core.now))["QuotaReserved"][:2] == ("False", "Misconfigured")
    assert _conditions(workload_status(rec, core.now, tiered=False))["QuotaReserved"][:2] == \
        ("False", "Inadmissible")


def _with_check(core: QueueingCore) -> str:
    core.apply({"kind": "AdmissionCheck", "metadata": {"name": "prov"}, "spec": {"controllerName": "x"}})
    _cq(core, admissionChecksStrategy={"admissionChecks": [{"name": "prov"}]})
    key = _wl(core, "w", 1)
    core.run_until_idle()
    return key


def test_a_reservation_waiting_for_checks_or_topology_has_its_admitted_reason() -> None:
    core = _core()
    key = _with_check(core)
    rec = core.workload(key)
    assert rec.status == "QuotaReserved"
    conds = _conditions(workload_status(rec, core.now))
    assert conds["Admitted"] == ("False", "UnsatisfiedAdmissionChecks",
                                 "The workload has not all checks ready")
    assert unadmitted_labels(rec) == (AdmittedReason.UNSATISFIED_CHECKS, "")
    # Without the tiers Kueue writes Admitted only when it flips: never admitted, none.
    assert "Admitted" not in _conditions(workload_status(rec, core.now, tiered=False))
    core.set_check_state(key, "prov", "Ready")
    core.run_until_idle()
    assert core.workload(key).status == "Admitted"
    assert unadmitted_labels(core.workload(key)) is None
    # Checks Ready but a delayed topology request still pending.
    rec.status, rec.checks = "QuotaReserved", {"prov": "Ready"}
    waiting = _conditions(workload_status(rec, core.now, delayed_topology={"main": "Pending"}))
    assert waiting["Admitted"] == ("False", "PendingDelayedTopologyRequests",
                                   "There are pending delayed topology requests")
    assert unadmitted_labels(rec, delayed_topology=True) == ("PendingDelayedTopologyRequests", "")


@pytest.mark.parametrize(("gates", "tiered"), [(None, False), ({}, False),
                                              ({"UnadmittedWorkloadsObservability": True}, True),
                                              ({"UnadmittedWorkloadsObservability": False}, False)])
def test_the_feature_gate_is_off_by_default_as_in_kueue_v0_19_2(gates: dict[str, bool] | None,
                                                                tiered: bool) -> None:
    config: dict[str, Any] = {"manageJobsWithoutQueueName": False}
    if gates is not None:
        config["featureGates"] = gates
    assert config_from(config).tiered_reasons is tiered
    config["waitForPodsReady"] = {"timeout": "5m"}
    assert config_from(config).tiered_reasons is tiered


def test_blocked_admission_tells_the_next_workload_it_waits_for_pods_ready() -> None:
    core = _core(config_from({"waitForPodsReady": {"timeout": "5m", "blockAdmission": True}}))
    first = _wl(core, "first", 1)
    core.run_until_idle()
    assert core.workload(first).status == "Admitted"
    core.take_changes()
    second, third = _wl(core, "second", 1), _wl(core, "third", 1)
    core.run_until_idle()
    # Only the head Kueue's scheduler would admit next is told; it stays queued.
    assert _tier(core, second) is Tier.WAITING_FOR_PODS_READY
    assert core.workload(second).reason == "waiting for all admitted workloads to be in PodsReady condition"
    assert _tier(core, third) is Tier.PENDING_EVALUATION
    legacy = _conditions(workload_status(core.workload(second), core.now, tiered=False))
    assert legacy["QuotaReserved"][:2] == ("False", "Waiting")  # Kueue's reason without the tiers
    assert second in core.take_changes().written
    core.run_until_idle()
    assert second not in core.take_changes().written  # unchanged: nothing to write again
    core.set_pods_ready(first)
    core.run_until_idle()
    assert core.workload(second).status == "Admitted"
    assert _tier(core, third) is Tier.WAITING_FOR_PODS_READY


def _gated(core: QueueingCore, gate: str) -> str:
    core.apply({"kind": "Workload", "metadata": {"name": "gated", "namespace": "ns", "annotations": {
        "kueue.x-k8s.io/admission-gated-by": gate}}, "spec": {"queueName": "lq", "podSets": [{
            "name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}})
    return "ns/gated"


def test_an_admission_gate_keeps_the_workload_out_of_its_queue_until_cleared() -> None:
    core = _core()
    key = _gated(core, "example.com/budget")
    core.run_until_idle()
    rec = core.workload(key)
    assert (rec.status, _tier(core, key)) == ("Pending", Tier.ADMISSION_GATED)
    assert rec.reason == "Admission is gated by: example.com/budget"
    assert rec.cluster_queue is None  # not queued: not in the visibility API either
    assert _conditions(workload_status(rec, core.now, tiered=False))["QuotaReserved"][1] == "AdmissionGated"
    _gated(core, "")  # the gate is cleared
    core.run_until_idle()
    assert core.workload(key).status == "Admitted"
    # A stopped queue outranks the gate.
    core = _core(stopPolicy="Hold")
    key = _gated(core, "example.com/budget")
    assert _tier(core, key) is Tier.SUSPENDED
    # With Kueue's AdmissionGatedBy gate off the annotation means nothing.
    core = _core(config_from({"featureGates": {"AdmissionGatedBy": False}}))
    key = _gated(core, "example.com/budget")
    core.run_until_idle()
    assert core.workload(key).status == "Admitted"


def test_back_in_the_queue_behind_an_equivalent_no_fit_it_takes_that_tier() -> None:
    # Kueue's scheduling equivalence: a workload requeued behind an equivalent one that did not
    # fit is not evaluated; its controller gives it that verdict's tier. A new one keeps none.
    # Only with the tiers: without them Kueue's controller does not look at the equivalence.
    core = _core(CoreConfig(tiered_reasons=True), cpu=1)
    _wl(core, "runs", 1)
    core.run_until_idle()
    _wl(core, "waits", 1)
    core.run_until_idle()
    new = _wl(core, "new", 1)
    key = _gated(core, "example.com/budget")
    core.run_until_idle()
    assert (_tier(core, new), _tier(core, key)) == (Tier.PENDING_EVALUATION, Tier.ADMISSION_GATED)
    _gated(core, "")
    core.run_until_idle()
    assert _tier(core, key) is Tier.WAITING_FOR_QUOTA
    assert core.workload(key).reason == (
        "Bypassed scheduling evaluation because an equivalent workload recently failed")
    assert _tier(core, new) is Tier.PENDING_EVALUATION
    core.finish("ns/runs")
    core.run_until_idle()
    assert core.workload("ns/waits").status == "Admitted"
    # "new" (earlier) is evaluated now and parks its equivalents again: "gated" keeps its reason.
    assert _tier(core, new) is Tier.WAITING_FOR_QUOTA
    assert "insufficient unused quota" in core.workload(new).reason
    assert core.workload(key).reason.startswith("Bypassed")


def test_every_flavor_miss_has_a_tier() -> None:
    for miss in Miss:
        verdict_tier(FlavorVerdict(kind=miss, flavor="f", resource="cpu"))


def test_without_the_tiers_admitted_is_written_only_when_it_flips() -> None:
    """Kueue's SyncAdmittedCondition with UnadmittedWorkloadsObservability off."""
    admitted = {"type": "Admitted", "status": "True", "reason": "Admitted",
                "message": "The workload is admitted", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    pending = {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                               "message": "", "lastTransitionTime": "2026-01-01T00:01:00Z"}]}
    assert legacy_admitted({}, pending, 0.0) == pending, "never admitted: no Admitted condition"

    def reason(stored: dict[str, Any], rendered: dict[str, Any]) -> tuple[str, str]:
        [cond] = [c for c in legacy_admitted(stored, rendered, 0.0)["conditions"] if c["type"] == "Admitted"]
        return cond["status"], cond["reason"]

    was = {"conditions": [admitted]}
    assert reason(was, pending) == ("False", "NoReservation")
    checks = {**pending, "admissionChecks": [{"name": "prov", "state": "Pending"}]}
    assert reason(was, checks) == ("False", "NoReservationUnsatisfiedChecks")
    reserved = {"conditions": [{"type": "QuotaReserved", "status": "True"}],
                "admissionChecks": [{"name": "prov", "state": "Retry"}]}
    assert reason(was, reserved) == ("False", "UnsatisfiedChecks")
    # Once False it stays as written until the next admission.
    evicted = {"conditions": [{**admitted, "status": "False", "reason": "NoReservation"}]}
    assert reason(evicted, reserved) == ("False", "NoReservation")
    again = {"conditions": [admitted]}
    assert legacy_admitted(evicted, again, 0.0) == again
