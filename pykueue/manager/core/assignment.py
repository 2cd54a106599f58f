"""Values a scheduling cycle produces: flavor assignments, entries and decisions.

Modes follow Kueue's granular order: NO_FIT < NO_CANDIDATES < PREEMPT < RECLAIM < FIT.
Externally the middle three are "Preempt" (the entry could fit if someone were evicted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from .objects import FR, WorkloadDef
from .reasons import FlavorVerdict, Pending, PendingReason, PodSetMiss


class Mode(IntEnum):
    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4

    @property
    def needs_preemption(self) -> bool:
        return Mode.NO_CANDIDATES <= self <= Mode.RECLAIM


@dataclass
class PodSetAssignment:
    name: str
    count: int
    flavors: dict[str, str]  # resource -> flavor
    usage: dict[str, int]  # resource -> amount for the whole count
    mode: Mode = Mode.FIT
    reasons: list[FlavorVerdict] = field(default_factory=list)
    topology_assignment: dict[str, Any] | None = None


@dataclass
class Assignment:
    podsets: list[PodSetAssignment]
    mode: Mode
    borrowing: int  # 0 = within nominal quota; else height of the subtree lent from
    usage: dict[FR, int]  # total per (flavor, resource)
    misses: tuple[PodSetMiss, ...] = ()  # pod sets that got no flavor, and why
    preempt_frs: frozenset[FR] = frozenset()
    # Some TAS pod set needs node capacity that only preemption can free, so the targets
    # must also make its topology placement fit (Kueue's TAS-aware workloadFits).
    topology_preemption: bool = False
    # Kueue's LastTriedFlavorIdx: per pod set (up to the first that got no flavor), for each
    # resource given a flavor, the index of the last flavor the scan looked at (-1: it went
    # through them all). A later cycle resumes the scan after it (``FlavorAssigner.assign``).
    tried: tuple[dict[str, int], ...] = ()

    @property
    def pending_flavors(self) -> bool:
        """The scan stopped before the last flavor of some group: there are more to try."""
        return any(i != -1 for ps in self.tried for i in ps.values())


@dataclass
class Entry:
    """A head of a ClusterQueue in one cycle."""

    workload: WorkloadDef
    cluster_queue: str
    priority: int
    timestamp: float
    assignment: Assignment | None = None
    targets: tuple[str, ...] = ()
    inadmissible: PendingReason | None = None  # set when rejected before flavor assignment
    requeue_reason: str = ""
    target_reasons: dict[str, str] = field(default_factory=dict)  # target -> Preempted condition reason
    # Waiting for victims it chose in an earlier cycle, under Kueue's PrioritizePreemptorWorkloads
    # (off: always False): it goes first in the cycle and holds its room with no candidates.
    preempting: bool = False
    # Set during nomination when the assignment needs topology-aware preemption: whether the
    # TAS pod sets fit once the given admitted workloads are gone.
    fits_topology: Callable[[frozenset[str]], bool] | None = field(default=None, repr=False, compare=False)
    # An elastic job's scaled-up slice: the admitted slice whose quota it takes over (cleared
    # in nomination when that one holds none in the entry's queue: then it asks for all).
    replaces: str | None = None
    # The flavor scan progress of an earlier cycle to resume from (Assignment.tried).
    resume: tuple[dict[str, int], ...] | None = None


class Outcome:
    ADMIT = "Admit"  # quota reserved
    PREEMPT = "Preempt"  # victims chosen; the entry waits for them
    PENDING = "Pending"  # not admitted in this cycle


@dataclass(frozen=True)
class Decision:
    key: str
    cluster_queue: str
    outcome: str
    pending: PendingReason | None = None  # why it is not admitted (PENDING, PREEMPT)
    assignment: Assignment | None = None
    targets: tuple[str, ...] = ()
    immediate: bool = False  # requeue into the heap rather than the inadmissible set
    # Kueue's NoFit / PreemptionNoCandidates: every workload of the same shape would get
    # the same verdict on this quota (see queues.PendingQueue.park_shape).
    no_fit: bool = False
    reason: str = "Pending"
    # Target key -> reason of its Preempted condition (InClusterQueue, InCohortReclamation, ...).
    target_reasons: dict[str, str] = field(default_factory=dict, compare=False)
    # The slice this admission replaces (finished as it is applied).
    replaces: str | None = None


@dataclass
class CycleResult:
    decisions: list[Decision]
    # Followers (see ``Scheduler.schedule``) popped but not admitted: (key, ClusterQueue), put
    # back in their queues unchanged, as if never popped.
    untried: list[tuple[str, str]] = field(default_factory=list)

    @property
    def admitted(self) -> list[Decision]:
        return [d for d in self.decisions if d.outcome == Outcome.ADMIT]

    @property
    def preemption_skips(self) -> dict[str, int]:
        """Per ClusterQueue, its entries that had preemption targets but were skipped because
        an entry before them in the cycle took the same victims or the room (Kueue's
        ``kueue_admission_cycle_preemption_skips``); queues without such an entry are absent."""
        skips: dict[str, int] = {}
        for d in self.decisions:
            kind = d.pending.kind if d.pending is not None else None
            if kind is Pending.OVERLAPPING_TARGETS or (
                    kind is Pending.NO_LONGER_FITS and d.assignment is not None
                    and d.assignment.mode.needs_preemption):
                skips[d.cluster_queue] = skips.get(d.cluster_queue, 0) + 1
        return skips
