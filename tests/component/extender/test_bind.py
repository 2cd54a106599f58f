"""bind: the Binding goes through the API only while the pod's domain has room."""

from __future__ import annotations

import asyncio
import json
import time

from pykueue.api import keys
from pykueue.extender.port import PortError

from .conftest import Extender, serve
from .memory_cluster import MemoryCluster
from .scenario import N11, N12, N21, N22, NAMESPACE, WORKLOAD, binding_args, names_args, plain_pod, pod


async def test_bind_posts_the_binding_and_counts_it(extender: Extender, cluster: MemoryCluster) -> None:
    status, body = await extender.post("bind", binding_args(0, N12))
    assert (status, body) == (200, {"Error": ""})
    assert cluster.bindings == [(NAMESPACE, "sample-job-0-mz7kq", N12)]
    _, filtered = await extender.post("filter", names_args(pod(1), [N11, N12, N21]))
    assert filtered["NodeNames"] == [N11, N21]


async def test_retried_bind_is_a_success_without_a_second_binding(
    extender: Extender, cluster: MemoryCluster
) -> None:
    first = await extender.post("bind", binding_args(0, N12))
    again = await extender.post("bind", binding_args(0, N12))
    assert first == again == (200, {"Error": ""})
    assert len(cluster.bindings) == 1


async def test_bind_outside_the_assignment_is_refused(extender: Extender, cluster: MemoryCluster) -> None:
    _, body = await extender.post("bind", binding_args(0, N22))
    assert "not in the TAS assignment" in body["Error"]
    assert cluster.bindings == []


async def test_bind_to_a_full_domain_is_refused(extender: Extender, cluster: MemoryCluster) -> None:
    assert (await extender.post("bind", binding_args(0, N12)))[1] == {"Error": ""}
    _, body = await extender.post("bind", binding_args(1, N12))
    assert "full" in body["Error"]
    assert len(cluster.bindings) == 1


async def test_bind_of_a_recreated_pod_is_refused(extender: Extender, cluster: MemoryCluster) -> None:
    args = binding_args(0, N12) | {"PodUID": "uid-of-an-older-incarnation"}
    _, body = await extender.post("bind", args)
    assert "recreated" in body["Error"]
    assert cluster.bindings == []


async def test_bind_of_a_pod_bound_elsewhere_is_refused(extender: Extender, cluster: MemoryCluster) -> None:
    assert (await extender.post("bind", binding_args(0, N11)))[1] == {"Error": ""}
    _, body = await extender.post("bind", binding_args(0, N12))
    assert "already bound to " + N11 in body["Error"]


async def test_unmanaged_pod_is_bound_as_asked(extender: Extender, cluster: MemoryCluster) -> None:
    cluster.add_pod(plain_pod("web-1"))
    args = {"PodName": "web-1", "PodNamespace": NAMESPACE, "PodUID": "uid-web-1", "Node": N22}
    assert (await extender.post("bind", args))[1] == {"Error": ""}
    assert cluster.bindings == [(NAMESPACE, "web-1", N22)]


async def test_unmanaged_pod_filtered_first_is_bound_with_one_api_call(
    extender: Extender, cluster: MemoryCluster
) -> None:
    for name in ("web-2", "web-3"):
        web = plain_pod(name)
        cluster.add_pod(web)
        assert (await extender.post("filter", names_args(web, [N22])))[1]["NodeNames"] == [N22]
        cluster.calls.clear()
        args = {"PodName": name, "PodNamespace": NAMESPACE, "PodUID": f"uid-{name}", "Node": N22}
        assert (await extender.post("bind", args))[1] == {"Error": ""}
        # The first bind also lists the nodes once, to check the node admits the pod.
        assert cluster.calls == (["list_nodes", "post_binding"] if name == "web-2" else ["post_binding"])
    assert cluster.bindings == [(NAMESPACE, "web-2", N22), (NAMESPACE, "web-3", N22)]


async def test_unmanaged_pod_recreated_after_filter_is_not_bound(
    extender: Extender, cluster: MemoryCluster
) -> None:
    web = plain_pod("web-3")
    assert (await extender.post("filter", names_args(web, [N22])))[1]["NodeNames"] == [N22]
    cluster.add_pod(web | {"metadata": web["metadata"] | {"uid": "uid-web-3-again"}})
    args = {"PodName": "web-3", "PodNamespace": NAMESPACE, "PodUID": "uid-web-3", "Node": N22}
    _, body = await extender.post("bind", args)
    assert "recreated" in body["Error"]
    assert cluster.bindings == []

async def test_missing_pod_is_an_error_not_a_crash(extender: Extender) -> None:
    args = {"PodName": "gone", "PodNamespace": NAMESPACE, "PodUID": "u", "Node": N11}
    status, body = await extender.post("bind", args)
    assert status == 200 and "not found" in body["Error"]


async def test_concurrent_binds_for_the_last_slot_one_wins(
    extender: Extender, cluster: MemoryCluster
) -> None:
    results = await asyncio.gather(*(extender.post("bind", binding_args(i, N12)) for i in (0, 1, 2)))
    errors = [body["Error"] for _, body in results]
    assert errors.count("") == 1
    assert all("full" in e for e in errors if e)
    assert [b[2] for b in cluster.bindings] == [N12]


async def test_concurrent_binds_fill_every_slot_exactly(extender: Extender, cluster: MemoryCluster) -> None:
    targets = [N11, N11, N12, N21]
    results = await asyncio.gather(
        *(extender.post("bind", binding_args(i, node)) for i, node in enumerate(targets))
    )
    assert [body for _, body in results] == [{"Error": ""}] * 4
    assert sorted(b[2] for b in cluster.bindings) == sorted(targets)


async def test_two_replicas_never_overfill_a_domain(cluster: MemoryCluster) -> None:
    """Replicas share no lock; the API is what keeps them from both taking the last slot."""
    replicas = [await serve(cluster), await serve(cluster)]
    try:
        posts = [
            replicas[i % 2].post("/bind", json=binding_args(i, N12)) for i in range(4)
        ]
        responses = await asyncio.gather(*posts)
        errors = [(await r.json())["Error"] for r in responses]
    finally:
        for client in replicas:
            await client.close()
    assert errors.count("") == 1
    assert [b[2] for b in cluster.bindings] == [N12]


def claim(cluster: MemoryCluster, uid: str, node: str, expires: float) -> None:
    value = json.dumps({uid: {"node": node, "expires": expires}})
    cluster.touch_workload(
        NAMESPACE, WORKLOAD,
        lambda wl: wl["metadata"].setdefault("annotations", {}).__setitem__(keys.TAS_BIND_CLAIMS, value),
    )


async def test_another_replicas_bind_in_flight_holds_the_slot(
    extender: Extender, cluster: MemoryCluster
) -> None:
    claim(cluster, "uid-pod-1", N12, time.time() + 3600)
    _, filtered = await extender.post("filter", names_args(pod(0), [N11, N12, N21]))
    assert filtered["NodeNames"] == [N11, N21]
    _, body = await extender.post("bind", binding_args(0, N12))
    assert "full" in body["Error"]


async def test_expired_claim_no_longer_holds_the_slot(extender: Extender, cluster: MemoryCluster) -> None:
    claim(cluster, "uid-pod-1", N12, time.time() - 1)
    assert (await extender.post("bind", binding_args(0, N12)))[1] == {"Error": ""}
    stored = cluster.workloads[(NAMESPACE, WORKLOAD)]["metadata"]["annotations"][keys.TAS_BIND_CLAIMS]
    assert set(json.loads(stored)) == {"uid-pod-0"}  # the stale claim was dropped on write


async def test_failed_binding_reports_and_releases_its_claim(
    extender: Extender, cluster: MemoryCluster
) -> None:
    cluster.fail_next_binding = PortError("500 etcdserver: request timed out")
    _, body = await extender.post("bind", binding_args(0, N12))
    assert "request timed out" in body["Error"]
    annotations = cluster.workloads[(NAMESPACE, WORKLOAD)]["metadata"].get("annotations") or {}
    assert keys.TAS_BIND_CLAIMS not in annotations
    # The slot is free at once for another pod.
    assert (await extender.post("bind", binding_args(1, N12)))[1] == {"Error": ""}
