"""The immutable picture one scheduling cycle decides on.

A :class:`Snapshot` bundles the structure of the quota tree (shared with the cache, never
mutated during a cycle) with a copy-on-write :class:`~manager.core.quota.Usage` view.
The cycle adds the usage of the entries it admits to the view only; the cache's own
ledger changes when decisions are applied, in a separate step. ``holding`` lists the
workloads that hold quota per ClusterQueue: what a preemption policy picks victims from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .objects import ClusterQueueDef, Flavor
from .quota import QuotaNode, Usage, borrowing_level
from .reasons import PendingReason
from .workload_state import WorkloadRecord


@dataclass
class Snapshot:
    cluster_queues: Mapping[str, ClusterQueueDef]
    nodes: Mapping[str, QuotaNode]  # ClusterQueue name -> its node
    flavors: Mapping[str, Flavor]
    namespaces: Mapping[str, Mapping[str, str]]  # namespace -> labels
    inactive: Mapping[str, PendingReason]  # ClusterQueue name -> why it cannot admit
    usage: Usage
    # ClusterQueue name -> workloads holding quota there (key -> record), for preemption.
    holding: Mapping[str, Mapping[str, WorkloadRecord]] = field(default_factory=dict)
    # Fair-sharing weights by "ClusterQueue/<name>" or "Cohort/<name>" (missing: 1).
    weights: Mapping[str, float] = field(default_factory=dict)
    # Topology name -> its level node labels, top first (missing: not known, not checked).
    topology_levels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Workload key -> record, every workload the cache knows (finding a victim's queue).
    workloads: Mapping[str, WorkloadRecord] = field(default_factory=dict)
    # ClusterQueue name -> a number that changes whenever its ``holding`` does, or a holder's
    # place in victim order (missing: not tracked, so nothing derived from it is kept).
    holding_versions: Mapping[str, int] = field(default_factory=dict)


def level_after_removal(
    snap: Snapshot, cq_name: str, fr: tuple[str, str], value: int, removed: Iterable[WorkloadRecord]
) -> int:
    """The borrowing level ``value`` of ``fr`` would need in ``cq_name`` were the ``removed``
    workloads' usage gone (Kueue's borrowing after preemptions); the snapshot is unchanged."""
    usage = snap.usage.overlay()
    for rec in removed:
        node = snap.nodes.get(rec.cluster_queue or "")
        if node is None:
            continue
        for held, amount in rec.usage.items():
            if amount:
                usage.add(node, held, -amount)
    return borrowing_level(snap.nodes[cq_name], usage, fr, value)[0]
