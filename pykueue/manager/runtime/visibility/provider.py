"""What the visibility API reads: pending workloads of a ClusterQueue, in scheduling order.

The queue manager owns the queues; the visibility server only needs a consistent snapshot
of one ClusterQueue and the LocalQueue -> ClusterQueue mapping, so the dependency is a
two-method Protocol and the server never imports the scheduling core.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str


@dataclass(frozen=True)
class PendingWorkloadInfo:
    """One pending Workload as the queue manager sees it."""

    name: str
    namespace: str
    local_queue: str
    priority: int
    # RFC 3339, as stored in the Workload's metadata.
    creation_timestamp: str
    owner_references: tuple[OwnerReference, ...] = field(default=())
    # Why it waits: the QuotaReserved=False reason (a KEP-10852 tier) and message. Kueue's
    # PendingWorkload has no such fields; pykueue adds them (clients ignore unknown fields).
    reason: str = ""
    message: str = ""


class PendingWorkloadsProvider(Protocol):
    def cluster_queue_snapshot(self, cluster_queue: str) -> Sequence[PendingWorkloadInfo] | None:
        """All pending workloads of the ClusterQueue in scheduling order, or None if unknown."""
        ...

    def local_queue_exists(self, namespace: str, local_queue: str) -> str | None:
        """The ClusterQueue the LocalQueue points at, or None if the LocalQueue is unknown."""
        ...
