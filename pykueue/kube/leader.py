"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.

Why these rules (they are client-go's, so a pykueue replica and a Go replica could share a
Lease): a candidate may take the Lease only when it is free (no holder) or when the holder's
record has not changed for ``lease_duration`` as measured on the candidate's *own* clock
since it last saw the record change -- clocks of different machines are never compared.
Every write carries the Lease's resourceVersion, so of two candidates racing for the same
record exactly one wins (the other gets 409). The leader renews every ``retry_period``; if it
cannot renew for ``renew_deadline`` (< lease_duration) it steps down *before* anyone else may
take over, so two leaders never overlap as long as clocks run at the same rate. On a graceful
shutdown the leader releases the Lease (empty holder, 1 s duration) so a successor starts at
once instead of waiting out the lease.

Kueue: Lease ``c1f6bfd2.kueue.x-k8s.io``, 15 s / 10 s / 2 s.

Our own because kubernetes-asyncio's ``leaderelection`` goes through its generated typed
client, outside the shared rate limit and request count every other call of the process uses.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import random
import time
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, Final

from pykueue.api.access import OWN_NAMESPACE, ApiAccess
from pykueue.api.wire import JSON
from pykueue.kube.client import ApiError, KubeClient
from pykueue.kube.resources import LEASES

log = logging.getLogger(__name__)

KUEUE_LEASE_NAME = "c1f6bfd2.kueue.x-k8s.io"
# The calls below, as RBAC: the Lease is read, created once, and compare-and-swapped (PUT) to
# acquire, renew and release it. Nothing lists, watches, patches or deletes it.
API_ACCESS: Final[tuple[ApiAccess, ...]] = (
    LEASES.access("get", "create", "update", namespace=OWN_NAMESPACE),
)
LEASE_DURATION_S = 15.0
RENEW_DEADLINE_S = 10.0
RETRY_PERIOD_S = 2.0
JITTER = 1.2  # client-go's JitterFactor for the acquire loop

StartedLeading = Callable[[], Coroutine[Any, Any, None]]
StoppedLeading = Callable[[], Awaitable[None] | None]


class LeaderWorkEnded(RuntimeError):
    """The leader's work stopped (an exception, or it returned) while the Lease was held."""


def micro_time(moment: datetime) -> str:
    """Kubernetes MicroTime: RFC 3339 with exactly six fractional digits, UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, client: KubeClient, *, namespace: str, identity: str, name: str = KUEUE_LEASE_NAME,
                 lease_duration_s: float = LEASE_DURATION_S, renew_deadline_s: float = RENEW_DEADLINE_S,
                 retry_period_s: float = RETRY_PERIOD_S, on_started_leading: StartedLeading | None = None,
                 on_stopped_leading: StoppedLeading | None = None,
                 on_new_leader: Callable[[str], None] | None = None,
                 on_lost_lease: Callable[[], None] | None = None, release_on_cancel: bool = True,
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        if not lease_duration_s > renew_deadline_s > retry_period_s * JITTER:
            raise ValueError("need lease_duration > renew_deadline > retry_period * 1.2")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration_s = lease_duration_s
        self.renew_deadline_s = renew_deadline_s
        self.retry_period_s = retry_period_s
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        # Called the moment renewal gives up, before the leading task is even cancelled: a
        # successor may lead once the Lease runs out, and nothing of ours may write after.
        self.on_lost_lease = on_lost_lease
        self.release_on_cancel = release_on_cancel
        self._clock = clock
        self._wall = wall_clock
        self._observed_spec: JSON | None = None
        self._observed_rv = ""
        self._observed_at = 0.0
        self._is_leader = False
        # When the Lease held by another runs out by our clock (None: not known): a candidate
        # tries again then rather than up to a retry period later.
        self._free_at: float | None = None
        self.leader_identity: str = ""
        """The holder this elector last saw in the Lease ("" = none)."""
        self.elected = asyncio.Event()
        self.stopped = asyncio.Event()

    @property
    def is_leader(self) -> bool:
        return self._is_leader

    def _path(self) -> str:
        return LEASES.object_path(self.name, self.namespace)

    def _record(self, acquire_time: str, transitions: int) -> JSON:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration_s)),
            "acquireTime": acquire_time,
            "renewTime": micro_time(self._wall()),
            "leaseTransitions": transitions,
        }

    def _observe(self, lease: JSON) -> None:
        spec = lease.get("spec") or {}
        rv = str((lease.get("metadata") or {}).get("resourceVersion", ""))
        if spec != self._observed_spec or rv != self._observed_rv:
            self._observed_spec = spec
            self._observed_rv = rv
            self._observed_at = self._clock()
        holder = str(spec.get("holderIdentity") or "")
        if holder != self.leader_identity:
            self.leader_identity = holder
            if holder and self.on_new_leader is not None:
                self.on_new_leader(holder)

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True if this elector holds the Lease afterwards."""
        timeout = self.renew_deadline_s
        now = micro_time(self._wall())
        try:
            lease = await self.client.request("GET", self._path(), timeout_s=timeout)
        except ApiError as exc:
            if not exc.not_found:
                log.warning("leader election: reading Lease %s/%s failed: %s", self.namespace, self.name, exc)
                return False
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": self._record(now, 0)}
            try:
                created = await self.client.request("POST", LEASES.collection_path(self.namespace),
                                                    body=body, timeout_s=timeout)
            except ApiError as create_exc:
                log.info("leader election: creating Lease failed: %s", create_exc)
                return False
            self._observe(created)
            return True
        self._observe(lease)
        spec: JSON = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration_s)
        if holder and holder != self.identity and self._observed_at + duration > self._clock():
            self._free_at = self._observed_at + duration
            return False
        if holder == self.identity:
            record = self._record(str(spec.get("acquireTime") or now), int(spec.get("leaseTransitions") or 0))
        else:
            record = self._record(now, int(spec.get("leaseTransitions") or 0) + 1)
        # resourceVersion in the body makes the PUT a compare-and-swap.
        body = {**lease, "spec": {**spec, **record}}
        try:
            updated = await self.client.request("PUT", self._path(), body=body, timeout_s=timeout)
        except ApiError as exc:
            log.info("leader election: updating Lease failed: %s", exc)
            return False
        self._observe(updated)
        return True

    async def _acquire(self) -> None:
        while True:
            self._free_at = None
            try:
                if await self.try_acquire_or_renew():
                    return
            except Exception as exc:  # network, timeout, malformed answer: all mean "not this time"
                log.warning("leader election: acquire attempt failed: %s", exc)
            await asyncio.sleep(self._acquire_pause())

    def _acquire_pause(self) -> float:
        """Until the next attempt: half a retry period (jittered), so a holder's last renewal
        is seen sooner and its Lease runs out sooner by our clock (a killed leader's term
        then ends about a second earlier), or exactly until the Lease runs out when that
        comes first. Taking over stays as safe as client-go's: only a record unchanged for
        the whole lease duration since we last saw it change may be taken."""
        pause = self.retry_period_s / 2 * (1.0 + random.random() * (JITTER - 1.0))
        if self._free_at is not None:
            pause = min(pause, max(0.0, self._free_at - self._clock()) + 0.01)
        return pause

    async def _renew_until_lost(self) -> None:
        """Renew every retry period; return when no renewal succeeded within the renew deadline."""
        while True:
            started = self._clock()
            renewed = False
            while self._clock() - started < self.renew_deadline_s:
                try:
                    left = max(0.001, self.renew_deadline_s - (self._clock() - started))
                    # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
                    # that arrives as the attempt completes, and the elector would never stop.
                    async with asyncio.timeout(left):
                        renewed = await self.try_acquire_or_renew()
                except Exception as exc:  # network, timeout, malformed answer: all mean "not this time"
                    log.warning("leader election: renew attempt failed: %s", exc)
                if renewed:
                    break
                await asyncio.sleep(self.retry_period_s)
            if not renewed:
                return
            await asyncio.sleep(self.retry_period_s)

    async def run(self) -> None:
        """Campaign, lead until leadership is lost, then return (callers usually exit then).

        Cancelling ``run`` is the graceful path: the leading task is cancelled and, with
        ``release_on_cancel``, the Lease is released for an immediate hand-over.

        The leader's work ending ends the term: a leader whose scheduling died must not keep
        renewing (admission would stop cluster-wide with every probe green). The Lease is
        released at once and the work's exception raised (:class:`LeaderWorkEnded`), so the
        process exits and a replica that can work takes over.
        """
        leading: asyncio.Task[None] | None = None
        renewing: asyncio.Task[None] | None = None
        led = False
        try:
            await self._acquire()
            led = self._is_leader = True
            self.elected.set()
            log.info("leader election: %s became leader of %s/%s", self.identity, self.namespace, self.name)
            if self.on_started_leading is not None:
                leading = asyncio.create_task(self.on_started_leading(), name="leading")
            renewing = asyncio.create_task(self._renew_until_lost(), name="renewing")
            await asyncio.wait({t for t in (leading, renewing) if t is not None},
                               return_when=asyncio.FIRST_COMPLETED)
            if leading is not None and leading.done():
                failure = None if leading.cancelled() else leading.exception()
                log.error("leader election: %s's leader work ended (%s); giving up %s/%s", self.identity,
                          repr(failure) if failure else "returned", self.namespace, self.name)
                await self._cancel(renewing)  # no renewal may race the release
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.release())
                raise LeaderWorkEnded(f"the leader's work ended: {failure!r}") from failure
            log.warning("leader election: %s lost the Lease %s/%s", self.identity, self.namespace, self.name)
            self._is_leader = False
            if self.on_lost_lease is not None:
                self.on_lost_lease()
        except asyncio.CancelledError:
            if led and self.release_on_cancel:
                # Stop the leader-only work (and renewing) before the Lease is free for someone else.
                await self._cancel(renewing)
                await self._cancel(leading)
                leading = None
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.release())
            raise
        finally:
            await self._cancel(renewing)
            self._is_leader = False
            self.elected.clear()
            await self._cancel(leading)
            if led and self.on_stopped_leading is not None:
                result: Any = self.on_stopped_leading()
                if inspect.isawaitable(result):
                    await result
            self.stopped.set()

    @staticmethod
    async def _cancel(task: asyncio.Task[None] | None) -> None:
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    async def release(self) -> bool:
        """Give the Lease up if we hold it: empty holder, so the next candidate need not wait."""
        try:
            lease = await self.client.request("GET", self._path(), timeout_s=self.renew_deadline_s)
        except Exception as exc:
            log.warning("leader election: release could not read the Lease: %s", exc)
            return False
        spec: JSON = lease.get("spec") or {}
        if spec.get("holderIdentity") != self.identity:
            return False
        now = micro_time(self._wall())
        released = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now,
                    "renewTime": now}
        try:
            updated = await self.client.request("PUT", self._path(), body={**lease, "spec": released},
                                                timeout_s=self.renew_deadline_s)
        except Exception as exc:
            log.warning("leader election: release failed: %s", exc)
            return False
        self._is_leader = False
        self._observe(updated)
        log.info("leader election: %s released %s/%s", self.identity, self.namespace, self.name)
        return True
