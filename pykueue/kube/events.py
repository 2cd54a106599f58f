"""Posting Kubernetes Events (``events.k8s.io/v1``) without slowing or risking the caller.

Callers hand over :class:`api.events.EventRecord` values with :meth:`EventRecorder.record`,
which never awaits and never raises: it counts, rate-limits and queues, and a few worker
tasks send. What the recorder does, as client-go's event broadcaster does it in spirit:

- Series: the same event (same object, type, reason, action, reporter and note) again
  within ``window_s`` of its last occurrence is not a new Event object: the first one's
  ``series`` (``count``, ``lastObservedTime``) is updated with a PATCH, at most once per
  ``update_interval_s`` per series (client-go batches them in a 30-minute heartbeat; a
  count a few seconds behind is the price of not writing once per repeat). Repeats that
  arrive while an update waits ride along with it, and a repeat before the first POST has
  gone out is sent as the POST's series. An Event the API has dropped meanwhile (its TTL,
  default 1 h) is created again.
- Rate limits, dropping rather than queueing: a token bucket per object (``per_object``:
  burst, refill per second) so one noisy object cannot take the others' share, and one for
  all (``overall``) so a storm of decisions cannot become a storm of writes. A repeat that
  finds no token still counts (its series shows it with the next update that gets out).
- Bounded: at most ``max_pending`` sends wait; past that, events are dropped. Series are
  forgotten ``window_s`` after their last occurrence (and the oldest beyond ``max_series``).
- Failures are logged at debug level and dropped: an event is worth less than the work
  that caused it. Nothing is retried except an update whose Event is gone (created again).

The transport is injected (a callable taking one :class:`Request`), so the rules are tested
against a recorder of requests; :func:`client_transport` sends through a ``KubeClient``.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from pykueue.api.access import ApiAccess
from pykueue.api.events import EventRecord, truncate_note
from pykueue.api.wire import JSON
from pykueue.kube import resources as res
from pykueue.kube.client import MERGE_PATCH, ApiError, KubeClient
from pykueue.kube.workqueue import WorkQueue

log = logging.getLogger(__name__)

# The calls this module makes, as RBAC (``api.access``): events.k8s.io Events are created
# and their series patched; core (v1) Events are never written, nor Events read.
API_ACCESS: Final[tuple[ApiAccess, ...]] = (res.EVENTS.access("create", "patch"),)

# Defaults (see the module docstring). Per object: 25 at once, then one every 5 s. For all:
# 100 at once, then 20 a second, a small share of the 300 QPS Kueue's configuration gives
# the manager's own requests. client-go's broadcaster queues at most 1000 events too.
SERIES_WINDOW_S: Final = 600.0
SERIES_UPDATE_INTERVAL_S: Final = 10.0
PER_OBJECT: Final = (25, 0.2)
OVERALL: Final = (100, 20.0)
MAX_PENDING: Final = 1000
MAX_SERIES: Final = 10_000
WORKERS: Final = 4
_NAME_LIMIT: Final = 253
_INSTANCE_LIMIT: Final = 128


@dataclass(frozen=True)
class Request:
    """One API request of the recorder: POST a new Event, or PATCH one's series."""

    method: str
    path: str
    body: JSON


Transport = Callable[[Request], Awaitable[JSON]]
"""Send one request; raise ``ApiError`` for an answer that is not 2xx (others are failures too)."""


def client_transport(client: KubeClient) -> Transport:
    async def send(request: Request) -> JSON:
        if request.method == "POST":
            return await client.create(request.path, request.body)
        return await client.patch(request.path, request.body, content_type=MERGE_PATCH)
    return send


def micro_time(t: float) -> str:
    """A ``MicroTime`` (RFC 3339 with microseconds), as Event times are written."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class TokenBucket:
    """Try-take token bucket: a token now, or no (the caller drops instead of waiting)."""

    __slots__ = ("burst", "last", "rate", "tokens")

    def __init__(self, burst: int, rate: float, now: float) -> None:
        self.burst, self.rate = burst, rate
        self.tokens, self.last = float(burst), now

    def _refill(self, now: float) -> None:
        self.tokens = min(float(self.burst), self.tokens + max(0.0, now - self.last) * self.rate)
        self.last = now

    def available(self, now: float) -> bool:
        self._refill(now)
        return self.tokens >= 1.0

    def take(self) -> None:
        self.tokens -= 1.0

    def full(self, now: float) -> bool:
        self._refill(now)
        return self.tokens >= self.burst


SeriesKey = tuple[str, str, str, str, str, str]  # object, type, reason, action, reporter, note


@dataclass
class _Series:
    event: EventRecord
    name: str  # of the Event object, chosen before it is created
    first_time: float  # wall clock: the Event's eventTime
    count: int = 1
    last_time: float = 0.0  # wall clock of the latest occurrence
    last_seen: float = 0.0  # monotonic, for the window
    last_sent: float | None = None  # monotonic, when the API last took it
    sent_count: int = 0  # what the API has (0: not created)
    queued: bool = False  # a send of it waits: repeats ride along
    created: bool = False


@dataclass
class RecorderStats:
    recorded: int = 0
    posted: int = 0
    patched: int = 0
    rate_limited: int = 0
    queue_full: int = 0
    failed: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)


class EventRecorder:
    """See the module docstring. ``record`` from the event loop's thread only."""

    def __init__(self, transport: Transport, *, instance: str | None = None,
                 window_s: float = SERIES_WINDOW_S, per_object: tuple[int, float] = PER_OBJECT,
                 overall: tuple[int, float] = OVERALL, max_pending: int = MAX_PENDING,
                 max_series: int = MAX_SERIES, workers: int = WORKERS,
                 update_interval_s: float = SERIES_UPDATE_INTERVAL_S,
                 clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._send = transport
        self._host = instance if instance is not None else socket.gethostname()
        self.window_s = window_s
        self.per_object = per_object
        self.max_pending = max_pending
        self.max_series = max_series
        self.update_interval_s = update_interval_s
        self._clock = clock
        self._monotonic = monotonic
        self._overall = TokenBucket(overall[0], overall[1], monotonic())
        self._buckets: dict[str, TokenBucket] = {}
        self._series: OrderedDict[SeriesKey, _Series] = OrderedDict()
        self._last_name_ns = 0
        self.stats = RecorderStats()
        self._started = False
        self.queue: WorkQueue[SeriesKey] = WorkQueue(self._process, workers=workers, name="events",
                                                     clock=monotonic, sleep=sleep)

    # -- the caller's side: never waits, never raises ------------------------------------------

    def record(self, event: EventRecord) -> None:
        try:
            self._record(event)
        except Exception:  # a bug here must not cost the caller its work
            log.debug("recording event %s %s failed", event.reason, event.regarding.name, exc_info=True)

    def record_all(self, events: Iterable[EventRecord]) -> None:
        for event in events:
            self.record(event)

    def _record(self, event: EventRecord) -> None:
        now = self._monotonic()
        self.stats.recorded += 1
        self.stats.by_reason[event.reason] = self.stats.by_reason.get(event.reason, 0) + 1
        note = truncate_note(event.note)
        key: SeriesKey = (event.regarding.identity, event.type, event.reason, event.event_action,
                          event.reporter, note)
        self._forget_old(now)
        series = self._series.get(key)
        if series is not None:
            series.count += 1
            series.last_time = self._clock()
            series.last_seen = now
            self._series.move_to_end(key)
            if series.queued:
                return  # the send waiting for a worker carries this one too
            if not self._admit(event, now):
                return  # counted; told with the next update that gets a token
            series.queued = True
            wait = 0.0 if series.last_sent is None else series.last_sent + self.update_interval_s - now
            if wait > 0 and _in_event_loop():
                self.queue.add_after(key, wait)
            else:
                self.queue.add(key)
            return
        if not self._admit(event, now):
            return
        wall = self._clock()
        self._series[key] = _Series(_with_note(event, note), self._event_name(event, wall), wall,
                                    last_time=wall, last_seen=now, queued=True)
        self.queue.add(key)

    def _admit(self, event: EventRecord, now: float) -> bool:
        """Both buckets have a token (both are then spent) and the queue has room."""
        if len(self.queue) >= self.max_pending:
            self.stats.queue_full += 1
            return False
        identity = event.regarding.identity
        bucket = self._buckets.get(identity)
        if bucket is None:
            if len(self._buckets) >= self.max_series:
                self._prune_buckets(now)
            bucket = self._buckets[identity] = TokenBucket(self.per_object[0], self.per_object[1], now)
        if not (bucket.available(now) and self._overall.available(now)):
            self.stats.rate_limited += 1
            return False
        bucket.take()
        self._overall.take()
        return True

    def _prune_buckets(self, now: float) -> None:
        """Forget full buckets (a new one is the same); if that frees too little, the older
        half too, so the scan stays rare (an object forgotten gets a full burst back)."""
        kept = {k: b for k, b in self._buckets.items() if not b.full(now)}
        if len(kept) > self.max_series // 2:
            kept = dict(list(kept.items())[len(kept) - self.max_series // 2:])
        self._buckets = kept

    def _forget_old(self, now: float) -> None:
        while self._series:
            key, oldest = next(iter(self._series.items()))
            if now - oldest.last_seen <= self.window_s and len(self._series) < self.max_series:
                return
            del self._series[key]

    def _event_name(self, event: EventRecord, wall: float) -> str:
        # client-go's <object name>.<nanoseconds in hex>, unique within this recorder.
        stamp = max(int(wall * 1e9), self._last_name_ns + 1)
        self._last_name_ns = stamp
        suffix = f".{stamp:x}"
        return (event.regarding.name or "event")[:_NAME_LIMIT - len(suffix)] + suffix

    # -- the workers' side --------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers (once; later calls do nothing). Events recorded before wait for them."""
        if not self._started:
            self._started = True
            self.queue.start()

    async def stop(self, timeout_s: float = 2.0) -> None:
        """Send what is queued, series updates waiting for their interval too (for at most
        ``timeout_s``), then stop the workers."""
        for key, series in self._series.items():
            if series.queued:
                self.queue.add(key)
        await self.queue.shutdown(drain=True, timeout_s=timeout_s)

    def summary(self) -> str:
        s = self.stats
        return (f"{s.recorded} events recorded, {s.posted} created, {s.patched} series updates, "
                f"{s.rate_limited} rate-limited, {s.queue_full} dropped on a full queue, {s.failed} failed")

    async def _process(self, key: SeriesKey) -> None:
        series = self._series.get(key)
        if series is None:
            return None  # forgotten meanwhile
        series.queued = False
        if series.count == series.sent_count:
            return None
        count, last_time = series.count, series.last_time
        try:
            if series.created:
                try:
                    await self._send(self._series_update(series, count, last_time))
                    self.stats.patched += 1
                except ApiError as exc:
                    if not exc.not_found:
                        raise
                    # Gone (its TTL ran out): a new Event carries the series on.
                    series.created = False
                    series.name = self._event_name(series.event, self._clock())
                    await self._send(self._creation(series, count, last_time))
                    self.stats.posted += 1
            else:
                await self._send(self._creation(series, count, last_time))
                self.stats.posted += 1
            series.created = True
            series.sent_count = count
            series.last_sent = self._monotonic()
        except Exception as exc:
            self.stats.failed += 1
            ref = series.event.regarding
            log.debug("event %s on %s %s/%s not recorded: %s", series.event.reason, ref.kind, ref.namespace,
                      ref.name, exc)
        return None

    def _namespace(self, series: _Series) -> str:
        return series.event.regarding.namespace or "default"

    def _creation(self, series: _Series, count: int, last_time: float) -> Request:
        event = series.event
        body: JSON = {
            "apiVersion": res.EVENTS.api_version, "kind": "Event",
            "metadata": {"name": series.name, "namespace": self._namespace(series)},
            "eventTime": micro_time(series.first_time),
            "reportingController": event.reporter,
            "reportingInstance": f"{event.reporter}-{self._host}"[:_INSTANCE_LIMIT],
            "action": event.event_action,
            "reason": event.reason,
            "note": event.note,
            "type": event.type,
            "regarding": event.regarding.to_wire(),
        }
        if count > 1:
            body["series"] = {"count": count, "lastObservedTime": micro_time(last_time)}
        return Request("POST", res.EVENTS.collection_path(self._namespace(series)), body)

    def _series_update(self, series: _Series, count: int, last_time: float) -> Request:
        return Request("PATCH", res.EVENTS.object_path(series.name, self._namespace(series)),
                       {"series": {"count": count, "lastObservedTime": micro_time(last_time)}})


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _with_note(event: EventRecord, note: str) -> EventRecord:
    if note == event.note:
        return event
    return EventRecord(event.regarding, event.reason, note, event.reporter, event.type, event.action)
