"""The queue manager's pending workloads as the visibility API reads them.

An adapter from the core's records to :class:`PendingWorkloadsProvider`, so the visibility
server stays ignorant of the core. Order is Kueue's queue order (higher priority first,
then earlier queue timestamp, then the key), over every pending workload of the
ClusterQueue, parked ones included, the way Kueue's ClusterQueue snapshot lists them.
It runs on every replica: followers keep the same queues from their informers.
"""

from __future__ import annotations

from typing import Any

from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.objects import format_time
from pykueue.manager.core.tiers import record_tier
from pykueue.manager.core.workload_state import PENDING, WorkloadView
from pykueue.manager.runtime.visibility.provider import OwnerReference, PendingWorkloadInfo


def _owners(source: dict[str, Any]) -> tuple[OwnerReference, ...]:
    refs = (source.get("metadata") or {}).get("ownerReferences") or ()
    return tuple(OwnerReference(str(r.get("apiVersion", "")), str(r.get("kind", "")), str(r.get("name", "")),
                                str(r.get("uid", ""))) for r in refs if isinstance(r, dict))


def pending_info(rec: WorkloadView) -> PendingWorkloadInfo:
    meta = rec.wl.source.get("metadata") or {}
    created = meta.get("creationTimestamp") or format_time(rec.wl.created)
    return PendingWorkloadInfo(rec.wl.name, rec.wl.namespace, rec.wl.queue_name, rec.priority, str(created),
                               _owners(rec.wl.source), reason=record_tier(rec).value, message=rec.reason)


class CorePendingWorkloads:
    """:class:`PendingWorkloadsProvider` over a :class:`QueueingCore`."""

    def __init__(self, core: QueueingCore) -> None:
        self.core = core

    def cluster_queue_snapshot(self, cluster_queue: str) -> list[PendingWorkloadInfo] | None:
        if self.core.cluster_queue(cluster_queue) is None:
            return None
        pending = [r for r in self.core.all_workloads().values()
                   if r.status == PENDING and not r.deactivated and r.cluster_queue == cluster_queue]
        pending.sort(key=lambda r: (-r.priority, r.queue_ts, r.key))
        return [pending_info(r) for r in pending]

    def local_queue_exists(self, namespace: str, local_queue: str) -> str | None:
        lq = self.core.local_queue(f"{namespace}/{local_queue}")
        return None if lq is None else lq.cluster_queue
