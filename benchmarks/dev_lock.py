"""One benchmark at a time on the dev cluster.

``kueue_perf`` and ``status_write_cost`` stop the dev cluster's pykueue, run their own
manager and start pykueue again when done. Two of them at once stop each other's manager,
delete each other's queues and measure each other's load, so the second one is refused
while the first holds this lock: an advisory ``flock`` on a file beside the dev cluster's
state directory (not in it: ``pykueue dev down`` removes that directory), released by the
kernel when the holder exits, even if it is killed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from pykueue.devcluster import cluster


class DevClusterUnavailable(Exception):
    """Another benchmark holds the dev cluster, or its lock file cannot be opened."""


def lock_path() -> Path:
    root = cluster.layout().root
    return root.parent / f".{root.name}.benchmark.lock"


@contextlib.contextmanager
def holding_dev_cluster(benchmark: str) -> Iterator[None]:
    """Hold the dev cluster for ``benchmark`` or raise :class:`DevClusterUnavailable` at
    once, naming the holder (its own note in the lock file)."""
    path = lock_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = path.open("a+")
    except OSError as exc:
        raise DevClusterUnavailable(f"cannot open the dev cluster's lock {path}: "
                                    f"{exc.strerror or exc}") from None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "a benchmark"
            raise DevClusterUnavailable(f"the dev cluster is in use by {holder}; "
                                        f"wait for it to finish") from None
        lock.seek(0)
        lock.truncate()
        lock.write(f"{benchmark} (pid {os.getpid()}, since {time.strftime('%H:%M:%S')})\n")
        lock.flush()
        try:
            yield
        finally:
            lock.truncate(0)
            fcntl.flock(lock, fcntl.LOCK_UN)
