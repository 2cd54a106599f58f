"""Deciding that Kueue has nothing left to do.

Kueue gives no "idle" signal, so the harness watches what Kueue writes: the
resourceVersions of every Workload, ClusterQueue and LocalQueue. Idle means none of them
changed for a quiet period longer than Kueue's own batching delays (requeueing parked
workloads waits about a second), the harness's own emulation (pods becoming ready) had
nothing left to write, and the stored state is one Kueue leaves only when it is done (see
``unsettled``): a quiet period alone ends early on a loaded machine, where Kueue may not
get the CPU to write anything for seconds. A bounded deadline turns a Kueue that never
settles into a reported difference instead of a hang.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pykueue.kube import resources
from pykueue.kube.blocking import BlockingClient

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


def _conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {
        str(c.get("type")): str(c.get("status")) for c in (obj.get("status") or {}).get("conditions") or ()
    }


def unsettled(
    workloads: list[dict[str, Any]],
    cluster_queues: list[dict[str, Any]],
    never_ready: frozenset[str] = frozenset(),
) -> list[str]:
    """What shows that Kueue (or the harness playing the cluster around it) still has work:
    a queued Workload it has not looked at yet (every attempt writes a QuotaReserved
    condition), an eviction not finished (quota still reserved), an admitted Workload whose
    pods are not reported ready, or a ClusterQueue whose reserving count lags behind the
    Workloads that hold its quota (Kueue writes queue status after admitting)."""
    reasons: list[str] = []
    reserving: dict[str, int] = {}
    for wl in workloads:
        meta = wl.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        spec = wl.get("spec") or {}
        conditions = _conditions(wl)
        if conditions.get("Finished") == "True":
            continue
        if (
            "QuotaReserved" not in conditions
            and spec.get("queueName")
            and spec.get("active", True) is not False
        ):
            reasons.append(f"{key} not yet evaluated")
        reserved = conditions.get("QuotaReserved") == "True"
        if reserved and conditions.get("Evicted") == "True":
            reasons.append(f"{key} still being evicted")
        if (
            conditions.get("Admitted") == "True"
            and conditions.get("PodsReady") != "True"
            and key not in never_ready
        ):
            reasons.append(f"{key} admitted, pods not ready")
        cq = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue")
        if reserved and cq:
            reserving[str(cq)] = reserving.get(str(cq), 0) + 1
    for cq in cluster_queues:
        name = str((cq.get("metadata") or {}).get("name"))
        counted = int((cq.get("status") or {}).get("reservingWorkloads") or 0)
        if counted != reserving.get(name, 0):
            reasons.append(
                f"ClusterQueue {name} reports {counted} reserving, {reserving.get(name, 0)} stored"
            )
    return reasons


def wait_idle(
    client: BlockingClient,
    emulate: Callable[[], bool],
    *,
    never_ready: Callable[[], frozenset[str]] = frozenset,
    quiet_s: float = QUIET_S,
    deadline_s: float = DEADLINE_S,
) -> list[str]:
    """Poll until quiet and settled; ``emulate`` runs each round and says whether it wrote
    anything. Returns what was still going on when the deadline passed, empty when idle."""
    started = time.monotonic()
    last = fingerprint(client)
    quiet_since = time.monotonic()
    busy = ["objects kept changing"]
    while time.monotonic() - started < deadline_s:
        time.sleep(_POLL_S)
        wrote = emulate()
        now = fingerprint(client)
        if wrote or now != last:
            last, quiet_since = now, time.monotonic()
            busy = ["objects kept changing"]
        elif time.monotonic() - quiet_since >= quiet_s:
            busy = unsettled(
                _items(client, resources.WORKLOADS), _items(client, resources.CLUSTER_QUEUES), never_ready()
            )
            if not busy:
                return []
    return busy


def _items(client: BlockingClient, ref: resources.ResourceRef) -> list[dict[str, Any]]:
    return list(client.get(ref.collection_path()).get("items") or ())
