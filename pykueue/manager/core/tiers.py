"""Tiered pending reasons (Kueue's KEP-10852, Inadmissible Workloads Observability).

With Kueue's ``UnadmittedWorkloadsObservability`` gate on (its default at HEAD) the
``QuotaReserved=False`` condition's reason is no longer the bare ``Pending`` or
``Inadmissible`` but a *tier*: why the quota is not reserved, ranked so that a structural
blocker (deactivated, missing queue, no matching flavor) wins over a capacity wait. The
message stays the one :meth:`PendingReason.message` renders.

This module is the one place that maps the core's typed reasons to tiers: the Workload
status, ``simulate --json``, the metrics and the visibility API all call it.
"""

from __future__ import annotations

from enum import StrEnum

from .reasons import FlavorVerdict, Miss, Pending, PendingReason, PodSetMiss
from .workload_state import PENDING, QUOTA_RESERVED, WorkloadView


class Tier(StrEnum):
    """The ``QuotaReserved=False`` reasons, most severe first (the KEP's precedence)."""

    # Workload-wide: flavor assignment is not even looked at.
    DEACTIVATED = "Deactivated"
    ON_HOLD = "OnHold"
    MISCONFIGURED = "Misconfigured"
    NO_MATCHING_FLAVOR = "NoMatchingFlavor"
    SUSPENDED = "Suspended"
    ADMISSION_GATED = "AdmissionGated"
    WAITING_FOR_PODS_READY = "WaitingForPodsReady"
    # The nominated flavor's verdict.
    EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
    WAITING_FOR_QUOTA = "WaitingForQuota"
    TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"
    WAITING_FOR_PREEMPTED_WORKLOADS = "WaitingForPreemptedWorkloads"
    # Queued, not evaluated yet.
    PENDING_EVALUATION = "PendingEvaluation"


_RANK = {tier: i for i, tier in enumerate(Tier)}


def most_severe(*tiers: Tier) -> Tier:
    """The tier that takes precedence (PendingEvaluation when none is given)."""
    return min(tiers, key=_RANK.__getitem__, default=Tier.PENDING_EVALUATION)


def least_severe(tiers: list[Tier]) -> Tier:
    return max(tiers, key=_RANK.__getitem__)


class AdmittedReason(StrEnum):
    """The ``Admitted=False`` reasons under the same gate."""

    NO_RESERVATION = "NoReservation"
    UNSATISFIED_CHECKS = "UnsatisfiedAdmissionChecks"
    PENDING_DELAYED_TOPOLOGY = "PendingDelayedTopologyRequests"


# Kinds whose tier does not depend on the flavor verdicts. Kueue's scheduler writes
# WaitingForQuota for every "fits only after others free quota" outcome (no preemption
# candidates, overlapping targets, taken by an earlier admission of the same cycle), and its
# job reconciler PendingEvaluation after an eviction (the requeue backoff included).
_BY_KIND: dict[Pending, Tier] = {
    Pending.NO_QUEUE_NAME: Tier.MISCONFIGURED,
    Pending.LOCAL_QUEUE_NOT_FOUND: Tier.MISCONFIGURED,
    Pending.LOCAL_QUEUE_STOPPED: Tier.SUSPENDED,
    Pending.CLUSTER_QUEUE_NOT_FOUND: Tier.MISCONFIGURED,
    Pending.CLUSTER_QUEUE_GONE: Tier.MISCONFIGURED,
    Pending.CLUSTER_QUEUE_INACTIVE: Tier.SUSPENDED,  # Kueue: any inactive ClusterQueue
    Pending.NAMESPACE_MISMATCH: Tier.MISCONFIGURED,
    Pending.INVALID_RESOURCES: Tier.MISCONFIGURED,  # Kueue: any failed admissibility validation
    Pending.WAITING_FOR_TURN: Tier.PENDING_EVALUATION,
    Pending.DEACTIVATED: Tier.DEACTIVATED,
    Pending.REQUEUE_BACKOFF: Tier.PENDING_EVALUATION,
    Pending.NO_CANDIDATES: Tier.WAITING_FOR_QUOTA,
    Pending.OVERLAPPING_TARGETS: Tier.WAITING_FOR_QUOTA,
    Pending.NO_LONGER_FITS: Tier.WAITING_FOR_QUOTA,
    Pending.PREEMPTING: Tier.WAITING_FOR_PREEMPTED_WORKLOADS,
    Pending.TOPOLOGY_RESERVATION: Tier.TOPOLOGY_PLACEMENT_FAILED,
    Pending.WAITING_FOR_PODS_READY: Tier.WAITING_FOR_PODS_READY,
    Pending.ADMISSION_GATED: Tier.ADMISSION_GATED,
    Pending.ON_HOLD: Tier.ON_HOLD,
}

_BY_MISS: dict[Miss, Tier] = {
    Miss.RESOURCE_UNAVAILABLE: Tier.NO_MATCHING_FLAVOR,
    Miss.FLAVOR_NOT_FOUND: Tier.NO_MATCHING_FLAVOR,
    Miss.NO_TOPOLOGY_SUPPORT: Tier.NO_MATCHING_FLAVOR,
    Miss.NO_TOPOLOGY_LEVEL: Tier.NO_MATCHING_FLAVOR,  # the flavor's topology lacks the level
    Miss.TOPOLOGY_ONLY: Tier.NO_MATCHING_FLAVOR,
    Miss.UNTOLERATED_TAINT: Tier.NO_MATCHING_FLAVOR,
    Miss.NODE_AFFINITY: Tier.NO_MATCHING_FLAVOR,
    Miss.NO_QUOTA: Tier.NO_MATCHING_FLAVOR,
    Miss.SLICE_FLAVOR: Tier.NO_MATCHING_FLAVOR,
    Miss.OVER_CAPACITY: Tier.EXCEEDS_MAX_QUOTA,
    Miss.INSUFFICIENT_QUOTA: Tier.WAITING_FOR_QUOTA,
    Miss.TOPOLOGY: Tier.TOPOLOGY_PLACEMENT_FAILED,
}


def verdict_tier(verdict: FlavorVerdict) -> Tier:
    return _BY_MISS[verdict.kind]


def podset_tier(miss: PodSetMiss) -> Tier:
    """A pod set's tier: per resource group the least severe of its flavors (the one closest
    to fitting is the nominated one), then the most severe across groups (all are needed)."""
    flavors: dict[tuple[int, str], Tier] = {}
    for i, v in enumerate(miss.verdicts):
        if not v.blocking:
            continue  # a flavor that fits by preempting is not a NoFit attempt
        key = (v.group, v.flavor) if v.flavor else (-1 - i, "")
        flavors[key] = most_severe(flavors.get(key, Tier.PENDING_EVALUATION), verdict_tier(v))
    if not flavors:
        return Tier.NO_MATCHING_FLAVOR  # no flavor was even tried
    groups: dict[int, list[Tier]] = {}
    for (group, _), tier in flavors.items():
        groups.setdefault(group, []).append(tier)
    return most_severe(*(least_severe(tiers) for tiers in groups.values()))


def no_fit_tier(podsets: tuple[PodSetMiss, ...]) -> Tier:
    """Kueue stops at the first pod set that gets no flavor and reports its tier (the pod
    sets before it got a flavor, so theirs rank lower anyway)."""
    for miss in podsets:
        if miss.no_fit:
            return podset_tier(miss)
    return Tier.WAITING_FOR_QUOTA


def tier_of(reason: PendingReason | None) -> Tier:
    """The tier of one pending reason (PendingEvaluation before the first evaluation)."""
    if reason is None:
        return Tier.PENDING_EVALUATION
    if reason.kind is Pending.NO_FIT:
        return no_fit_tier(reason.podsets)
    if reason.kind is Pending.EQUIVALENT_NO_FIT:
        return Tier(reason.detail or Tier.WAITING_FOR_QUOTA)
    if reason.kind is Pending.NO_CANDIDATES and reason.topology_failed:
        # Quota fits but no domain takes the pod set: Kueue's TopologyPlacementFailed.
        return Tier.TOPOLOGY_PLACEMENT_FAILED
    return _BY_KIND[reason.kind]


def record_tier(rec: WorkloadView) -> Tier:
    """The tier of a pending workload; a deactivation outranks whatever else holds it."""
    if rec.deactivated:
        return Tier.DEACTIVATED
    return tier_of(rec.pending)


def admitted_reason(rec: WorkloadView, delayed_topology: bool = False) -> AdmittedReason | None:
    """Why ``Admitted`` is False (None once admitted or finished); ``delayed_topology``: a pod
    set still waits for its delayed topology assignment."""
    if rec.status == PENDING:
        return AdmittedReason.NO_RESERVATION
    if rec.status == QUOTA_RESERVED:
        if delayed_topology and all(state == "Ready" for state in rec.checks.values()):
            return AdmittedReason.PENDING_DELAYED_TOPOLOGY
        return AdmittedReason.UNSATISFIED_CHECKS
    return None  # admitted or finished


def unadmitted_labels(rec: WorkloadView, delayed_topology: bool = False) -> tuple[str, str] | None:
    """(reason, underlying_cause) of Kueue's unadmitted-workloads metrics, None when admitted:
    the Admitted condition's reason, and the QuotaReserved one (empty while quota is held)."""
    reason = admitted_reason(rec, delayed_topology)
    if reason is None:
        return None
    return reason.value, record_tier(rec).value if rec.status == PENDING else ""
