"""Helpers for the runtime e2e tests: an event recorder and a way to age out watch history."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from pykueue.api.wire import JSON
from pykueue.kube.client import ApiError, KubeClient, connect
from pykueue.kube.informer import EventType
from pykueue.kube.resources import CONFIG_MAPS


class Recorder:
    """Collects informer events; ``wait_for`` blocks (bounded) until a predicate over them holds."""

    def __init__(self) -> None:
        self.events: list[tuple[EventType, str, JSON | None]] = []
        self._changed = asyncio.Condition()

    async def __call__(self, event_type: EventType, obj: JSON, old: JSON | None) -> None:
        async with self._changed:
            self.events.append((event_type, obj["metadata"]["name"], old))
            self._changed.notify_all()

    def names(self, event_type: EventType) -> list[str]:
        return [name for kind, name, _ in self.events if kind is event_type]

    async def wait_for(self, what: str, predicate: Callable[[], bool], deadline_s: float = 30.0) -> None:
        async def until() -> None:
            async with self._changed:
                await self._changed.wait_for(predicate)
        try:
            await asyncio.wait_for(until(), deadline_s)
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}; saw {self.events}") from None


LABEL = "pykueue-e2e"
SELECTOR = f"{LABEL}=informer"
"""Selects the ConfigMaps a test writes, not the ``kube-root-ca.crt`` every namespace gets."""


def config_map(name: str, namespace: str, **data: str) -> JSON:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": {LABEL: "informer"}}, "data": data}


async def watch_from_is_expired(client: KubeClient, namespace: str, resource_version: str) -> bool:
    """True when kube-apiserver answers a watch from ``resource_version`` with 410 Gone."""
    query = {"resourceVersion": resource_version, "timeoutSeconds": 1}
    try:
        stream = client.watch(CONFIG_MAPS.collection_path(namespace), query, read_timeout_s=10)
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                return event.get("type") == "ERROR" and (event.get("object") or {}).get("code") == 410
    except ApiError as exc:
        return exc.gone
    return False


async def age_out_watch_history(kubeconfig: Path, namespace: str, resource_version: str,
                                deadline_s: float = 200.0) -> int:
    """Write ConfigMaps until the apiserver's watch window no longer reaches ``resource_version``.

    kube-apiserver answers watches from its watch cache: a ring of recent events per resource
    that doubles while its oldest event is younger than ~75 s and otherwise drops the oldest.
    Churning ConfigMaps therefore pushes old history out -- at once on a cluster that has been
    up for a while, within about 80 s on a fresh one -- after which a watch from an old
    resourceVersion gets 410 Gone, exactly what a long-disconnected informer meets in
    production. The writes go through a client limited to 10 requests/s, so the ring grows
    little before its old events turn stale and the cluster shared with other tests is spared.
    Returns the number of writes it took.
    """
    started = time.monotonic()
    writes = 0
    async with await connect(kubeconfig, qps=10, burst=10) as client:
        path = CONFIG_MAPS.collection_path(namespace)
        churn = config_map("churn", namespace, n="0")
        churn["metadata"]["labels"] = {LABEL: "churn"}
        await client.create(path, churn)
        while not await watch_from_is_expired(client, namespace, resource_version):
            if time.monotonic() - started > deadline_s:
                raise AssertionError(f"watch history still reaches resourceVersion {resource_version} "
                                     f"after {writes} writes")
            for _ in range(10):
                writes += 1
                await client.patch(CONFIG_MAPS.object_path("churn", namespace), {"data": {"n": str(writes)}})
    return writes
