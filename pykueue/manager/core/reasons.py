"""Why a workload waits, as values: the core decides on these, the edges render them.

The scheduling core used to carry a workload's pending reason as the sentence Kueue
writes into the ``QuotaReserved`` condition, and then had to parse its own sentences to
route (is this a queue problem? a topology failure?). Here each outcome is a typed value:
what kind of reason, which queue, which pod set and flavor, which resource and what
amounts. Decisions branch on the kind; :meth:`PendingReason.message` renders Kueue's text
for the Workload status, ``simulate`` and the visibility API, and tools that explain a
wait (``explain``, tiers) read the fields instead of the text.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Final

from pykueue.api.quantity import resource_quantity


class Miss(Enum):
    """Why one flavor (or the queue as a whole) could not take a pod set's resources."""

    RESOURCE_UNAVAILABLE = "ResourceUnavailable"  # no resource group of the queue covers it
    FLAVOR_NOT_FOUND = "FlavorNotFound"
    NO_TOPOLOGY_SUPPORT = "FlavorWithoutTopology"  # a topology request on a plain flavor
    TOPOLOGY_ONLY = "TopologyOnlyFlavor"  # a plain request on a TAS flavor outside a TAS-only queue
    NO_TOPOLOGY_LEVEL = "FlavorWithoutTopologyLevel"  # the flavor's topology lacks the requested level
    UNTOLERATED_TAINT = "UntoleratedTaint"
    NODE_AFFINITY = "NodeAffinityMismatch"
    NO_QUOTA = "NoQuotaForResource"
    OVER_CAPACITY = "ExceedsMaxQuota"  # more than the queue could ever get, borrowing included
    INSUFFICIENT_QUOTA = "InsufficientUnusedQuota"  # more than is free now
    TOPOLOGY = "TopologyPlacementFailed"
    SLICE_FLAVOR = "SliceFlavorMismatch"  # a scaled-up slice keeps the replaced slice's flavor


@dataclass(frozen=True)
class FlavorVerdict:
    """One rejection seen while assigning flavors to a pod set.

    For quota verdicts ``requested`` and ``available`` are amounts in the resource's
    integer unit (milli-units for CPU): the request, and the queue's maximum capacity
    (``OVER_CAPACITY``) or its quota free now (``INSUFFICIENT_QUOTA``). ``detail`` holds the
    untolerated taint, or a topology explanation. ``group`` is the index of the ClusterQueue's
    resource group the flavor was tried for, and ``blocking`` False when the flavor still fits
    by preempting: both only rank the verdict into a tier (see ``tiers``)."""

    kind: Miss
    flavor: str = ""
    resource: str = ""
    requested: int = 0
    available: int = 0
    detail: str = ""
    group: int = field(default=0, compare=False)
    blocking: bool = field(default=True, compare=False)

    def message(self) -> str:
        f, r = self.flavor, self.resource
        match self.kind:
            case Miss.RESOURCE_UNAVAILABLE:
                return f"resource {r} unavailable in ClusterQueue"
            case Miss.FLAVOR_NOT_FOUND:
                return f"flavor {f} not found"
            case Miss.NO_TOPOLOGY_SUPPORT:
                return f"flavor {f} does not support TopologyAwareScheduling"
            case Miss.NO_TOPOLOGY_LEVEL:
                return f'Flavor "{f}" does not contain the requested level'
            case Miss.TOPOLOGY_ONLY:
                return f'Flavor "{f}" supports only TopologyAwareScheduling'
            case Miss.UNTOLERATED_TAINT:
                return f"untolerated taint {self.detail} in flavor {f}"
            case Miss.NODE_AFFINITY:
                return f"flavor {f} doesn't match node affinity"
            case Miss.NO_QUOTA:
                return f"flavor {f} has no quota for {r}"
            case Miss.OVER_CAPACITY:
                return (f"insufficient quota for {r} in flavor {f}, request > maximum capacity "
                        f"({_q(r, self.requested)} > {_q(r, self.available)})")
            case Miss.INSUFFICIENT_QUOTA:
                return f"insufficient unused quota for {r} in flavor {f}, {_q(r, self.shortfall)} more needed"
            case Miss.TOPOLOGY:
                return self.detail or "topology placement failed"
            case Miss.SLICE_FLAVOR:
                return f"could not assign {f} flavor since the original workload is assigned: {self.detail}"


    @property
    def shortfall(self) -> int:
        """How much more of the resource the request needs than the flavor has for it."""
        return self.requested - self.available


@dataclass(frozen=True)
class PodSetMiss:
    """A pod set that got no flavor (or only one needing preemption: ``no_fit`` False), with
    every rejection met on the way."""

    podset: str
    verdicts: tuple[FlavorVerdict, ...]
    no_fit: bool = field(default=True, compare=False)

    def message(self) -> str:
        verdicts = ", ".join(v.message() for v in self.verdicts)
        return f"couldn't assign flavors to pod set {self.podset}: {verdicts}"

    @property
    def topology_failed(self) -> bool:
        return any(v.kind is Miss.TOPOLOGY for v in self.verdicts)


class Pending(Enum):
    """The kind of a pending workload's reason."""

    NO_QUEUE_NAME = "NoQueueName"
    LOCAL_QUEUE_NOT_FOUND = "LocalQueueNotFound"
    LOCAL_QUEUE_STOPPED = "LocalQueueStopped"
    CLUSTER_QUEUE_NOT_FOUND = "ClusterQueueNotFound"
    CLUSTER_QUEUE_INACTIVE = "ClusterQueueInactive"
    CLUSTER_QUEUE_GONE = "ClusterQueueGone"  # left the snapshot between routing and the cycle
    NAMESPACE_MISMATCH = "NamespaceMismatch"
    INVALID_RESOURCES = "InvalidResources"  # a container requests more than its limit
    WAITING_FOR_TURN = "WaitingForTurn"  # queued, not evaluated yet
    DEACTIVATED = "Deactivated"
    REQUEUE_BACKOFF = "RequeueBackoff"
    NO_FIT = "NoFit"  # flavor assignment found no flavor for some pod set
    NO_CANDIDATES = "PreemptionNoCandidates"  # it would fit only by preempting, and no one qualifies
    OVERLAPPING_TARGETS = "OverlappingPreemptionTargets"
    NO_LONGER_FITS = "NoLongerFits"  # another admission of the same cycle took the room
    PREEMPTING = "WaitingForPreemptedWorkloads"
    TOPOLOGY_RESERVATION = "TopologyReservationFailed"  # quota fitted, the TAS hook could not place it
    WAITING_FOR_PODS_READY = "WaitingForPodsReady"  # it fits, admissions wait for admitted pods ready
    ADMISSION_GATED = "AdmissionGated"  # kueue.x-k8s.io/admission-gated-by keeps it out of the queue
    # Requeued behind an equivalent workload's NoFit without an evaluation of its own;
    # ``detail`` is that verdict's tier.
    EQUIVALENT_NO_FIT = "EquivalentNoFit"
    # Its job put it on hold (Kueue's OnHold: a StatefulSet scaled to zero): not queued until
    # the job lifts the hold; ``detail`` is the job's message.
    ON_HOLD = "OnHold"


# The reasons routing writes: a queue that is missing, stopped or inactive. They go stale
# once the queue becomes usable, and the Workload's condition reason is Inadmissible.
QUEUE_PROBLEMS = frozenset({Pending.LOCAL_QUEUE_NOT_FOUND, Pending.LOCAL_QUEUE_STOPPED,
                            Pending.CLUSTER_QUEUE_NOT_FOUND, Pending.CLUSTER_QUEUE_INACTIVE,
                            Pending.CLUSTER_QUEUE_GONE})
ROUTING = QUEUE_PROBLEMS | {Pending.NO_QUEUE_NAME, Pending.REQUEUE_BACKOFF, Pending.ADMISSION_GATED}


@dataclass(frozen=True)
class PendingReason:
    """Why a workload is not admitted now.

    ``queue`` names the LocalQueue or ClusterQueue the kind is about; ``detail`` is the
    inactive queue's cause, the eviction reason (deactivation, backoff) or the TAS hook's
    explanation; ``podsets`` lists the pod sets that got no flavor."""

    kind: Pending
    queue: str = ""
    detail: str = ""
    podsets: tuple[PodSetMiss, ...] = ()

    def message(self) -> str:
        q, d = self.queue, self.detail
        match self.kind:
            case Pending.NO_QUEUE_NAME:
                return "Workload has no queue name"
            case Pending.LOCAL_QUEUE_NOT_FOUND:
                return f"LocalQueue {q} doesn't exist"
            case Pending.LOCAL_QUEUE_STOPPED:
                return f"LocalQueue {q} is inactive"
            case Pending.CLUSTER_QUEUE_NOT_FOUND:
                return f"ClusterQueue {q} doesn't exist"
            case Pending.CLUSTER_QUEUE_GONE:
                return f"ClusterQueue {q} not found"
            case Pending.CLUSTER_QUEUE_INACTIVE:
                return f"ClusterQueue {q} is inactive: {d}"
            case Pending.NAMESPACE_MISMATCH:
                return "Workload namespace doesn't match ClusterQueue selector"
            case Pending.INVALID_RESOURCES:
                return f"resources validation failed: {d}"
            case Pending.WAITING_FOR_TURN:
                return f"Waiting in ClusterQueue {q} for its turn"
            case Pending.DEACTIVATED:
                return f"The workload is deactivated ({d})" if d else "The workload is deactivated"
            case Pending.REQUEUE_BACKOFF:
                return f"Waiting for the requeue backoff after eviction ({d})"
            case Pending.NO_FIT:
                return self._podset_messages() or "no fit"
            case Pending.NO_CANDIDATES:
                return self._podset_messages() or "requires preemption, but no candidates"
            case Pending.OVERLAPPING_TARGETS:
                return "Workload has overlapping preemption targets with another workload"
            case Pending.NO_LONGER_FITS:
                return "Workload no longer fits after processing another workload"
            case Pending.PREEMPTING:
                return "Pending the preemption of workloads"
            case Pending.TOPOLOGY_RESERVATION:
                return d
            case Pending.WAITING_FOR_PODS_READY:
                return "waiting for all admitted workloads to be in PodsReady condition"
            case Pending.ADMISSION_GATED:
                return f"Admission is gated by: {d}"
            case Pending.EQUIVALENT_NO_FIT:
                return "Bypassed scheduling evaluation because an equivalent workload recently failed"
            case Pending.ON_HOLD:
                return d or "The workload is on hold"

    def _podset_messages(self) -> str:
        return "; ".join(p.message() for p in self.podsets)

    @property
    def queue_problem(self) -> bool:
        """The workload cannot even be queued: Kueue's condition reason is Inadmissible."""
        return self.kind in QUEUE_PROBLEMS

    @property
    def topology_failed(self) -> bool:
        return any(p.topology_failed for p in self.podsets)

    def with_topology_detail(self, explanation: str) -> PendingReason:
        """The same reason with the TAS hook's explanation in place of the bare topology verdict."""
        if not explanation:
            return self
        podsets = tuple(
            PodSetMiss(p.podset, tuple(replace(v, detail=explanation) if v.kind is Miss.TOPOLOGY else v
                                       for v in p.verdicts), p.no_fit)
            for p in self.podsets)
        return PendingReason(self.kind, self.queue, self.detail, podsets)


# Kueue's wording of each preemption reason in the Preempted condition message.
PREEMPTION_WORDING = {"InClusterQueue": "prioritization in the ClusterQueue",
                      "InCohortReclamation": "reclamation within the cohort",
                      "InCohortFairSharing": "Fair Sharing within the cohort",
                      "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing"}


@dataclass(frozen=True)
class Preemption:
    """Who preempted a workload and why: the cause behind its latest Preempted eviction."""

    reason: str  # the Preempted condition's reason: InClusterQueue, InCohortReclamation, ...
    preemptor_uid: str
    preemptor_job_uid: str
    preemptor_path: str  # "/root-cohort/.../cq", as Kueue names queues in this message
    preemptee_path: str
    # The preemptor's key ("ns/name") and both priorities when it happened: Kueue's Preempted
    # and PreemptedWorkload events name them (no priority boost here: effective = base).
    preemptor: str = ""
    preemptor_priority: int = 0
    preemptee_priority: int = 0

    def message(self) -> str:
        return (f"Preempted to accommodate a workload (UID: {self.preemptor_uid or 'UNKNOWN'}, JobUID: "
                f"{self.preemptor_job_uid or 'UNKNOWN'}) due to "
                f"{PREEMPTION_WORDING.get(self.reason, 'UNKNOWN')}; preemptor path: {self.preemptor_path}; "
                f"preemptee path: {self.preemptee_path}")

    def priorities(self) -> str:
        """Kueue's suffix of both preemption events."""
        mine, theirs = self.preemptor_priority, self.preemptee_priority
        return (f"; preemptor effective priority: {mine} (base: {mine}, boost: 0); "
                f"preemptee effective priority: {theirs} (base: {theirs}, boost: 0)")


# Kueue's components as its events name them (reportingController): its scheduler, its
# workload controller and its TAS node controller.
SCHEDULER: Final = "kueue-admission"
WORKLOAD_CONTROLLER: Final = "kueue-workload-controller"
TAS_NODE_CONTROLLER: Final = "tas-resource-flavor-controller"


@dataclass(frozen=True)
class EvictionNote:
    """How Kueue words an eviction and which of its components evicts: the Evicted
    condition's message (its event's note too), the event's reporting controller, and for a
    deactivation by Kueue the DeactivationTarget message it gives as the cause."""

    message: str
    reporter: str
    deactivation_detail: str = ""


# The core records a deactivation by Kueue as ``DeactivatedDueTo<Cause>`` (the Evicted
# condition's reason) and one by the user as plain ``Deactivated``, as Kueue v0.19.2 writes
# them (v0.12 wrote ``InactiveWorkload`` for the user's).
DEACTIVATED_BY_KUEUE_PREFIX: Final = "DeactivatedDueTo"
USER_DEACTIVATION: Final = "Deactivated"


def eviction_cause(core_reason: str) -> tuple[str, str]:
    """(reason, underlyingCause) of an eviction the core recorded, as Kueue counts it in
    ``status.schedulingStats.evictions`` and its eviction metrics: every deactivation is
    ``Deactivated``, with the cause apart when Kueue deactivated it."""
    if core_reason.startswith(DEACTIVATED_BY_KUEUE_PREFIX):
        return "Deactivated", core_reason.removeprefix(DEACTIVATED_BY_KUEUE_PREFIX)
    if core_reason == USER_DEACTIVATION:
        return "Deactivated", ""
    return core_reason, ""


# The pending kinds a scheduling cycle decides. Kueue's scheduler records a Pending event
# (Warning) for each such verdict it writes; reasons found while routing (a missing or
# stopped queue), backoffs and bypassed evaluations are the workload controller's, which
# records none, and a preemptor waiting for its victims is not told at all.
SCHEDULER_VERDICTS = frozenset({Pending.NO_FIT, Pending.NO_CANDIDATES, Pending.OVERLAPPING_TARGETS,
                                Pending.NO_LONGER_FITS, Pending.TOPOLOGY_RESERVATION,
                                Pending.NAMESPACE_MISMATCH, Pending.INVALID_RESOURCES,
                                Pending.CLUSTER_QUEUE_GONE})


def checks_message(names: list[str], state: str) -> str:
    """Kueue's buildAdmissionChecksMessage, for checks without a message of their own."""
    noun = "AdmissionChecks" if len(names) > 1 else "AdmissionCheck"
    return f"{noun} in {state} state: " + "; ".join(f'"{n}"' for n in sorted(names))


def multiple_node_failures_message(nodes: list[str]) -> str:
    """Kueue's TAS node controller, evicting a workload a second assigned node of which failed."""
    return "Workload eviction triggered due to multiple TAS assigned node failures, including: " + \
        ", ".join(nodes)


def _q(resource: str, value: int) -> str:
    return str(resource_quantity(resource, value))
