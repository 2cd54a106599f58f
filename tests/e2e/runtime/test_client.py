"""The rate-limited JSON client against the real apiserver: errors, concurrency control, counting, QPS."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from pathlib import Path

import pytest
import yaml

from pykueue.kube.client import ApiError, KubeClient, connect
from pykueue.kube.resources import CONFIG_MAPS
from tests.e2e.conftest import DevCluster
from tests.e2e.runtime.helpers import config_map

pytestmark = pytest.mark.e2e


async def test_status_errors_are_classified(dev_cluster: DevCluster, namespace: str) -> None:
    async with await connect(dev_cluster.kubeconfig) as client:
        path = CONFIG_MAPS.collection_path(namespace)
        created = await client.create(path, config_map("cm", namespace, v="1"))
        with pytest.raises(ApiError) as clash:
            await client.create(path, config_map("cm", namespace, v="1"))
        assert clash.value.already_exists and not clash.value.conflict

        fresh = await client.patch(CONFIG_MAPS.object_path("cm", namespace), {"data": {"v": "2"}})
        stale = {**created, "data": {"v": "stale"}}  # carries the old resourceVersion
        with pytest.raises(ApiError) as lost_race:
            await client.replace(CONFIG_MAPS.object_path("cm", namespace), stale)
        assert lost_race.value.conflict and lost_race.value.status == 409
        assert fresh["data"] == {"v": "2"}

        with pytest.raises(ApiError) as missing:
            await client.get(CONFIG_MAPS.object_path("absent", namespace))
        assert missing.value.not_found and missing.value.reason == "NotFound"
        assert client.requests_issued == 5
        assert client.requests_by_verb == {"post": 2, "patch": 1, "put": 1, "get": 1}


async def test_requests_are_held_to_the_configured_qps(dev_cluster: DevCluster, namespace: str) -> None:
    qps, burst, requests = 20.0, 5, 45
    async with await connect(dev_cluster.kubeconfig, qps=qps, burst=burst) as client:
        started = time.monotonic()
        await asyncio.gather(*(client.get(CONFIG_MAPS.collection_path(namespace)) for _ in range(requests)))
        elapsed = time.monotonic() - started
    assert client.requests_issued == requests
    # The burst goes at once; the other 40 are spaced 1/20 s apart: at least 2 s in all.
    assert elapsed >= (requests - burst) / qps - 0.05
    assert client.limiter.throttled_seconds > 0


async def _who(client: KubeClient) -> str:
    review = await client.create("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                 {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return str(review["status"]["userInfo"]["username"])


async def test_a_token_file_kubeconfig_follows_the_rotated_token(dev_cluster: DevCluster, namespace: str,
                                                                 tmp_path: Path) -> None:
    """pykueue's own kubeconfig reading against the real apiserver: a CA file and a token
    file named relative to the kubeconfig, and a token swapped in the file between requests."""
    admin_config = yaml.safe_load(dev_cluster.kubeconfig.read_text())
    tokens = {}
    async with await connect(dev_cluster.kubeconfig) as admin:
        assert await _who(admin) == "kubernetes-admin"  # the client certificate, from embedded data
        for name in ("reader-a", "reader-b"):
            await admin.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
            request = await admin.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                                         {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                          "spec": {"expirationSeconds": 600}})
            tokens[name] = request["status"]["token"]
    (tmp_path / "certs").mkdir()
    ca = admin_config["clusters"][0]["cluster"]["certificate-authority-data"]
    (tmp_path / "certs" / "ca.crt").write_bytes(base64.b64decode(ca))
    (tmp_path / "token").write_text(tokens["reader-a"])
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "dev", "cluster": {"server": dev_cluster.server,
                                                 "certificate-authority": "certs/ca.crt"}}],
        "users": [{"name": "sa", "user": {"tokenFile": "token"}}],
        "contexts": [{"name": "sa", "context": {"cluster": "dev", "user": "sa"}}]}))
    async with await connect(kubeconfig) as client:
        assert await _who(client) == f"system:serviceaccount:{namespace}:reader-a"
        (tmp_path / "token.new").write_text(tokens["reader-b"])
        os.replace(tmp_path / "token.new", tmp_path / "token")  # as kubelet swaps a projected token
        assert await _who(client) == f"system:serviceaccount:{namespace}:reader-b"
