"""What the core knows about one Workload beyond its spec: the status it would write.

Statuses follow Kueue's derived status: Finished, Admitted (QuotaReserved and every
admission check Ready), QuotaReserved (quota held, checks pending), Pending.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .assignment import Assignment
from .objects import FR, WorkloadDef
from .reasons import EvictionNote, PendingReason, Preemption

PENDING = "Pending"
QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
FINISHED = "Finished"


@dataclass(frozen=True)
class Stopping:
    """An eviction waiting for the workload's job to stop; what to do once it has."""

    reason: str
    backoff_until: float | None = None  # requeue then, not at once
    # The eviction's reason when it (or a later deactivation) ends in deactivation.
    deactivated_by: str | None = None


@dataclass
class WorkloadRecord:
    wl: WorkloadDef
    priority: int
    queue_ts: float  # queue-order timestamp
    shape: int = 0  # queues.scheduling_shape: equal for workloads flavor assignment cannot tell apart
    status: str = PENDING
    cluster_queue: str | None = None  # the queue it waits in, or the one holding its quota
    assignment: Assignment | None = None
    usage: dict[FR, int] = field(default_factory=dict)
    checks: dict[str, str] = field(default_factory=dict)
    pending: PendingReason | None = None  # why it waits (status PENDING); None otherwise
    evictions: list[str] = field(default_factory=list)
    requeue_count: int = 0
    requeue_at: float | None = None
    deactivated: bool = False
    # Deactivated by this core (a rejected check, too many requeues): ``spec.active: false``
    # is still to be written, so a copy read meanwhile saying active is not a reactivation.
    deactivation_unwritten: bool = False
    reserved_at: float | None = None
    # Order of quota reservations in this core: Kueue's reservation times are distinct even
    # within one cycle, while our clock stands still during a pass; this breaks those ties.
    reserved_seq: int = 0
    admitted_at: float | None = None
    # When the Admitted condition turned True (as stored, for one read back admitted): what
    # the maximum execution time counts from. None while not admitted.
    admitted_since: float | None = None
    # (generation, time) of the latest maximum execution time timer set; None when none is.
    execution_timer: tuple[int, float] | None = None
    pods_ready: bool = False
    generation: int = 0  # bumped on every transition; stale timers compare it
    preempting: bool = False  # chose victims and waits for their quota (sorts first in its queue)
    # Reason of the Preempted condition of each "Preempted" eviction, in order.
    preemption_reasons: list[str] = field(default_factory=list)
    preemption: Preemption | None = None  # the cause of the latest Preempted eviction
    eviction_note: EvictionNote | None = None  # how Kueue words the latest eviction
    # Evicted, with quota still held until its job has stopped (Kueue's Evicted=True while
    # QuotaReserved=True); None otherwise.
    stopping: Stopping | None = None
    # Holds quota that no write has carried out of the core yet (see CoreConfig.withdraw_unpublished).
    unpublished: bool = False
    # A scheduling cycle evaluated it and left it pending: Kueue's scheduler writes the pod
    # sets' total requests (status.resourceRequests) then, and they stay until a reservation.
    requests_reported: bool = False
    # The elastic job's slice this reservation took over (finished when it was made): its
    # pods run on, so the reservation is never taken back unseen, only evicted.
    took_over: str | None = None
    # (reason, message) of a Finished condition the core decided itself (a replaced slice).
    finished_as: tuple[str, str] | None = None
    # Put on hold by its job (Kueue's OnHold: a StatefulSet scaled to zero), with the job's
    # message: no quota, not queued, until the job lifts it. None otherwise.
    on_hold: str | None = None

    @property
    def reason(self) -> str:
        """The pending reason as Kueue's condition message (empty when there is none)."""
        return self.pending.message() if self.pending is not None else ""

    @property
    def holds_quota(self) -> bool:
        return self.status in (QUOTA_RESERVED, ADMITTED)

    @property
    def key(self) -> str:
        return self.wl.key


class WorkloadView(Protocol):
    """A :class:`WorkloadRecord` as readers outside the core see it (``QueueingCore.workload``):
    read only. Its fields mean what the record's say."""

    @property
    def wl(self) -> WorkloadDef: ...

    @property
    def key(self) -> str: ...

    @property
    def priority(self) -> int: ...

    @property
    def queue_ts(self) -> float: ...

    @property
    def status(self) -> str: ...

    @property
    def cluster_queue(self) -> str | None: ...

    @property
    def assignment(self) -> Assignment | None: ...

    @property
    def usage(self) -> Mapping[FR, int]: ...

    @property
    def checks(self) -> Mapping[str, str]: ...

    @property
    def pending(self) -> PendingReason | None: ...

    @property
    def reason(self) -> str: ...

    @property
    def holds_quota(self) -> bool: ...

    @property
    def evictions(self) -> Sequence[str]: ...

    @property
    def requeue_count(self) -> int: ...

    @property
    def requeue_at(self) -> float | None: ...

    @property
    def deactivated(self) -> bool: ...

    @property
    def deactivation_unwritten(self) -> bool: ...

    @property
    def reserved_at(self) -> float | None: ...

    @property
    def reserved_seq(self) -> int: ...

    @property
    def admitted_at(self) -> float | None: ...

    @property
    def admitted_since(self) -> float | None: ...

    @property
    def pods_ready(self) -> bool: ...

    @property
    def generation(self) -> int: ...

    @property
    def preempting(self) -> bool: ...

    @property
    def preemption_reasons(self) -> Sequence[str]: ...

    @property
    def preemption(self) -> Preemption | None: ...

    @property
    def eviction_note(self) -> EvictionNote | None: ...

    @property
    def stopping(self) -> Stopping | None: ...

    @property
    def unpublished(self) -> bool: ...

    @property
    def requests_reported(self) -> bool: ...

    @property
    def took_over(self) -> str | None: ...

    @property
    def finished_as(self) -> tuple[str, str] | None: ...

    @property
    def on_hold(self) -> str | None: ...
