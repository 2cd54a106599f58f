"""REST paths, store keys and apiserver Status decoding: the plain-data side of the client."""

from __future__ import annotations

import json

import pytest

from pykueue.kube.client import ApiError
from pykueue.kube.resources import CLUSTER_QUEUES, CONFIG_MAPS, LEASES, WORKLOADS, object_key


@pytest.mark.parametrize(("path", "expected"), [
    (CONFIG_MAPS.collection_path(), "/api/v1/configmaps"),
    (CONFIG_MAPS.collection_path("team-a"), "/api/v1/namespaces/team-a/configmaps"),
    (CONFIG_MAPS.object_path("cm", "team-a"), "/api/v1/namespaces/team-a/configmaps/cm"),
    (LEASES.object_path("c1f6bfd2.kueue.x-k8s.io", "kueue-system"),
     "/apis/coordination.k8s.io/v1/namespaces/kueue-system/leases/c1f6bfd2.kueue.x-k8s.io"),
    (WORKLOADS.object_path("wl", "ns", "status"),
     "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/status"),
    (CLUSTER_QUEUES.collection_path("ignored-for-cluster-scope"),
     "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"),
    (CLUSTER_QUEUES.object_path("cq"), "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq"),
])
def test_paths(path: str, expected: str) -> None:
    assert path == expected


def test_a_namespaced_object_needs_its_namespace() -> None:
    with pytest.raises(ValueError):
        WORKLOADS.object_path("wl")


def test_store_keys_follow_client_go() -> None:
    assert object_key({"metadata": {"name": "wl", "namespace": "ns"}}) == "ns/wl"
    assert object_key({"metadata": {"name": "cq"}}) == "cq"


def test_status_bodies_decide_the_error_class() -> None:
    def status(code: int, reason: str) -> bytes:
        return json.dumps({"kind": "Status", "status": "Failure", "code": code, "reason": reason,
                           "message": "m"}).encode()

    assert ApiError.from_status(409, status(409, "AlreadyExists")).already_exists
    conflict = ApiError.from_status(409, status(409, "Conflict"))
    assert conflict.conflict and not conflict.already_exists
    assert ApiError.from_status(410, status(410, "Expired")).gone
    assert ApiError.from_status(404, status(404, "NotFound")).not_found
    # A watch ERROR event carries the Status object itself, with its own code.
    assert ApiError.from_status(500, {"code": 410, "reason": "Expired", "message": "too old"}).gone
    opaque = ApiError.from_status(502, b"<html>bad gateway</html>")
    assert opaque.status == 502 and "bad gateway" in opaque.message
