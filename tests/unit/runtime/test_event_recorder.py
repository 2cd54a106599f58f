"""The event recorder: series instead of duplicates, rate limits that drop, a bounded queue,
failures that never reach the caller.

The transport is a plain recorder of requests (what would have gone to kube-apiserver),
answering as the API would (or failing on demand); both clocks are fake, so windows and
refills are exact.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from pykueue.api.events import NORMAL, WARNING, EventRecord, ObjectReference
from pykueue.api.wire import JSON
from pykueue.kube.client import ApiError
from pykueue.kube.events import EventRecorder, Request, micro_time

EVENTS = "/apis/events.k8s.io/v1/namespaces/ns/events"
WALL0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


class Clocks:
    def __init__(self) -> None:
        self.wall = WALL0
        self.mono = 50.0

    def advance(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds

    async def sleep(self, seconds: float) -> None:
        self.advance(seconds)
        await asyncio.sleep(0)


class Api:
    """Requests as they were sent; Events kept by name so a PATCH of a missing one is a 404."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.events: dict[str, JSON] = {}
        self.fail: Exception | None = None

    async def __call__(self, request: Request) -> JSON:
        self.requests.append(request)
        await asyncio.sleep(0)
        if self.fail is not None:
            raise self.fail
        if request.method == "POST":
            self.events[request.body["metadata"]["name"]] = request.body
            return request.body
        name = request.path.rsplit("/", 1)[1]
        if name not in self.events:
            raise ApiError(404, "NotFound", f'events.events.k8s.io "{name}" not found')
        self.events[name] = {**self.events[name], **request.body}
        return self.events[name]

    def methods(self) -> list[str]:
        return [r.method for r in self.requests]


def _event(name: str = "w", reason: str = "QuotaReserved", note: str = "Quota reserved in ClusterQueue cq",
           uid: str | None = None, type_: str = NORMAL) -> EventRecord:
    regarding = ObjectReference("kueue.x-k8s.io/v1beta2", "Workload", name, "ns", uid or f"{name}-uid", "7")
    return EventRecord(regarding, reason, note, "kueue-admission", type_)


def _recorder(api: Api, clocks: Clocks, **kwargs: Any) -> EventRecorder:
    return EventRecorder(api, instance="host-1", clock=lambda: clocks.wall, monotonic=lambda: clocks.mono,
                         sleep=clocks.sleep, **kwargs)


async def _settle(recorder: EventRecorder) -> None:
    await recorder.queue.join(5)


async def test_an_event_is_posted_as_events_k8s_io_v1_with_kueues_fields() -> None:
    api, clocks = Api(), Clocks()
    recorder = _recorder(api, clocks)
    recorder.start()
    recorder.record(_event())
    await _settle(recorder)
    [request] = api.requests
    assert (request.method, request.path) == ("POST", EVENTS)
    body = request.body
    assert body["metadata"]["namespace"] == "ns" and body["metadata"]["name"].startswith("w.")
    assert body == {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": body["metadata"],
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "kueue-admission", "reportingInstance": "kueue-admission-host-1",
        "action": "QuotaReserved", "reason": "QuotaReserved", "note": "Quota reserved in ClusterQueue cq",
        "type": "Normal",
        "regarding": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": "w",
                      "namespace": "ns", "uid": "w-uid", "resourceVersion": "7"},
    }
    await recorder.stop()


async def test_the_same_event_again_updates_the_series_of_the_first() -> None:
    api, clocks = Api(), Clocks()
    recorder = _recorder(api, clocks)
    recorder.start()
    recorder.record(_event())
    await _settle(recorder)
    name = api.requests[0].body["metadata"]["name"]
    clocks.advance(30.5)
    recorder.record(_event())
    await _settle(recorder)
    assert api.methods() == ["POST", "PATCH"]
    patch = api.requests[1]
    assert patch.path == f"{EVENTS}/{name}"
    assert patch.body == {"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:30.500000Z"}}
    clocks.advance(1)
    recorder.record(_event())
    await _settle(recorder)
    assert api.requests[-1].body["series"]["count"] == 3
    assert api.methods() == ["POST", "PATCH", "PATCH"]
    await recorder.stop()


async def test_series_updates_come_at_most_once_per_interval_with_the_latest_count() -> None:
    api, clocks = Api(), Clocks()
    # Three tokens and no refill: the POST, one update, one more; repeats riding along take none.
    recorder = _recorder(api, clocks, update_interval_s=10.0, per_object=(3, 0.0))
    recorder.start()
    recorder.record(_event())
    await _settle(recorder)
    for _ in range(4):  # 2 s apart: all within the interval after the POST
        clocks.advance(2)
        recorder.record(_event())
    await _settle(recorder)  # the fake sleep runs the interval out
    assert api.methods() == ["POST", "PATCH"]
    assert api.requests[1].body["series"] == {"count": 5, "lastObservedTime": micro_time(WALL0 + 8)}
    assert clocks.mono >= 50.0 + 10.0, "the update waited for its interval"
    clocks.advance(1)
    recorder.record(_event())
    await recorder.stop()  # a waiting update is sent on the way out
    assert api.requests[-1].body["series"]["count"] == 6
    assert recorder.stats.rate_limited == 0


async def test_repeats_waiting_for_a_worker_ride_along_in_one_request() -> None:
    """Five before the first send is out: one POST that already carries the series."""
    api, clocks = Api(), Clocks()
    recorder = _recorder(api, clocks)
    for _ in range(5):
        recorder.record(_event())
        clocks.advance(1)
    recorder.start()
    await _settle(recorder)
    [request] = api.requests
    assert request.method == "POST"
    assert request.body["series"] == {"count": 5, "lastObservedTime": micro_time(WALL0 + 4)}
    assert request.body["eventTime"] == micro_time(WALL0)
    await recorder.stop()


async def test_another_note_or_object_is_another_event_and_the_window_ends_a_series() -> None:
    api, clocks = Api(), Clocks()
    recorder = _recorder(api, clocks, window_s=600.0)
    recorder.start()
    recorder.record(_event(note="first"))
    recorder.record(_event(note="second"))
    recorder.record(_event(name="other", note="first"))
    await _settle(recorder)
    assert api.methods() == ["POST", "POST", "POST"]
    clocks.advance(601)
    recorder.record(_event(note="first"))
    await _settle(recorder)
    assert api.methods() == ["POST", "POST", "POST", "POST"], "past the window: a new Event, not a PATCH"
    assert len(api.events) == 4
    await recorder.stop()


async def test_an_event_the_api_dropped_is_created_again_with_its_count() -> None:
    api, clocks = Api(), Clocks()
    recorder = _recorder(api, clocks)
    recorder.start()
    recorder.record(_event())
    await _settle(recorder)
    api.events.clear()  # its TTL ran out
    clocks.advance(5)
    recorder.record(_event())
    await _settle(recorder)
    assert api.methods() == ["POST", "PATCH", "POST"]
    again = api.requests[-1].body
    assert again["series"]["count"] == 2
    assert again["metadata"]["name"] != api.requests[0].body["metadata"]["name"]
    await recorder.stop()


async def test_one_object_gets_its_burst_then_one_event_per_refill() -> None:
    api, clocks = Api(), Clocks()
    recorder = _recorder(api, clocks, per_object=(25, 0.2), overall=(1000, 1000.0))
    recorder.start()
    for i in range(30):
        recorder.record(_event(note=f"n{i}"))
    recorder.record(_event(name="quiet", note="n0"))  # another object has its own bucket
    await _settle(recorder)
    assert len(api.requests) == 26 and recorder.stats.rate_limited == 5
    clocks.advance(4.9)
    recorder.record(_event(note="late"))
    clocks.advance(0.2)
    recorder.record(_event(note="later"))
    await _settle(recorder)
    assert [r.body["note"] for r in api.requests[26:]] == ["later"], "one token back after 5 s"
    await recorder.stop()


async def test_a_limited_repeat_still_counts_in_the_next_update() -> None:
    api, clocks = Api(), Clocks()
    recorder = _recorder(api, clocks, per_object=(1, 0.2), overall=(1000, 1000.0))
    recorder.start()
    recorder.record(_event())
    await _settle(recorder)
    recorder.record(_event())  # no token: not sent...
    await _settle(recorder)
    assert api.methods() == ["POST"]
    clocks.advance(5)
    recorder.record(_event())  # ...but counted
    await _settle(recorder)
    assert api.requests[-1].body["series"]["count"] == 3
    await recorder.stop()


async def test_the_overall_cap_drops_across_objects() -> None:
    api, clocks = Api(), Clocks()
    recorder = _recorder(api, clocks, overall=(10, 1.0))
    recorder.start()
    for i in range(15):
        recorder.record(_event(name=f"w{i}"))
    await _settle(recorder)
    assert len(api.requests) == 10 and recorder.stats.rate_limited == 5
    await recorder.stop()


def test_the_queue_is_bounded_and_recording_never_waits() -> None:
    """Not started (no loop even): record returns at once and queues at most max_pending."""
    api, clocks = Api(), Clocks()
    recorder = _recorder(api, clocks, max_pending=3)
    for i in range(5):
        recorder.record(_event(name=f"w{i}"))
    assert len(recorder.queue) == 3 and recorder.stats.queue_full == 2
    assert api.requests == []


async def test_failures_are_logged_at_debug_and_never_reach_the_caller(
        caplog: pytest.LogCaptureFixture) -> None:
    api, clocks = Api(), Clocks()
    api.fail = ApiError(403, "Forbidden", "events.events.k8s.io is forbidden")
    recorder = _recorder(api, clocks)
    recorder.start()
    with caplog.at_level(logging.DEBUG, logger="pykueue.kube.events"):
        recorder.record(_event())
        api_down = OSError("connection refused")
        await _settle(recorder)
        api.fail = api_down
        recorder.record(_event(name="b"))
        await _settle(recorder)
    assert recorder.stats.failed == 2 and recorder.stats.posted == 0
    assert [r.levelno for r in caplog.records] == [logging.DEBUG, logging.DEBUG]
    assert "forbidden" in caplog.records[0].getMessage()
    api.fail = None
    clocks.advance(1)
    recorder.record(_event())  # the failed one's series: created now, with its count
    await _settle(recorder)
    assert api.requests[-1].method == "POST" and api.requests[-1].body["series"]["count"] == 2
    await recorder.stop()


async def test_a_hung_api_does_not_hold_the_caller_and_stop_gives_up_in_time() -> None:
    hang = asyncio.Event()

    async def never(request: Request) -> JSON:
        await hang.wait()
        return {}

    clocks = Clocks()
    recorder = EventRecorder(never, instance="h", clock=lambda: clocks.wall, monotonic=lambda: clocks.mono,
                             workers=1)
    recorder.start()
    for i in range(3):
        recorder.record(_event(name=f"w{i}"))  # returns at once although nothing gets out
    await asyncio.sleep(0.01)
    assert recorder.stats.posted == 0
    await asyncio.wait_for(recorder.stop(timeout_s=0.1), 2)


async def test_a_long_note_is_cut_as_kueue_cuts_it() -> None:
    api, clocks = Api(), Clocks()
    recorder = _recorder(api, clocks)
    recorder.start()
    recorder.record(_event(note="é" * 600, type_=WARNING))  # 1200 bytes
    await _settle(recorder)
    note = api.requests[0].body["note"]
    assert len(note.encode()) <= 1024 and note.endswith(" ...") and note.startswith("é" * 510)
    assert api.requests[0].body["type"] == "Warning"
    await recorder.stop()
