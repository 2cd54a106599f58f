"""Extension points of the scheduling cycle: preemption and topology-aware placement.

The cycle asks a :class:`PreemptionHook` two questions: during flavor assignment, whether
preemption could make room for an amount on one (flavor, resource) (Kueue's *preemption
oracle*), and, for an entry whose assignment needs preemption, which admitted workloads
to evict. A :class:`TopologyHook` is asked to place each podset whose chosen flavor has
``spec.topologyName``. The defaults answer "no candidates" and "no placement needed",
which makes TAS flavors behave as plain quota.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from .assignment import Assignment, Entry
from .objects import FR, ClusterQueueDef, Flavor, WorkloadDef
from .snapshot import Snapshot
from .workload_state import WorkloadRecord

NO_CANDIDATES = "NoCandidates"
PREEMPT = "Preempt"
RECLAIM = "Reclaim"


class PreemptionHook(Protocol):
    def oracle(self, snapshot: Snapshot, cq: ClusterQueueDef, fr: FR, amount: int, priority: int) -> str:
        """One of NO_CANDIDATES, PREEMPT (a victim in the same CQ) or RECLAIM (elsewhere)."""
        ...

    def targets(self, snapshot: Snapshot, entry: Entry) -> Sequence[str]:
        """Keys of the admitted workloads to evict so that ``entry`` fits (empty: none)."""
        ...


class TopologyHook(Protocol):
    def place(self, snapshot: Snapshot, entry: Entry, assignment: Assignment,
              podset_index: int, topology_name: str) -> dict[str, Any] | bool | None:
        """A topologyAssignment dict, True when no placement is needed, or None when it fails."""
        ...


@runtime_checkable
class TopologyTracker(Protocol):
    """A TopologyHook that also accounts admitted placements and runs the second pass.

    The engine tells it when a workload reserves quota (it may re-place, or refuse with a
    message), is read as already admitted, or releases quota; asks whether admission must
    wait for a delayed topology assignment; and lets it finish second passes before each
    cycle (outcomes: "Admit", "Evict", "Updated", "Failed", or "" for nothing to do).
    """

    def reserve(self, key: str, workload: WorkloadDef, cq: ClusterQueueDef, flavors: Mapping[str, Flavor],
                assignment: Assignment) -> str: ...

    def adopt(self, key: str, workload: WorkloadDef, assignment: Assignment,
              flavors: Mapping[str, Flavor]) -> None: ...

    def release(self, key: str) -> None: ...

    def holds_admission(self, key: str) -> bool: ...

    def explain(self, key: str) -> str: ...

    def second_pass_keys(self) -> list[str]: ...

    def second_pass(self, rec: WorkloadRecord, cqs: Mapping[str, ClusterQueueDef],
                    flavors: Mapping[str, Flavor]) -> tuple[str, str]: ...


@runtime_checkable
class TopologyPreemption(Protocol):
    """A TopologyHook that can simulate preemption (Kueue's TAS-aware preemption).

    ``place_freeing`` places as :meth:`TopologyHook.place` does but counts the given admitted
    workloads as gone, or every TAS workload when ``freed`` is None (an empty cluster).
    ``hold`` charges, until ``drop_holds``, the placement of a workload whose preemption
    targets were just chosen (computed with the targets gone), so that workloads applied
    after it in the same cycle cannot take that capacity; it returns "" or why it no
    longer fits.
    """

    def place_freeing(self, snapshot: Snapshot, entry: Entry, assignment: Assignment, podset_index: int,
                      freed: frozenset[str] | None) -> dict[str, Any] | bool | None: ...

    def hold(self, key: str, workload: WorkloadDef, cq: ClusterQueueDef, flavors: Mapping[str, Flavor],
             assignment: Assignment, targets: Sequence[str]) -> str: ...

    def drop_holds(self) -> None: ...


class NoPreemption:
    """Until preemption exists, nothing can be evicted to make room."""

    def oracle(self, snapshot: Snapshot, cq: ClusterQueueDef, fr: FR, amount: int, priority: int) -> str:
        return NO_CANDIDATES

    def targets(self, snapshot: Snapshot, entry: Entry) -> Sequence[str]:
        return ()


class QuotaOnlyTopology:
    """Treats topology flavors as plain quota (no placement computed)."""

    def place(self, snapshot: Snapshot, entry: Entry, assignment: Assignment,
              podset_index: int, topology_name: str) -> dict[str, Any] | bool | None:
        return True
