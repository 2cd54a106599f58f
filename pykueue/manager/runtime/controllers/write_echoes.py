"""Our own Workload writes until the informer shows them.

The informer's copy trails the API: right after a status write it may still be the version
the write replaced, or one before it when several writes of the same Workload follow each
other faster than the watch delivers them. A later write computed over such a copy would
either fail its ``resourceVersion`` precondition or, worse, be skipped as "already stored"
when the old copy happens to equal what the core wants now (an admission taken back and
made again before the watch caught up), leaving the API behind the core for good.

So each write's result is kept until the informer delivers it or a later version. Which
of two versions is later: Kubernetes (KEP-5504, GA in 1.35) lets clients compare the
resource versions of one resource as integers. Where a server's versions are not such
integers, only what is known is used: the versions a kept write supersedes (the copy it was
written over, and whatever an earlier kept write superseded).

* informer copy older than our result -> write over our result (trusted);
* informer copy is our result or later -> forget it, the informer copy is current;
* order unknown -> write over the informer copy, untrusted while a write of ours is kept
  (a stale copy then costs a 409 and a read, not a skipped write).
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def resource_version(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def compare_versions(a: str, b: str) -> int | None:
    """-1, 0 or 1 as version ``a`` is older than, equal to or newer than ``b`` (of the same
    resource); None unless both are positive integers written without leading zeros."""
    if not (_comparable(a) and _comparable(b)):
        return None
    x, y = int(a), int(b)
    return (x > y) - (x < y)


def _comparable(v: str) -> bool:
    return v.isascii() and v.isdigit() and not v.startswith("0")


class WriteEchoes:
    def __init__(self) -> None:
        # key -> (versions our last write supersedes, the object the API returned for it)
        self._pending: dict[str, tuple[frozenset[str], JSON]] = {}

    def __contains__(self, key: str) -> bool:
        return key in self._pending

    def _behind(self, key: str, cached: JSON) -> bool | None:
        """Whether the informer copy is older than our kept write (None: cannot tell)."""
        superseded, ours = self._pending[key]
        have, written = resource_version(cached), resource_version(ours)
        order = compare_versions(have, written)
        if order is not None:
            return order < 0
        if have in superseded:
            return True
        return False if have == written else None

    def copy_to_write_over(self, key: str, cached: JSON | None) -> tuple[JSON | None, bool]:
        """The copy to write over and whether it may be trusted to skip an equal write."""
        entry = self._pending.get(key)
        if entry is None:
            return cached, True
        if cached is None:
            return entry[1], True
        behind = self._behind(key, cached)
        if behind:
            return entry[1], True  # the informer has not caught up with our write yet
        if behind is None:
            return cached, False
        del self._pending[key]
        return cached, True

    def wrote(self, key: str, base: JSON, written: JSON, cached: JSON | None) -> None:
        """A write over ``base`` returned ``written``; ``cached`` is the informer's copy now."""
        previous = self._pending.get(key)
        superseded = {resource_version(base)}
        if previous is not None:
            superseded |= previous[0] | {resource_version(previous[1])}
        self._pending[key] = (frozenset(superseded), written)
        if cached is None:
            return
        behind = self._behind(key, cached)
        if behind:
            return
        if behind is False or previous is None:
            del self._pending[key]  # caught up already (the echo came before the response)
        else:
            self._pending[key] = previous  # a version we cannot place: the older entry decides

    def covers(self, key: str, obj: JSON) -> bool:
        """``obj`` is our kept write or a version before it (or one that cannot be placed while
        a write is kept): nothing in it is another writer's news."""
        entry = self._pending.get(key)
        if entry is None:
            return False
        order = compare_versions(resource_version(obj), resource_version(entry[1]))
        return order is None or order <= 0

    def seen(self, key: str, obj: JSON) -> None:
        """The informer delivered ``obj``: forget our write once this is it or later."""
        if key in self._pending and self._behind(key, obj) is False:
            del self._pending[key]

    def forget(self, key: str) -> None:
        self._pending.pop(key, None)
