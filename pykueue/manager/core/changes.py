"""What the core decided that its caller acts on, collected between two takes.

Every part of the core notes here what it changed (a status to write, quota released, a job
to stop ...); the caller takes it as one frozen :class:`CoreChanges` value
(``QueueingCore.take_changes``), the job reconciler the workloads to stop apart
(``QueueingCore.take_stopping``), after each cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CoreChanges:
    """What changed since the last take."""

    # Workloads whose status may differ from the last write (what to write back).
    written: frozenset[str] = frozenset()
    # Workloads whose quota was released (tracked from the first take, or from the start
    # when the core was made with ``track_releases``) ...
    released: frozenset[str] = frozenset()
    # ... and those of them whose only release was a withdrawal: a reservation no write
    # carried out (see ``CoreConfig.withdraw_unpublished``).
    withdrawn: frozenset[str] = frozenset()
    # Workloads whose PodsReady changed (the metrics feed counts those transitions).
    pods_ready: frozenset[str] = frozenset()
    # Per ClusterQueue: reservations taken back unpublished, slices replaced by scaled-up ones.
    withdrawals: Mapping[str, int] = field(default_factory=dict)
    replaced_slices: Mapping[str, int] = field(default_factory=dict)


class ChangeLog:
    """The core's own notes of what changed, until they are taken (mutable, internal)."""

    def __init__(self, track_releases: bool = False) -> None:
        self.written: set[str] = set()
        self.pods_ready: set[str] = set()
        # None: releases are not tracked (only a caller that orders its writes by them asks).
        self.released: set[str] | None = set() if track_releases else None
        # Of the released, those whose only release since the last take took back an
        # unpublished reservation: nothing of it was ever sent, so no write carries its release.
        self.withdrawn: set[str] = set()
        # Withdrawals per ClusterQueue: each a preemption target no API reader saw admitted.
        self.withdrawals: dict[str, int] = {}
        # Workloads that started stopping (evicted, quota held) since the last take_stopping.
        self.stopping: set[str] = set()
        self.replaced_slices: dict[str, int] = {}

    def released_quota(self, key: str) -> None:
        if self.released is not None:
            self.released.add(key)
            self.withdrawn.discard(key)

    def first_release(self, key: str) -> bool:
        """Whether ``key`` is tracked and was not released since the last take."""
        return self.released is not None and key not in self.released

    def withdrew(self, cluster_queue: str) -> None:
        self.withdrawals[cluster_queue] = self.withdrawals.get(cluster_queue, 0) + 1

    def replaced_slice(self, cluster_queue: str) -> None:
        self.replaced_slices[cluster_queue] = self.replaced_slices.get(cluster_queue, 0) + 1

    def stored_elsewhere(self, key: str) -> None:
        """Another writer stored the workload's latest state: nothing to write, nor to wait for."""
        self.written.discard(key)
        if self.released is not None:
            self.released.discard(key)

    def take(self, alive: Mapping[str, object]) -> CoreChanges:
        """Everything but ``stopping``, of the workloads still ``alive`` (the counts and
        PodsReady changes as noted); starts tracking releases."""
        written, self.written = self.written, set()
        released, self.released = self.released or set(), set()
        withdrawn, self.withdrawn = self.withdrawn, set()
        pods_ready, self.pods_ready = self.pods_ready, set()
        withdrawals, self.withdrawals = self.withdrawals, {}
        replaced, self.replaced_slices = self.replaced_slices, {}
        return CoreChanges(frozenset(k for k in written if k in alive),
                           frozenset(k for k in released if k in alive),
                           frozenset(k for k in withdrawn if k in alive),
                           frozenset(pods_ready), withdrawals, replaced)

    def take_stopping(self) -> set[str]:
        out, self.stopping = self.stopping, set()
        return out
