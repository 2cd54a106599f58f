"""Extension points of the scheduling cycle: preemption and topology-aware placement.

The cycle asks a :class:`PreemptionHook` two questions: during flavor assignment, whether
preemption could make room for an amount on one (flavor, resource) (Kueue's *preemption
oracle*), and, for an entry whose assignment needs preemption, which admitted workloads
to evict. A :class:`TopologyHook` is asked to place each podset whose chosen flavor has
``spec.topologyName``. The defaults answer "no candidates" and "no placement needed",
which makes TAS flavors behave as plain quota.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from .assignment import Assignment, Entry
from .objects import FR, ClusterQueueDef
from .snapshot import Snapshot

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
