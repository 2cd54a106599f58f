"""Quota freed in the core reaches the API before the admissions that reuse it.

The core releases a workload's quota the moment it finishes or is evicted, and may admit
another workload into that room in the next cycle. Both become status writes, and the
writes run in parallel: had the admission landed first, the API would show both holding
quota at once (over the ClusterQueue's quota), and a manager killed between the two
writes would leave it so. Kueue never shows that: its cache frees quota only once the
Finished or evicted Workload has been stored.

So an admission decided while releases were unwritten waits for those writes (only
those: later releases do not hold it back). It waits as long as they take: the writer
retries a release until it is stored or its Workload is gone, and letting the admission
go first would show more admitted than the quota (an API away for a minute holds
admissions for that minute, and loses none). A release that has waited ``max_wait_s`` is
logged once, so a stuck write is visible. Bookkeeping only; the manager calls it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class ReleaseOrder:
    def __init__(self, max_wait_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_wait_s, self._clock = max_wait_s, clock
        self._since: dict[str, float] = {}  # released key -> when
        self._seq = 0
        self._unwritten: dict[str, int] = {}  # released key -> sequence number, oldest first
        self._needs: dict[str, int] = {}  # admitted key -> releases it must see written first
        self._blocked: set[str] = set()
        self._reported: set[str] = set()  # releases already logged as slow

    def released(self, keys: set[str]) -> None:
        """The core released these keys' quota; their status writes are owed."""
        now = self._clock()
        for key in sorted(keys):
            self._needs.pop(key, None)  # its reservation is gone; a new one waits afresh
            self._seq += 1
            self._unwritten.pop(key, None)  # keep the dict ordered by sequence number
            self._unwritten[key] = self._seq
            self._since[key] = now

    def admitted(self, keys: set[str]) -> None:
        """These keys hold quota now, possibly room that an unwritten release freed. A key
        already waiting keeps what it waits for: the room it took was freed before its
        reservation, and a later change of the same reservation takes no new room. Bumping
        it to the newest release instead starved admissions while releases kept coming."""
        if not self._unwritten:
            return
        for key in keys:
            self._needs.setdefault(key, self._seq)

    def token(self, key: str) -> int | None:
        """The key's unwritten release as of now: a write rendered after this call covers it."""
        return self._unwritten.get(key)

    def may_write(self, key: str) -> bool:
        """Whether the key's holding status may be written now; if not, it is held until
        ``written`` reports the releases it waits for."""
        need = self._needs.get(key)
        if need is None:
            return True
        now = self._clock()
        for other, seq in list(self._unwritten.items()):
            if seq > need:
                break
            if other == key:  # its own release is overtaken by this write
                continue
            if now - self._since[other] > self.max_wait_s and other not in self._reported:
                self._reported.add(other)
                log.warning("the release of %s is not written after %.0fs; admissions reusing its "
                            "quota wait for it", other, self.max_wait_s)
            self._blocked.add(key)
            return False
        del self._needs[key]
        self._blocked.discard(key)
        return True

    def written(self, key: str, token: int | None) -> set[str]:
        """The key's status, rendered after ``token`` was taken, was written (or needs no
        write any more); returns the held keys to try again. A release newer than the token
        stays owed: the write may have rendered the state before it."""
        if token is None or self._unwritten.get(key) != token:
            return set()
        del self._unwritten[key]
        self._since.pop(key, None)
        self._reported.discard(key)
        if not self._blocked:
            return set()
        retry, self._blocked = self._blocked, set()
        return retry

    def take_blocked(self) -> set[str]:
        """Every held key, to try again (and to log releases that are slow to be written)."""
        blocked, self._blocked = self._blocked, set()
        return blocked

    @property
    def unwritten(self) -> int:
        return len(self._unwritten)
