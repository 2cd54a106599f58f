"""The pure paging rules: defaults, clamping, positions, and how the LocalQueue scan counts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pykueue.manager.runtime.visibility.pagination import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    Page,
    cluster_queue_page,
    local_queue_page,
    page_from_query,
)
from pykueue.manager.runtime.visibility.provider import PendingWorkloadInfo


def wl(name: str, lq: str, ns: str = "ns") -> PendingWorkloadInfo:
    return PendingWorkloadInfo(name=name, namespace=ns, local_queue=lq, priority=0,
                               creation_timestamp="2026-01-01T00:00:00Z")


QUEUE = [wl("a1", "a"), wl("b1", "b"), wl("a2", "a"), wl("a3", "a"), wl("b2", "b"), wl("x1", "a", ns="other")]


def test_missing_or_zero_limit_means_the_default() -> None:
    assert page_from_query(None, None) == Page(DEFAULT_LIMIT, 0)
    assert page_from_query(0, 0) == Page(DEFAULT_LIMIT, 0)


def test_limit_and_offset_are_clamped() -> None:
    assert page_from_query(-5, -7) == Page(0, 0)
    assert page_from_query(10**15, 3) == Page(MAX_LIMIT, 3)
    assert page_from_query(MAX_LIMIT, 0) == Page(MAX_LIMIT, 0)


def test_cluster_queue_positions_count_skipped_items() -> None:
    page = cluster_queue_page(QUEUE, Page(limit=2, offset=2))
    assert [(p.workload.name, p.position_in_cluster_queue, p.position_in_local_queue) for p in page] == [
        ("a2", 2, 1), ("a3", 3, 2)]


def test_cluster_queue_keeps_same_named_queues_of_other_namespaces_apart() -> None:
    page = cluster_queue_page(QUEUE, Page(limit=10, offset=0))
    assert [(p.workload.name, p.position_in_local_queue) for p in page][-1] == ("x1", 0)


def test_cluster_queue_offset_past_the_end_is_empty() -> None:
    assert cluster_queue_page(QUEUE, Page(limit=10, offset=len(QUEUE))) == []


def test_local_queue_offset_counts_only_its_own_workloads() -> None:
    page = local_queue_page(QUEUE, "ns", "a", Page(limit=1, offset=1))
    assert [(p.workload.name, p.position_in_cluster_queue, p.position_in_local_queue) for p in page] == [
        ("a2", 2, 1)]


def test_local_queue_filters_by_namespace_and_name() -> None:
    assert [p.workload.name for p in local_queue_page(QUEUE, "other", "a", Page(10, 0))] == ["x1"]
    assert local_queue_page(QUEUE, "ns", "missing", Page(10, 0)) == []


def test_zero_limit_page_is_empty() -> None:
    assert cluster_queue_page(QUEUE, Page(0, 0)) == []
    assert local_queue_page(QUEUE, "ns", "a", Page(0, 0)) == []


queues = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["n1", "n2"])), max_size=40)


@given(queues, st.integers(0, 50), st.integers(0, 50))
def test_pages_concatenate_to_the_whole_queue(entries: list[tuple[str, str]], limit: int,
                                              offset: int) -> None:
    snapshot = [wl(f"w{i}", lq, ns) for i, (lq, ns) in enumerate(entries)]
    whole = cluster_queue_page(snapshot, Page(len(snapshot), 0))
    assert cluster_queue_page(snapshot, Page(limit, offset)) == whole[offset:offset + limit]
    for lq, ns in set(entries):
        whole_lq = local_queue_page(snapshot, ns, lq, Page(len(snapshot), 0))
        assert local_queue_page(snapshot, ns, lq, Page(limit, offset)) == whole_lq[offset:offset + limit]
        # Local positions are dense and in cluster-queue order.
        assert [p.position_in_local_queue for p in whole_lq] == list(range(len(whole_lq)))
        by_name = {p.workload.name: p.position_in_local_queue for p in whole}
        assert all(by_name[p.workload.name] == p.position_in_local_queue for p in whole_lq)
