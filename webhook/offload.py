"""Where the webhook's pure, size-bound work runs: inline for small bodies, on worker threads for large.

Parsing a review, copying its object and diffing the result cost about a millisecond per
100 KiB; for the 3 MiB objects Kubernetes may send, tens of milliseconds during which the
shared event loop (informers, the scheduler, every other server) would stand still. Work for a
body of ``threshold_bytes`` or more therefore runs on a small thread pool: the GIL still
serialises Python, but the loop gets its turns in between instead of waiting for the whole
step. Small bodies, nearly all of them, stay inline: a thread hop would cost more than the work.
The pool's size bounds how many large bodies are being expanded into objects at once; the
server's buffered-bytes budget (``kube.http_limits``) bounds how many wait for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

T = TypeVar("T")

THRESHOLD_BYTES = 64 * 1024
WORKERS = 2


class WorkerLane:
    def __init__(self, threshold_bytes: int = THRESHOLD_BYTES, workers: int = WORKERS) -> None:
        self.threshold_bytes = threshold_bytes
        self._workers = workers
        self._pool: ThreadPoolExecutor | None = None

    async def run(self, size: int, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``: inline when ``size`` (the body's bytes) is small, else on a worker."""
        if size < self.threshold_bytes:
            return fn(*args)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="webhook-large-body")
        return await asyncio.get_running_loop().run_in_executor(self._pool, partial(fn, *args))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
