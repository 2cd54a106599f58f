"""Pausing Python's cyclic garbage collector while a snapshot is built and run.

Loading tens of thousands of Workloads allocates millions of small containers that all stay
alive; the collector's generational passes over them cost a third of a what-if's time and
free nothing. They are paused for the duration and resumed (when they were on) afterwards;
reference counting still frees everything that is not in a cycle.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_collection() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
