"""``objectRetentionPolicies.workloads``: finished Workloads, and jobs Kueue deactivated, go later.

``afterFinished``: the rule is pure (:func:`deletion_due`: when a Workload may go, from its
Finished condition's transition time), the loop is thin: it reads the Workload informer's
cache, deletes what is due with a UID precondition (a namesake created since is never
touched), and sleeps until the next deadline or until a Workload changes. Only the leader
runs it, as in Kueue, where the workload controller's retention is leader-only work.

``afterDeactivatedByKueue``: as in Kueue v0.19.2 it is the job reconciler's rule, not the
workload controller's. When a Workload is inactive and Evicted because Kueue deactivated it
(a reason ``DeactivatedDueTo<cause>``: rejected admission check, requeuing limit, maximum
execution time; never the user's plain ``Deactivated``), its job is deleted that long after
the Evicted transition, with background propagation, so its pods and the Workload (owned by
the job) follow through the garbage collector. :func:`deactivated_job_deletion_due` decides
when; ``controllers.jobs`` deletes and records Kueue's ``Deleted`` event on the job.
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
from pykueue.api.config import format_duration
from pykueue.api.events import DiscardEvents, EventSink
from pykueue.api.field_errors import invalid
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.kube import resources as res
from pykueue.kube.client import REQUEST_ERRORS, ApiError, KubeClient
from pykueue.kube.informer import EventType, Informer
from pykueue.manager.core.config import ConfigError, parse_duration
from pykueue.manager.core.events import retention_deleted
from pykueue.manager.core.objects import parse_time
from pykueue.manager.core.reasons import DEACTIVATED_BY_KUEUE_PREFIX

log = logging.getLogger(__name__)

NEGATIVE = "must be greater than or equal to 0"  # apimachinery's IsNegativeErrorMsg
RETRY_S = 5.0  # a deletion that failed (API unreachable or refusing) is tried again after this
# Its one call, as RBAC (``api.access``): a finished Workload deleted (it reads the informer's cache).
API_ACCESS: tuple[ApiAccess, ...] = (res.WORKLOADS.access("delete"),)


def _retention(config: Mapping[str, Any], name: str, quoted: bool) -> float | None:
    """Seconds of ``objectRetentionPolicies.workloads.<name>``, or None when unset (keep
    forever, Kueue's default). A negative one is refused in Kueue's words (its validation
    prints afterFinished's value bare and afterDeactivatedByKueue's quoted)."""
    policies = config.get("objectRetentionPolicies") or {}
    value = (policies.get("workloads") or {}).get(name) if isinstance(policies, dict) else None
    if value is None:
        return None
    seconds = parse_duration(value)
    if seconds < 0:
        shown = format_duration(seconds)
        path = f"objectRetentionPolicies.workloads.{name}"
        # (A bare value: Kueue's is a Duration, which prints itself.)
        error = invalid(path, shown, NEGATIVE) if quoted else \
            FieldError(path, f"Invalid value: {shown}: {NEGATIVE}")
        raise ConfigError(str(error))
    return seconds


def after_finished(config: Mapping[str, Any]) -> float | None:
    """Seconds a finished Workload is kept, or None to keep it forever (Kueue's default)."""
    return _retention(config, "afterFinished", quoted=False)


def after_deactivated_by_kueue(config: Mapping[str, Any]) -> float | None:
    """Seconds the job of a Workload Kueue deactivated is kept, or None to keep it forever."""
    return _retention(config, "afterDeactivatedByKueue", quoted=True)


def deletion_due(workload: Mapping[str, Any], after_s: float) -> float | None:
    """When a Workload may be deleted: ``after_s`` past its Finished transition; None if not finished."""
    for cond in (workload.get("status") or {}).get("conditions") or ():
        if cond.get("type") == keys.WorkloadCondition.FINISHED and cond.get("status") == "True":
            finished = parse_time(cond.get("lastTransitionTime"))
            return (finished if finished is not None else 0.0) + after_s
    return None


def deactivated_job_deletion_due(workload: Mapping[str, Any], after_s: float) -> float | None:
    """When the job of ``workload`` is deleted under afterDeactivatedByKueue: ``after_s`` past
    the Evicted transition of a Workload that is inactive and Evicted by a deactivation of
    Kueue's (reason ``DeactivatedDueTo...``). None when that does not hold, or the Workload
    is finished or being deleted (Kueue's job reconciler handles those before)."""
    if (workload.get("metadata") or {}).get("deletionTimestamp"):
        return None
    if (workload.get("spec") or {}).get("active", True) is not False:
        return None
    evicted: Mapping[str, Any] | None = None
    for cond in (workload.get("status") or {}).get("conditions") or ():
        if cond.get("type") == keys.WorkloadCondition.FINISHED and cond.get("status") == "True":
            return None
        if cond.get("type") == keys.WorkloadCondition.EVICTED:
            evicted = cond
    if evicted is None or evicted.get("status") != "True" or \
            not str(evicted.get("reason") or "").startswith(DEACTIVATED_BY_KUEUE_PREFIX):
        return None
    since = parse_time(evicted.get("lastTransitionTime"))
    return (since if since is not None else 0.0) + after_s


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
