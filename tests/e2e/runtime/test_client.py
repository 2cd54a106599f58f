"""The rate-limited JSON client against the real apiserver: errors, concurrency control, counting, QPS."""

from __future__ import annotations

import asyncio
import time

import pytest

from pykueue.kube.client import ApiError, connect
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
