"""Fixtures: the in-memory cluster and the extender served on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from pykueue.extender.app import ExtenderDeps, make_app

from .memory_cluster import MemoryCluster
from .scenario import build_cluster


class Extender:
    """A running extender and a client that speaks the scheduler's side of the protocol."""

    def __init__(self, client: TestClient[Any, Any]) -> None:
        self.client = client

    async def post(self, verb: str, body: Any) -> tuple[int, Any]:
        resp = await self.client.post(f"/{verb}", json=body)
        payload = await resp.json() if resp.content_type == "application/json" else await resp.text()
        return resp.status, payload

    async def post_raw(self, verb: str, data: bytes) -> tuple[int, str]:
        resp = await self.client.post(
            f"/{verb}", data=data, headers={"Content-Type": "application/json"}
        )
        return resp.status, await resp.text()


@pytest.fixture
def cluster() -> MemoryCluster:
    return build_cluster()


async def serve(cluster: MemoryCluster) -> TestClient[Any, Any]:
    server = TestServer(make_app(ExtenderDeps(port=cluster)), host="127.0.0.1")
    client: TestClient[Any, Any] = TestClient(server)
    await client.start_server()
    return client


@pytest.fixture
async def extender(cluster: MemoryCluster) -> AsyncIterator[Extender]:
    client = await serve(cluster)
    try:
        yield Extender(client)
    finally:
        await client.close()
