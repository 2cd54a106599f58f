"""Pure paging and position rules of Kueue's pending-workloads endpoints.

Kept free of I/O so the rules (defaults, clamping, how the LocalQueue endpoint scans the
ClusterQueue) are specified by unit tests, and the HTTP layer only parses and serialises.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pykueue.manager.runtime.visibility.provider import PendingWorkloadInfo

DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000


@dataclass(frozen=True)
class Page:
    limit: int
    offset: int


@dataclass(frozen=True)
class PositionedWorkload:
    workload: PendingWorkloadInfo
    position_in_cluster_queue: int
    position_in_local_queue: int


def page_from_query(limit: int | None, offset: int | None) -> Page:
    """Kueue's defaulting: a missing or zero limit means the default; both are clamped.

    The upper clamp bounds the response size (Kueue: ~1.4 kB per item); a negative limit
    asks for nothing and a negative offset starts at the head of the queue.
    """
    effective_limit = limit if limit else DEFAULT_LIMIT
    return Page(limit=min(max(effective_limit, 0), MAX_LIMIT), offset=max(offset or 0, 0))


def cluster_queue_page(snapshot: Sequence[PendingWorkloadInfo], page: Page) -> list[PositionedWorkload]:
    """Items ``offset .. offset+limit`` of the ClusterQueue.

    Positions in each LocalQueue count every earlier workload of that queue, including the
    skipped ones, so only the first ``offset+limit`` items are walked.
    """
    seen_in_local_queue: dict[tuple[str, str], int] = {}
    result: list[PositionedWorkload] = []
    for index, workload in enumerate(snapshot[: page.offset + page.limit]):
        key = (workload.namespace, workload.local_queue)
        position_in_local_queue = seen_in_local_queue.get(key, 0)
        seen_in_local_queue[key] = position_in_local_queue + 1
        if index >= page.offset:
            result.append(PositionedWorkload(workload, index, position_in_local_queue))
    return result


def local_queue_page(snapshot: Sequence[PendingWorkloadInfo], namespace: str, local_queue: str,
                     page: Page) -> list[PositionedWorkload]:
    """The LocalQueue's workloads ``offset .. offset+limit``, scanning its ClusterQueue in order.

    ``offset`` counts workloads of this LocalQueue only; the ClusterQueue position stays the
    global index. Matching on namespace as well as name keeps same-named queues of other
    namespaces that share the ClusterQueue out of the answer.
    """
    result: list[PositionedWorkload] = []
    matched = 0
    for index, workload in enumerate(snapshot):
        if len(result) >= page.limit:
            break
        if workload.namespace != namespace or workload.local_queue != local_queue:
            continue
        if matched >= page.offset:
            result.append(PositionedWorkload(workload, index, matched))
        matched += 1
    return result
