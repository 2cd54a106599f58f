"""filter and prioritize: managed pods go to assigned leaves with room; others pass."""

from __future__ import annotations

import logging

import pytest

from .conftest import Extender
from .memory_cluster import MemoryCluster
from .scenario import (
    ALL_NODES,
    B2,
    N11,
    N12,
    N21,
    N22,
    NAMESPACE,
    WORKLOAD,
    bind_pod,
    names_args,
    plain_pod,
    pod,
)


async def test_full_domain_is_filtered_out(extender: Extender, cluster: MemoryCluster) -> None:
    bind_pod(cluster, 0, N11)
    bind_pod(cluster, 1, N11)
    _, body = await extender.post("filter", names_args(pod(2)))
    assert body["NodeNames"] == [N12, N21]
    assert "full" in body["FailedAndUnresolvableNodes"][N11]


async def test_terminated_pods_free_their_slot(extender: Extender, cluster: MemoryCluster) -> None:
    bind_pod(cluster, 0, N11)
    bind_pod(cluster, 1, N11)
    cluster.pods[(NAMESPACE, "sample-job-0-mz7kq")]["status"]["phase"] = "Failed"
    _, body = await extender.post("filter", names_args(pod(2)))
    assert body["NodeNames"] == [N11, N12, N21]


async def test_unmanaged_pod_passes_untouched(extender: Extender, cluster: MemoryCluster) -> None:
    _, body = await extender.post("filter", names_args(plain_pod("web-1")))
    assert body["NodeNames"] == ALL_NODES
    assert body["FailedAndUnresolvableNodes"] == {}
    assert "get_workload" not in cluster.calls


async def test_unknown_workload_passes_with_a_log_line(
    extender: Extender, cluster: MemoryCluster, caplog: pytest.LogCaptureFixture
) -> None:
    del cluster.workloads[(NAMESPACE, WORKLOAD)]
    with caplog.at_level(logging.INFO, logger="pykueue.extender"):
        _, body = await extender.post("filter", names_args(pod(2)))
    assert body["NodeNames"] == ALL_NODES
    assert any("unknown workload" in r.getMessage() for r in caplog.records)


async def test_podset_without_topology_assignment_passes(extender: Extender, cluster: MemoryCluster) -> None:
    cluster.touch_workload(
        NAMESPACE, WORKLOAD,
        lambda wl: wl["status"]["admission"]["podSetAssignments"][0].pop("topologyAssignment"),
    )
    _, body = await extender.post("filter", names_args(pod(2)))
    assert body["NodeNames"] == ALL_NODES


async def test_undecodable_assignment_fails_closed(extender: Extender, cluster: MemoryCluster) -> None:
    def corrupt(wl: dict[str, object]) -> None:
        ta = wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]  # type: ignore[index]
        ta["slices"][0]["podCounts"] = {"individual": [1]}

    cluster.touch_workload(NAMESPACE, WORKLOAD, corrupt)
    _, body = await extender.post("filter", names_args(pod(2)))
    assert body["NodeNames"] == []
    assert "invalid topologyAssignment" in body["FailedAndUnresolvableNodes"][N11]


async def test_node_unknown_to_the_cluster_is_refused(extender: Extender) -> None:
    _, body = await extender.post("filter", names_args(pod(2), [N11, "ghost-node"]))
    assert body["NodeNames"] == [N11]
    assert "unknown" in body["FailedAndUnresolvableNodes"]["ghost-node"]


async def test_prioritize_prefers_the_domain_with_most_remaining(
    extender: Extender, cluster: MemoryCluster
) -> None:
    _, body = await extender.post("prioritize", names_args(pod(2)))
    scores = {e["Host"]: e["Score"] for e in body}
    assert scores[N11] == 10  # 2 slots left
    assert 0 < scores[N12] < scores[N11] and scores[N12] == scores[N21]
    assert scores[N22] == 0 and scores[B2] == 0
    bind_pod(cluster, 0, N11)
    _, body = await extender.post("prioritize", names_args(pod(2)))
    scores = {e["Host"]: e["Score"] for e in body}
    assert scores[N11] == scores[N12] == scores[N21] == 10


async def test_prioritize_is_neutral_for_unmanaged_pods(extender: Extender) -> None:
    _, body = await extender.post("prioritize", names_args(plain_pod("web-1")))
    assert {e["Score"] for e in body} == {0}


async def test_queued_pod_without_tas_marker_passes(extender: Extender, cluster: MemoryCluster) -> None:
    p = pod(2)
    del p["metadata"]["labels"]["kueue.x-k8s.io/tas"]
    del p["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"]
    _, body = await extender.post("filter", names_args(p))
    assert body["NodeNames"] == ALL_NODES
    assert "get_workload" not in cluster.calls


async def test_tas_annotation_alone_marks_a_managed_pod(extender: Extender) -> None:
    p = pod(2)
    del p["metadata"]["labels"]["kueue.x-k8s.io/tas"]  # Kueue >= 0.14 dropped the label
    _, body = await extender.post("filter", names_args(p))
    assert body["NodeNames"] == [N11, N12, N21]
