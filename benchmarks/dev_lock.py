"""One benchmark at a time on the dev cluster.

``kueue_perf`` and ``status_write_cost`` stop the dev cluster's pykueue, run their own
manager and start pykueue again when done. Two of them at once stop each other's manager,
delete each other's queues and measure each other's load, so the second one is refused
while the first holds this lock: an advisory ``flock`` on a file in the dev cluster's state
directory, released by the kernel when the holder exits, even if it is killed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator

from devcluster import cluster

LOCK_NAME = "benchmark.lock"


class DevClusterBusy(Exception):
    """Another benchmark holds the dev cluster."""


@contextlib.contextmanager
def holding_dev_cluster(benchmark: str) -> Iterator[None]:
    """Hold the dev cluster for ``benchmark`` or raise :class:`DevClusterBusy` at once,
    naming the holder (its own note in the lock file)."""
    root = cluster.layout().root
    root.mkdir(parents=True, exist_ok=True)
    with (root / LOCK_NAME).open("a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "a benchmark"
            raise DevClusterBusy(f"the dev cluster is in use by {holder}; wait for it to finish") from None
        lock.seek(0)
        lock.truncate()
        lock.write(f"{benchmark} (pid {os.getpid()}, since {time.strftime('%H:%M:%S')})\n")
        lock.flush()
        try:
            yield
        finally:
            lock.truncate(0)
            fcntl.flock(lock, fcntl.LOCK_UN)
