"""What the core decided that its caller acts on, as one value.

The core notes what it changed (a status to write, quota released ...: see
``lifecycle.ChangeLog``); the caller takes it as one frozen :class:`CoreChanges`
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
