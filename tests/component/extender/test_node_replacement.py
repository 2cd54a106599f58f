"""Node failure: a replacement pod's bind moves the failed node's pods to planned nodes.

The plan is the queue manager's rule (Kueue's BestFit inside the required block, capacity
from the flavor's nodes minus every admitted assignment). In the scenario each node has
4 cpu and each pod needs 1: with N21 failed, block-1 offers N11 (2 free), N12 (3 free)
and N22 (4 free, the whole rack-2 being least loaded) — which one wins is the rule's
business; these tests read the plan off the first answer where they need it.
"""

from __future__ import annotations

from typing import Any

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
    assignment_of,
    bind_pod,
    binding_args,
    names_args,
    pod,
)


def mark_unhealthy(cluster: MemoryCluster, node_name: str) -> None:
    node = cluster.nodes[node_name]
    for cond in node["status"]["conditions"]:
        if cond["type"] == "Ready":
            cond["status"] = "Unknown"
    cluster.touch_workload(
        NAMESPACE, WORKLOAD, lambda wl: wl["status"].__setitem__("unhealthyNodes", [{"name": node_name}])
    )


@pytest.fixture
def n21_failed(cluster: MemoryCluster) -> MemoryCluster:
    """Pods 0,1 run on N11 and 2 on N12; N21 died and its pod 3 was recreated unbound."""
    bind_pod(cluster, 0, N11)
    bind_pod(cluster, 1, N11)
    bind_pod(cluster, 2, N12)
    mark_unhealthy(cluster, N21)
    return cluster


def workload(cluster: MemoryCluster) -> dict[str, Any]:
    return cluster.workloads[(NAMESPACE, WORKLOAD)]


async def planned_target(extender: Extender, index: int) -> list[str]:
    _, body = await extender.post("filter", names_args(pod(index)))
    names: list[str] = body["NodeNames"]
    return names


async def test_filter_offers_only_planned_nodes_of_the_required_block(
    extender: Extender, n21_failed: MemoryCluster
) -> None:
    _, body = await extender.post("filter", names_args(pod(3)))
    (target,) = body["NodeNames"]
    assert target in (N11, N12, N22)  # block-1, never the failed node or block-2
    assert set(body["FailedAndUnresolvableNodes"]) == set(ALL_NODES) - {target}


async def test_bind_rewrites_the_assignment_clears_the_marker_and_binds(
    extender: Extender, n21_failed: MemoryCluster
) -> None:
    (target,) = await planned_target(extender, 3)
    assert (await extender.post("bind", binding_args(3, target)))[1] == {"Error": ""}
    expected = {N11: 2, N12: 1}
    expected[target] = expected.get(target, 0) + 1
    assert assignment_of(n21_failed) == expected
    assert "unhealthyNodes" not in workload(n21_failed)["status"]
    assert n21_failed.bindings == [(NAMESPACE, "sample-job-3-mz7kq", target)]
    # The workload is not requeued: admission and its conditions are untouched.
    conditions = {c["type"]: c["status"] for c in workload(n21_failed)["status"]["conditions"]}
    assert conditions == {"QuotaReserved": "True", "Admitted": "True"}


async def test_rewrite_is_persisted_before_the_binding(
    extender: Extender, n21_failed: MemoryCluster
) -> None:
    (target,) = await planned_target(extender, 3)
    await extender.post("bind", binding_args(3, target))
    calls = [c for c in n21_failed.calls if c in ("update_workload_status", "post_binding")]
    assert calls == ["update_workload_status", "post_binding"]


async def test_bind_off_the_plan_is_refused(extender: Extender, n21_failed: MemoryCluster) -> None:
    (target,) = await planned_target(extender, 3)
    for other in (B2, *(n for n in (N11, N12, N22) if n != target)):
        _, body = await extender.post("bind", binding_args(3, other))
        assert f"to be replaced by {target}" in body["Error"], other
    assert n21_failed.status_updates == 0 and n21_failed.bindings == []
    assert assignment_of(n21_failed) == {N11: 2, N12: 1, N21: 1}


async def test_no_replacement_while_a_pod_still_runs_on_the_failed_node(
    extender: Extender, cluster: MemoryCluster
) -> None:
    bind_pod(cluster, 0, N11)
    bind_pod(cluster, 1, N11)
    bind_pod(cluster, 3, N21)
    mark_unhealthy(cluster, N21)
    assert (await extender.post("filter", names_args(pod(2), [N22, B2])))[1]["NodeNames"] == []
    for node_name in (N22, B2):
        _, body = await extender.post("bind", binding_args(2, node_name))
        assert body["Error"]
    assert cluster.status_updates == 0 and cluster.bindings == []


async def test_conflicting_write_is_reread_not_overwritten(
    extender: Extender, n21_failed: MemoryCluster
) -> None:
    (target,) = await planned_target(extender, 3)

    def concurrent_writer(c: MemoryCluster) -> None:
        c.touch_workload(
            NAMESPACE, WORKLOAD,
            lambda wl: wl["status"]["conditions"].append(
                {"type": "PodsReady", "status": "False", "reason": "WaitForRecovery", "message": "",
                 "lastTransitionTime": "2026-11-20T09:20:00Z"}
            ),
        )

    n21_failed.before_status_update = concurrent_writer
    assert (await extender.post("bind", binding_args(3, target)))[1] == {"Error": ""}
    assert n21_failed.calls.count("update_workload_status") == 2  # one 409, one success
    assert n21_failed.status_updates == 1
    stored = workload(n21_failed)["status"]
    assert "PodsReady" in {c["type"] for c in stored["conditions"]}  # the other write survived
    assert "unhealthyNodes" not in stored
    assert N21 not in assignment_of(n21_failed)


async def test_a_failed_node_with_two_pods_is_replaced_at_once(
    extender: Extender, cluster: MemoryCluster
) -> None:
    for i in (0, 1):
        bind_pod(cluster, i, N11)
        cluster.pods[(NAMESPACE, f"sample-job-{i}-mz7kq")]["status"]["phase"] = "Failed"
    bind_pod(cluster, 2, N12)
    bind_pod(cluster, 3, N21)
    mark_unhealthy(cluster, N11)
    for i in (4, 5):
        cluster.add_pod(pod(i))
    targets = await planned_target(extender, 4)
    assert targets and N11 not in targets and B2 not in targets
    assert (await extender.post("bind", binding_args(4, targets[0])))[1] == {"Error": ""}
    after = assignment_of(cluster)
    assert N11 not in after and sum(after.values()) == 4  # both slots moved in one rewrite
    assert "unhealthyNodes" not in workload(cluster)["status"]
    assert cluster.status_updates == 1
    # The second replacement pod now binds through the ordinary path.
    _, body = await extender.post("filter", names_args(pod(5)))
    assert body["NodeNames"]
    assert (await extender.post("bind", binding_args(5, body["NodeNames"][0])))[1] == {"Error": ""}
    assert cluster.status_updates == 1


async def test_the_plan_respects_capacity_used_by_other_pods(
    extender: Extender, n21_failed: MemoryCluster
) -> None:
    for name in (N12, N22):
        hog = pod(9)
        hog["metadata"] = {"name": f"hog-{name}", "namespace": "other", "uid": f"uid-hog-{name}"}
        hog["spec"]["nodeName"] = name
        hog["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3500m"
        n21_failed.add_pod(hog)
    # N12 and N22 now have no room for a 1-cpu pod; N11 (2 of 4 cpu used) has.
    assert await planned_target(extender, 3) == [N11]
    _, body = await extender.post("bind", binding_args(3, N22))
    assert "to be replaced by " + N11 in body["Error"]


async def test_untolerated_taint_keeps_a_node_out_of_the_plan(
    extender: Extender, n21_failed: MemoryCluster
) -> None:
    for name in (N12, N22):
        n21_failed.nodes[name]["spec"]["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
    assert await planned_target(extender, 3) == [N11]


async def test_without_any_replacement_the_pod_stays_pending(
    extender: Extender, n21_failed: MemoryCluster
) -> None:
    for name in (N11, N12, N22):
        n21_failed.nodes[name]["spec"]["unschedulable"] = True
    assert await planned_target(extender, 3) == []
    _, body = await extender.post("bind", binding_args(3, N22))
    assert f"node {N22} is cordoned" in body["Error"]  # refused before any replacement is planned
    assert n21_failed.status_updates == 0
    assert n21_failed.bindings == []
