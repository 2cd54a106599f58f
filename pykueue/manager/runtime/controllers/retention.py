"""``objectRetentionPolicies.workloads.afterFinished``: finished Workloads are deleted later.

The rule is pure (:func:`deletion_due`: when a Workload may go, from its Finished
condition's transition time), the loop is thin: it reads the Workload informer's cache,
deletes what is due with a UID precondition (a namesake created since is never touched),
and sleeps until the next deadline or until a Workload changes. Only the leader runs it,
as in Kueue, where the workload controller's retention is leader-only work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.access import ApiAccess
from pykueue.api.events import DiscardEvents, EventSink
from pykueue.api.wire import JSON
from pykueue.kube import resources as res
from pykueue.kube.client import REQUEST_ERRORS, ApiError, KubeClient
from pykueue.kube.informer import EventType, Informer
from pykueue.manager.core.config import ConfigError, parse_duration
from pykueue.manager.core.events import retention_deleted
from pykueue.manager.core.objects import parse_time

log = logging.getLogger(__name__)

RETRY_S = 5.0  # a deletion that failed (API unreachable or refusing) is tried again after this
# Its one call, as RBAC (``api.access``): a finished Workload deleted (it reads the informer's cache).
API_ACCESS: tuple[ApiAccess, ...] = (res.WORKLOADS.access("delete"),)


def after_finished(config: Mapping[str, Any]) -> float | None:
    """Seconds a finished Workload is kept, or None to keep it forever (Kueue's default)."""
    policies = config.get("objectRetentionPolicies") or {}
    value = (policies.get("workloads") or {}).get("afterFinished") if isinstance(policies, dict) else None
    if value is None:
        return None
    seconds = parse_duration(value)
    if seconds < 0:
        raise ConfigError(f"objectRetentionPolicies.workloads.afterFinished must not be negative: {value!r}")
    return seconds


def deletion_due(workload: Mapping[str, Any], after_s: float) -> float | None:
    """When a Workload may be deleted: ``after_s`` past its Finished transition; None if not finished."""
    for cond in (workload.get("status") or {}).get("conditions") or ():
        if cond.get("type") == keys.WorkloadCondition.FINISHED and cond.get("status") == "True":
            finished = parse_time(cond.get("lastTransitionTime"))
            return (finished if finished is not None else 0.0) + after_s
    return None


class FinishedRetention:
    def __init__(self, client: KubeClient, workloads: Informer, after_s: float,
                 events: EventSink | None = None) -> None:
        self.client, self.workloads, self.after_s = client, workloads, after_s
        self.events: EventSink = events if events is not None else DiscardEvents()
        self._changed = asyncio.Event()
        workloads.add_handler(self._on_event)

    def _on_event(self, event: EventType, obj: JSON, old: JSON | None) -> None:
        if event != EventType.DELETED:
            self._changed.set()

    async def run(self) -> None:
        while True:
            self._changed.clear()
            next_due = await self.sweep(time.time())
            timeout = None if next_due is None else max(0.0, next_due - time.time())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._changed.wait()

    async def sweep(self, now: float) -> float | None:
        """Delete every Workload due by ``now``; returns the next deadline, if any (a failed
        deletion makes one ``RETRY_S`` from ``now``)."""
        next_due: float | None = None
        for wl in self.workloads.items():
            due = deletion_due(wl, self.after_s)
            if due is None:
                continue
            if due > now:
                next_due = due if next_due is None else min(next_due, due)
                continue
            meta = wl["metadata"]
            try:
                await self.client.delete(res.WORKLOADS.object_path(meta["name"], meta["namespace"]),
                                         {"kind": "DeleteOptions", "apiVersion": "v1",
                                          "preconditions": {"uid": meta.get("uid")},
                                          "propagationPolicy": "Background"})
                log.info("deleted finished Workload %s/%s (retention %.0fs)", meta["namespace"], meta["name"],
                         self.after_s)
                self.events.record(retention_deleted(wl))
            except REQUEST_ERRORS as exc:
                if isinstance(exc, ApiError) and (exc.not_found or exc.conflict):
                    continue  # gone already, or changed: its own event brings it back
                log.warning("deleting finished Workload %s/%s failed: %s", meta["namespace"],
                            meta["name"], exc)
                retry = now + RETRY_S
                next_due = retry if next_due is None else min(next_due, retry)
        return next_due
