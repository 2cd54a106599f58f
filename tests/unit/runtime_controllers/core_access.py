"""White-box access to the queueing core, for tests that stage what none of its events does
alone: a status write owed for records that did not change (as after a rebuild re-routed
them). Production code reads the core only through its queries (test_core_boundary)."""

from __future__ import annotations

from pykueue.manager.core.engine import QueueingCore


def owe_status_writes(core: QueueingCore, *keys: str) -> None:
    """The statuses of ``keys`` are to be written again at the next ``take_changes``."""
    core._changes.written.update(keys)
