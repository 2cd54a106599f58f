"""Where the webhook's pure, size-bound work runs: inline for small bodies, on worker threads
or in a worker process for large ones.

Parsing a review, copying its object and diffing the result cost about a millisecond per
100 KiB; for the 3 MiB objects Kubernetes may send, tens of milliseconds during which the
shared event loop (informers, the scheduler, every other server) would stand still. Work for a
body of ``threshold_bytes`` or more therefore runs on a small thread pool: the GIL still
serialises Python, but the loop gets its turns in between instead of waiting for the whole
step. Small bodies, nearly all of them, stay inline: a thread hop would cost more than the work.
The pool's size bounds how many large bodies are being expanded into objects at once; the
server's buffered-bytes budget (``kube.http_limits``) bounds how many wait for it.

Work that runs long in Python holds the GIL all along, and a thread then starves the loop as
much as running inline would: a 7 MiB ConversionReview of thousands of objects takes a few
hundred milliseconds, and anyone may send one (the webhook port has no client authentication).
Such work (``run_apart``) goes to one worker process at a lower CPU priority, bytes in and
bytes out, so the loop keeps answering admissions meanwhile.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

T = TypeVar("T")

THRESHOLD_BYTES = 64 * 1024
WORKERS = 2
# One process: it bounds the CPU a flood of large conversions can take to one core, and at
# nice 10 the loop's process wins the CPU whenever both want it.
PROCESS_WORKERS = 1
PROCESS_NICE = 10


def _lower_priority() -> None:
    os.nice(PROCESS_NICE)


class WorkerLane:
    def __init__(self, threshold_bytes: int = THRESHOLD_BYTES, workers: int = WORKERS) -> None:
        self.threshold_bytes = threshold_bytes
        self._workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self._processes: ProcessPoolExecutor | None = None

    async def run(self, size: int, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``: inline when ``size`` (the body's bytes) is small, else on a worker."""
        if size < self.threshold_bytes:
            return fn(*args)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="webhook-large-body")
        return await asyncio.get_running_loop().run_in_executor(self._pool, partial(fn, *args))

    async def run_apart(self, size: int, fn: Callable[[bytes], bytes], body: bytes) -> bytes:
        """``fn(body)``: inline when ``size`` is small, else in the worker process (started on
        first use, from a fresh interpreter: forking a process that runs threads is unsafe)."""
        if size < self.threshold_bytes:
            return fn(body)
        if self._processes is None:
            spawn = multiprocessing.get_context("spawn")
            self._processes = ProcessPoolExecutor(PROCESS_WORKERS, mp_context=spawn,
                                                  initializer=_lower_priority)
        return await asyncio.get_running_loop().run_in_executor(self._processes, fn, body)

    async def close(self) -> None:
        """Stop the workers. The process pool is waited for (off the loop): left running, its
        manager thread may close its wake-up pipe while the interpreter's exit hook writes to
        it, an EBADF traceback at exit (CPython's ProcessPoolExecutor, 3.11)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        if self._processes is not None:
            processes, self._processes = self._processes, None
            await asyncio.to_thread(processes.shutdown, wait=True, cancel_futures=True)
