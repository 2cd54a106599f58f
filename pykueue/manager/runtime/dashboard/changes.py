"""When the core changed, for the live pages: a revision number and the index built for it.

The core has no change callbacks, and the dashboard must not add work to the scheduler's
path, so the feed compares :func:`~.view.fingerprint` (one pass over the records) when a
page asks for data and, while browsers listen, every ``poll_s``. A changed fingerprint is a
new revision: listeners are woken with it, and the :class:`~.view.DashboardIndex` is
rebuilt once, on the first request of that revision. Everything runs on the event loop
thread that owns the core, so no locks.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.scenario.gc_pause import paused_collection

from . import view

POLL_S = 0.25
# The requests of one page load (four at once) share one look at the core.
FRESH_S = 0.05


class ChangeFeed:
    def __init__(self, core: QueueingCore, poll_s: float = POLL_S,
                 follower: Callable[[], bool] = lambda: False) -> None:
        """``follower``: whether this replica only follows the leader's decisions now."""
        self.core = core
        self.follower = follower
        self.poll_s = poll_s
        self.revision = 1
        self._fingerprint: tuple[int, ...] | None = None
        self._checked_at = float("-inf")
        self._index: tuple[int, view.DashboardIndex] | None = None
        self._changed = asyncio.Condition()
        self._listeners = 0
        self._poller: asyncio.Task[None] | None = None
        self.closed = False

    def check(self, fresh_s: float = 0.0) -> int:
        """The current revision, after looking whether the core changed (unless that was
        looked at less than ``fresh_s`` ago)."""
        now = time.monotonic()
        if now - self._checked_at < fresh_s:
            return self.revision
        self._checked_at = now
        fingerprint = view.fingerprint(self.core)
        if fingerprint != self._fingerprint:
            if self._fingerprint is not None:
                self.revision += 1
            self._fingerprint = fingerprint
        return self.revision

    def expire(self) -> None:
        """The next request looks at the core again, however recent the last look."""
        self._checked_at = float("-inf")

    def index(self) -> tuple[int, view.DashboardIndex]:
        revision = self.check(FRESH_S)
        if self._index is None or self._index[0] != revision:
            # Tens of thousands of short-lived tuples: the collector's passes would find
            # nothing to free (see gc_pause).
            with paused_collection():
                previous = self._index[1] if self._index is not None else None
                self._index = (revision, view.build_index(self.core, previous, self.follower()))
        return self._index

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _poll(self) -> None:
        notified = self.revision
        while True:
            await asyncio.sleep(self.poll_s)
            if not self._listeners:  # nobody listens (the page was closed): stop looking
                self._poller = None
                return
            # A request may have seen the change first: compare with what was announced.
            if self.check() != notified:
                notified = self.revision
                await self._notify()

    async def wait_after(self, revision: int, timeout_s: float) -> int:
        """The revision once it is past ``revision`` (or at the timeout, unchanged)."""
        self._listeners += 1
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll())
        try:
            async with self._changed:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._changed.wait_for(lambda: self.closed or self.revision > revision), timeout_s)
            return self.revision
        finally:
            self._listeners -= 1

    async def close(self) -> None:
        """Wake every listener for good (the server is stopping)."""
        self.closed = True
        await self._notify()
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None
