"""A generic list-then-watch cache of one API resource, in raw JSON, like client-go's informer.

Why list-then-watch: the list gives a consistent snapshot and its resourceVersion; the watch
continues from exactly that point, so no change is missed between the two. When the
apiserver has compacted that history away (410 Gone, as an HTTP status or as an ERROR event)
the informer lists again and *synthesizes* the difference against its local store -- adds,
updates and deletes -- so handlers still see every change that mattered, just coalesced.
Other failures (network, 5xx, throttling) are retried with jittered exponential backoff,
resuming from the last seen resourceVersion. Bookmarks keep that resourceVersion fresh on
quiet resources so a reconnect rarely needs a re-list.

Handlers run in the informer's task, in event order, after the store is updated; they should
only enqueue work (see ``workqueue``), never block on I/O.

Our own because kubernetes-asyncio offers only the raw watch stream (``watch.Watch``): no
store, no relist and diff on 410, no shared rate limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import random
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any

from pykueue.api.wire import JSON
from pykueue.kube.backoff import Backoff
from pykueue.kube.client import ApiError, KubeClient
from pykueue.kube.resources import ResourceRef, object_key

log = logging.getLogger(__name__)


class EventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


Handler = Callable[[EventType, JSON, JSON | None], Awaitable[None] | None]
"""Called with (event type, new object -- or the last known one for DELETED, old object or None)."""


class _Expired(Exception):
    """The watch's resourceVersion is too old: re-list."""


class Informer:
    """Local store of one resource kept in sync by list+watch; see the module docstring."""

    def __init__(self, client: KubeClient, resource: ResourceRef, *, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 page_size: int = 500, watch_timeout_s: tuple[int, int] = (300, 600),
                 backoff: Backoff | None = None) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self.watch_timeout_s = watch_timeout_s
        self.backoff = backoff if backoff is not None else Backoff(base=0.8, cap=30.0)
        self._store: dict[str, JSON] = {}
        self._handlers: list[Handler] = []
        self._resource_version: str | None = None
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.lists = 0
        """How many full lists ran (the first one, then one per expiry); tests and benchmarks read it."""
        self.watch_errors = 0

    # -- the store, read synchronously -----------------------------------------------------
    def get(self, key: str) -> JSON | None:
        return self._store.get(key)

    def get_by_name(self, name: str, namespace: str | None = None) -> JSON | None:
        return self._store.get(f"{namespace}/{name}" if namespace else name)

    def keys(self) -> list[str]:
        return list(self._store)

    def items(self) -> list[JSON]:
        return list(self._store.values())

    def __len__(self) -> int:
        return len(self._store)

    @property
    def resource_version(self) -> str | None:
        """The resourceVersion the next watch would start from."""
        return self._resource_version

    # -- handlers and lifecycle ------------------------------------------------------------
    def add_handler(self, handler: Handler) -> None:
        """Register a handler before ``start`` so it also sees the initial list as ADDED events."""
        self._handlers.append(handler)

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self, timeout_s: float | None = None) -> None:
        async with asyncio.timeout(timeout_s):
            await self._synced.wait()

    def start(self, *, resume_from: str | None = None) -> asyncio.Task[None]:
        """Run in a background task.

        ``resume_from`` continues watching from that resourceVersion with the current store
        (a restart that kept its cache); without it the first pass lists.
        """
        if self._task is not None and not self._task.done():
            raise RuntimeError("informer already running")
        if resume_from is not None:
            self._resource_version = resume_from
        self._task = asyncio.create_task(self.run(), name=f"informer:{self.resource.plural}")
        return self._task

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            # Re-raise only if *we* are being cancelled, not because we cancelled the informer.
            if current is not None and current.cancelling():
                raise

    async def run(self) -> None:
        failures = 0
        while True:
            try:
                if self._resource_version is None:
                    await self._relist()
                    self._synced.set()
                else:
                    self._synced.set()
                await self._watch_once()
                failures = 0
            except _Expired:
                log.info("watch of %s expired at resourceVersion %s; re-listing",
                         self.resource.plural, self._resource_version)
                self._resource_version = None
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.watch_errors += 1
                delay = self.backoff.delay(failures)
                failures += 1
                log.warning("list/watch of %s failed (%s); retrying in %.2fs", self.resource.plural,
                            exc, delay)
                await asyncio.sleep(delay)

    # -- list ------------------------------------------------------------------------------
    def _base_query(self) -> dict[str, str | int | bool]:
        query: dict[str, str | int | bool] = {}
        if self.label_selector:
            query["labelSelector"] = self.label_selector
        if self.field_selector:
            query["fieldSelector"] = self.field_selector
        return query

    async def _list_all(self) -> tuple[list[JSON], str]:
        path = self.resource.collection_path(self.namespace)
        items: list[JSON] = []
        query = {**self._base_query(), "limit": self.page_size}
        while True:
            try:
                page = await self.client.get(path, query)
            except ApiError as exc:
                if exc.gone and "continue" in query:
                    # The continue token outlived etcd's history: start the whole list over.
                    items, query = [], {**self._base_query(), "limit": self.page_size}
                    continue
                raise
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                return items, str(meta.get("resourceVersion", ""))
            query = {**self._base_query(), "limit": self.page_size, "continue": token}

    async def _relist(self) -> None:
        items, resource_version = await self._list_all()
        self.lists += 1
        api_version = self.resource.api_version
        fresh: dict[str, JSON] = {}
        for item in items:
            _trim(item)
            # List items omit apiVersion/kind; restore them so handlers see whole objects.
            item.setdefault("apiVersion", api_version)
            if self.resource.kind:
                item.setdefault("kind", self.resource.kind)
            fresh[object_key(item)] = item
        for key in [k for k in self._store if k not in fresh]:
            old = self._store.pop(key)
            await self._dispatch(EventType.DELETED, old, old)
        for key, obj in fresh.items():
            previous = self._store.get(key)
            self._store[key] = obj
            if previous is None:
                await self._dispatch(EventType.ADDED, obj, None)
            elif _rv(previous) != _rv(obj):
                await self._dispatch(EventType.MODIFIED, obj, previous)
        self._resource_version = resource_version

    # -- watch -----------------------------------------------------------------------------
    async def _watch_once(self) -> None:
        timeout = random.randint(*self.watch_timeout_s)
        query: dict[str, str | int | bool] = {
            **self._base_query(),
            "resourceVersion": self._resource_version or "",
            "allowWatchBookmarks": True,
            "timeoutSeconds": timeout,
        }
        try:
            stream = self.client.watch(self.resource.collection_path(self.namespace), query,
                                       read_timeout_s=timeout + 30.0)
            async with contextlib.aclosing(stream) as events:
                async for event in events:
                    await self._apply(event)
        except ApiError as exc:
            if exc.gone:
                raise _Expired from exc
            raise

    async def _apply(self, event: JSON) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            status = ApiError.from_status(int(obj.get("code") or 500), obj)
            if status.gone:
                raise _Expired
            raise status
        rv = _rv(obj)
        if kind == "BOOKMARK":
            if rv:
                self._resource_version = rv
            return
        _trim(obj)
        key = object_key(obj)
        old = self._store.get(key)
        if kind == "DELETED":
            self._store.pop(key, None)
            await self._dispatch(EventType.DELETED, obj, old)
        elif kind in ("ADDED", "MODIFIED"):
            self._store[key] = obj
            # An ADDED for a key we already hold (replayed after a reconnect) is an update.
            event_type = EventType.ADDED if old is None else EventType.MODIFIED
            await self._dispatch(event_type, obj, old)
        if rv:
            self._resource_version = rv

    async def _dispatch(self, event_type: EventType, obj: JSON, old: JSON | None) -> None:
        for handler in self._handlers:
            try:
                result = handler(event_type, obj, old)
                if inspect.isawaitable(result):
                    await result
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s handler failed on %s %s", self.resource.plural, event_type,
                              object_key(obj))


def _trim(obj: JSON) -> None:
    """Drop ``metadata.managedFields``: nothing here reads them, and as nested dicts they
    are a large share of a cached object's memory (an update that omits them keeps the
    stored ones, so objects written back from the cache lose nothing)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)


def _rv(obj: JSON | Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return str(meta.get("resourceVersion", "")) if isinstance(meta, dict) else ""
