"""The visibility server over TLS on loopback: discovery, both endpoints, paging, 404s."""

from __future__ import annotations

from typing import Any

from pykueue.manager.runtime.visibility import OwnerReference, PendingWorkloadInfo
from tests.component.visibility.conftest import VIEWER_HEADERS, Identities, Server, workload

GV = "/apis/visibility.kueue.x-k8s.io/v1beta2"


async def get_ok(server: Server, identities: Identities, path: str, **params: str) -> Any:
    status, body = await server.get(path, identities.front_proxy_client, VIEWER_HEADERS, params)
    assert status == 200, body
    return body


async def test_discovery_documents(server: Server, identities: Identities) -> None:
    groups = await get_ok(server, identities, "/apis")
    assert groups["kind"] == "APIGroupList"
    assert [g["name"] for g in groups["groups"]] == ["visibility.kueue.x-k8s.io"]
    group = await get_ok(server, identities, "/apis/visibility.kueue.x-k8s.io")
    assert group["kind"] == "APIGroup"
    assert group["preferredVersion"] == {"groupVersion": "visibility.kueue.x-k8s.io/v1beta2",
                                         "version": "v1beta2"}
    resources = await get_ok(server, identities, GV)
    assert resources["kind"] == "APIResourceList"
    assert resources["groupVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
    by_name = {r["name"]: r for r in resources["resources"]}
    assert by_name["clusterqueues/pendingworkloads"]["namespaced"] is False
    assert by_name["localqueues/pendingworkloads"]["namespaced"] is True
    assert by_name["localqueues/pendingworkloads"]["verbs"] == ["get"]


async def test_openapi_documents_are_served(server: Server, identities: Identities) -> None:
    v2 = await get_ok(server, identities, "/openapi/v2")
    assert v2["swagger"] == "2.0"
    index = await get_ok(server, identities, "/openapi/v3")
    assert sorted(index["paths"]) == ["apis/visibility.kueue.x-k8s.io/v1beta1",
                                      "apis/visibility.kueue.x-k8s.io/v1beta2"]
    for entry in index["paths"].values():
        v3 = await get_ok(server, identities, entry["serverRelativeURL"])
        assert v3["openapi"].startswith("3.")


async def test_v1beta1_serves_the_same_data(server: Server, identities: Identities) -> None:
    """Kueue serves both versions; clients of Kueue v0.12 ask for v1beta1."""
    group = await get_ok(server, identities, "/apis/visibility.kueue.x-k8s.io")
    assert [v["version"] for v in group["versions"]] == ["v1beta2", "v1beta1"]
    old_gv = "/apis/visibility.kueue.x-k8s.io/v1beta1"
    resources = await get_ok(server, identities, old_gv)
    assert resources["groupVersion"] == "visibility.kueue.x-k8s.io/v1beta1"
    assert resources["resources"] == (await get_ok(server, identities, GV))["resources"]
    fill(server)
    for path in ("clusterqueues/cq/pendingworkloads", "namespaces/team-a/localqueues/lq-a/pendingworkloads"):
        old = await get_ok(server, identities, f"{old_gv}/{path}", limit="2", offset="1")
        new = await get_ok(server, identities, f"{GV}/{path}", limit="2", offset="1")
        assert old["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta1"
        assert old["items"] == new["items"] and old["items"]
    status, _ = await server.get("/apis/visibility.kueue.x-k8s.io/v1alpha1/clusterqueues/cq/pendingworkloads",
                                 identities.front_proxy_client, VIEWER_HEADERS, {})
    assert status == 404


def fill(server: Server) -> None:
    owner = OwnerReference(api_version="batch/v1", kind="Job", name="job-a1", uid="uid-a1")
    server.provider.cluster_queues["cq"] = [
        PendingWorkloadInfo(name="a1", namespace="team-a", local_queue="lq-a", priority=100,
                            creation_timestamp="2026-01-01T00:00:01Z", owner_references=(owner,)),
        workload("b1", "lq-b", priority=50, namespace="team-b"),
        workload("a2", "lq-a", priority=50),
        workload("a3", "lq-a", priority=0),
        workload("b2", "lq-b", priority=0, namespace="team-b"),
    ]
    server.provider.cluster_queues["empty"] = []
    server.provider.local_queues[("team-a", "lq-a")] = "cq"
    server.provider.local_queues[("team-b", "lq-b")] = "cq"
    server.provider.local_queues[("team-c", "dangling")] = "not-created-yet"


async def test_cluster_queue_summary_in_order_with_positions(server: Server, identities: Identities) -> None:
    fill(server)
    body = await get_ok(server, identities, f"{GV}/clusterqueues/cq/pendingworkloads")
    assert body["kind"] == "PendingWorkloadsSummary"
    assert body["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
    summary = [(i["metadata"]["name"], i["localQueueName"], i["priority"], i["positionInClusterQueue"],
                i["positionInLocalQueue"]) for i in body["items"]]
    assert summary == [("a1", "lq-a", 100, 0, 0), ("b1", "lq-b", 50, 1, 0), ("a2", "lq-a", 50, 2, 1),
                       ("a3", "lq-a", 0, 3, 2), ("b2", "lq-b", 0, 4, 1)]
    first = body["items"][0]["metadata"]
    assert first == {"name": "a1", "namespace": "team-a", "creationTimestamp": "2026-01-01T00:00:01Z",
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "job-a1",
                                          "uid": "uid-a1"}]}


async def names(server: Server, identities: Identities, path: str,
                **params: str) -> list[tuple[str, int, int]]:
    body = await get_ok(server, identities, path, **params)
    return [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"])
            for i in body["items"]]


async def test_cluster_queue_limit_and_offset(server: Server, identities: Identities) -> None:
    fill(server)
    path = f"{GV}/clusterqueues/cq/pendingworkloads"
    assert await names(server, identities, path, limit="2", offset="2") == [("a2", 2, 1), ("a3", 3, 2)]
    assert await names(server, identities, path, offset="-3", limit="1") == [("a1", 0, 0)]
    assert await names(server, identities, path, limit="-1") == []
    assert len(await names(server, identities, path, limit=str(2**62))) == 5
    assert await names(server, identities, path, offset=str(2**62)) == []
    assert await names(server, identities, f"{GV}/clusterqueues/empty/pendingworkloads") == []


async def test_default_limit_is_a_thousand(server: Server, identities: Identities) -> None:
    server.provider.cluster_queues["big"] = [workload(f"w{i}", "lq") for i in range(1003)]
    path = f"{GV}/clusterqueues/big/pendingworkloads"
    assert len(await names(server, identities, path)) == 1000
    assert len(await names(server, identities, path, limit="0")) == 1000
    assert await names(server, identities, path, offset="1001") == [("w1001", 1001, 1001),
                                                                    ("w1002", 1002, 1002)]


async def test_local_queue_summary_scans_its_cluster_queue(server: Server, identities: Identities) -> None:
    fill(server)
    path = f"{GV}/namespaces/team-a/localqueues/lq-a/pendingworkloads"
    assert await names(server, identities, path) == [("a1", 0, 0), ("a2", 2, 1), ("a3", 3, 2)]
    assert await names(server, identities, path, offset="1", limit="1") == [("a2", 2, 1)]
    assert await names(server, identities, path, offset="5") == []
    assert await names(server, identities, f"{GV}/namespaces/team-b/localqueues/lq-b/pendingworkloads",
                       limit="1") == [("b1", 1, 0)]
    dangling = f"{GV}/namespaces/team-c/localqueues/dangling/pendingworkloads"
    assert await names(server, identities, dangling) == []


async def test_unknown_queues_are_404_status(server: Server, identities: Identities) -> None:
    fill(server)
    status, body = await server.get(f"{GV}/clusterqueues/nope/pendingworkloads",
                                    identities.front_proxy_client, VIEWER_HEADERS)
    assert status == 404
    assert isinstance(body, dict)
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "NotFound", 404)
    assert body["details"]["name"] == "nope"
    # A LocalQueue is looked up by namespace and name: lq-a exists only in team-a.
    status, body = await server.get(f"{GV}/namespaces/team-b/localqueues/lq-a/pendingworkloads",
                                    identities.front_proxy_client, VIEWER_HEADERS)
    assert status == 404
    assert isinstance(body, dict) and body["details"]["kind"] == "localqueue"


async def test_bad_query_and_unknown_paths_answer_in_status_json(server: Server,
                                                                 identities: Identities) -> None:
    fill(server)
    status, body = await server.get(f"{GV}/clusterqueues/cq/pendingworkloads", identities.front_proxy_client,
                                    VIEWER_HEADERS, {"limit": "ten"})
    assert status == 400
    assert isinstance(body, dict) and body["reason"] == "BadRequest"
    status, body = await server.get(f"{GV}/workloads", identities.front_proxy_client, VIEWER_HEADERS)
    assert status == 404
    assert isinstance(body, dict) and body["kind"] == "Status"
    status, body = await server.get(f"{GV}/clusterqueues/cq/pendingworkloads", identities.front_proxy_client,
                                    VIEWER_HEADERS, method="DELETE")
    assert status in (404, 405)
    assert isinstance(body, dict) and body["kind"] == "Status"


async def test_an_entry_carries_why_it_waits(server: Server, identities: Identities) -> None:
    # Beside Kueue's fields: the QuotaReserved=False reason (its tier) and message.
    server.provider.cluster_queues["cq"] = [
        PendingWorkloadInfo(name="a1", namespace="team-a", local_queue="lq-a", priority=0,
                            creation_timestamp="2026-01-01T00:00:01Z", reason="WaitingForQuota",
                            message="couldn't assign flavors to pod set main: insufficient unused quota"),
        workload("a2", "lq-a"),
    ]
    server.provider.local_queues[("team-a", "lq-a")] = "cq"
    for path in (f"{GV}/clusterqueues/cq/pendingworkloads",
                 f"{GV}/namespaces/team-a/localqueues/lq-a/pendingworkloads"):
        first, second = (await get_ok(server, identities, path))["items"]
        assert (first["reason"], first["message"]) == (
            "WaitingForQuota", "couldn't assign flavors to pod set main: insufficient unused quota")
        assert "reason" not in second and "message" not in second
