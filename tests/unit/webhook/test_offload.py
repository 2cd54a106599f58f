"""Large conversions run in a worker process, small ones inline."""

from __future__ import annotations

import os

import pytest

from pykueue.webhook.offload import THRESHOLD_BYTES, WorkerLane


def pid_and_nice(body: bytes) -> bytes:
    return f"{os.getpid()} {os.nice(0)} {len(body)}".encode()


async def test_large_work_runs_in_a_lower_priority_process_and_small_work_inline() -> None:
    lane = WorkerLane()
    try:
        small = (await lane.run_apart(10, pid_and_nice, b"x" * 10)).split()
        large = (await lane.run_apart(THRESHOLD_BYTES, pid_and_nice, b"x" * THRESHOLD_BYTES)).split()
        again = (await lane.run_apart(THRESHOLD_BYTES, pid_and_nice, b"y")).split()
    finally:
        await lane.close()
    assert int(small[0]) == os.getpid()
    assert int(large[0]) != os.getpid() and int(large[1]) > os.nice(0)
    assert int(large[2]) == THRESHOLD_BYTES
    assert again[0] == large[0]  # one worker, kept
    with pytest.raises(ProcessLookupError):  # closing waited for the worker to exit
        os.kill(int(large[0]), 0)
