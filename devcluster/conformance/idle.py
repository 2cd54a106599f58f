"""Deciding that Kueue has nothing left to do.

Kueue gives no "idle" signal, so the harness watches what Kueue writes: the
resourceVersions of every Workload, ClusterQueue and LocalQueue. Idle means none of them
changed for a quiet period longer than Kueue's own batching delays (requeueing parked
workloads waits about a second), and the harness's own emulation (pods becoming ready)
had nothing left to write. A bounded deadline turns a Kueue that never settles into a
reported difference instead of a hang.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kube import resources
from kube.blocking import BlockingClient

QUIET_S = 2.5
DEADLINE_S = 60.0
_POLL_S = 0.2
_WATCHED = (resources.WORKLOADS, resources.CLUSTER_QUEUES, resources.LOCAL_QUEUES)


def fingerprint(client: BlockingClient) -> frozenset[tuple[str, str, str]]:
    seen: set[tuple[str, str, str]] = set()
    for ref in _WATCHED:
        for item in client.get(ref.collection_path()).get("items") or ():
            meta = item.get("metadata") or {}
            seen.add(
                (
                    ref.kind,
                    f"{meta.get('namespace', '')}/{meta.get('name')}",
                    str(meta.get("resourceVersion")),
                )
            )
    return frozenset(seen)


def wait_idle(
    client: BlockingClient,
    emulate: Callable[[], bool],
    *,
    quiet_s: float = QUIET_S,
    deadline_s: float = DEADLINE_S,
) -> bool:
    """Poll until quiet; ``emulate`` runs each round and says whether it wrote anything.
    False when the deadline passed first."""
    started = time.monotonic()
    last = fingerprint(client)
    quiet_since = time.monotonic()
    while time.monotonic() - started < deadline_s:
        time.sleep(_POLL_S)
        wrote = emulate()
        now = fingerprint(client)
        if wrote or now != last:
            last, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_s:
            return True
    return False
