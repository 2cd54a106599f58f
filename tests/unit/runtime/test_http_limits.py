"""The limits every server holds to (``kube.http_limits``), on a loopback server with small ones:
slow heads and bodies cut with 408, idle connections closed, a full server refusing at once
with 503, bodies refused by size (413) and media type (415) before they are read, a budget of
buffered bytes, and errors answered without a traceback page."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from pykueue.kube.http_limits import KiB, Listener, ServerLimits, Slots, is_json, read_body, serve

LIMITS = ServerLimits(name="test", max_body_bytes=1 * KiB, body_bytes_by_path=(("/big", 4 * KiB),),
                      max_connections=4, max_in_flight=2, max_buffered_bytes=6 * KiB,
                      header_timeout_s=0.4, body_timeout_s=0.4, keepalive_s=0.6, queue_s=0.2)


async def _echo(request: web.Request) -> web.Response:
    return web.Response(body=await read_body(request), content_type="application/json")


async def _hold(request: web.Request) -> web.Response:
    await asyncio.sleep(float(request.query.get("s", "1")))
    return web.Response(text="held")


async def _broken(_: web.Request) -> web.Response:
    raise KeyError("a bug")


async def _deep(_: web.Request) -> web.Response:
    def down(n: int) -> int:
        return down(n + 1)
    return web.Response(text=str(down(0)))


async def _start(limits: ServerLimits = LIMITS) -> Listener:
    app = web.Application()
    app.router.add_post("/echo", _echo)
    app.router.add_post("/big", _echo)
    app.router.add_get("/hold", _hold)
    app.router.add_get("/broken", _broken)
    app.router.add_get("/deep", _deep)
    return await serve(app, "127.0.0.1", 0, limits)


@pytest.fixture
async def server() -> AsyncIterator[Listener]:
    listener = await _start()
    try:
        yield listener
    finally:
        await listener.cleanup()


async def _exchange(port: int, data: bytes, read_s: float = 5.0) -> tuple[bytes, float]:
    """Send ``data``, read until the server closes (or ``read_s``); the answer and the time taken."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    writer.write(data)
    try:
        async with asyncio.timeout(read_s):
            answer = await reader.read()
    except TimeoutError:
        answer = b"<still open>"
    writer.close()
    return answer, time.monotonic() - started


def _post(path: str, body: bytes, content_type: str = "application/json", length: int | None = None) -> bytes:
    head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\nConnection: close\r\n\r\n")
    return head.encode() + body


async def test_a_head_that_never_ends_is_cut_with_408(server: Listener) -> None:
    answer, took = await _exchange(server.port, b"GET /hold HTTP/1.1\r\nHost: x\r\n")
    assert answer.startswith(b"HTTP/1.1 408 ") and 0.3 < took < 2.0
    answer, took = await _exchange(server.port, b"")  # a connection that says nothing
    assert answer.startswith(b"HTTP/1.1 408 ") and took < 2.0
    assert server.stats.header_timeouts == 2


async def test_an_idle_connection_is_closed_after_the_keepalive(server: Listener) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"GET /hold?s=0 HTTP/1.1\r\nHost: x\r\n\r\n")
    head = await reader.readuntil(b"held")
    assert head.startswith(b"HTTP/1.1 200 ")
    started = time.monotonic()
    assert await asyncio.wait_for(reader.read(), 3) == b""  # closed, with nothing more to say
    assert 0.4 < time.monotonic() - started < 2.0
    writer.close()


async def test_a_request_being_handled_is_not_timed(server: Listener) -> None:
    hold = b"GET /hold?s=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    answer, _ = await _exchange(server.port, hold)
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"held")


async def test_a_body_that_never_ends_is_cut_with_408(server: Listener) -> None:
    answer, took = await _exchange(server.port, _post("/echo", b"{", length=100))
    assert answer.startswith(b"HTTP/1.1 408 ") and b"did not arrive" in answer and took < 2.0


async def test_bodies_over_the_limit_of_their_path_are_refused_unread(server: Listener) -> None:
    answer, _ = await _exchange(server.port, _post("/echo", b"[", length=2 * KiB))
    assert answer.startswith(b"HTTP/1.1 413 ") and b"limit of 1024 bytes" in answer
    body = b"[" + b"1," * 1000 + b"1]"
    answer, _ = await _exchange(server.port, _post("/big", body))
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(body)
    chunk = b"400\r\n" + b" " * 1024 + b"\r\n"
    chunked = (b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n" + chunk * 2 + b"0\r\n\r\n")
    answer, _ = await _exchange(server.port, chunked)
    assert answer.startswith(b"HTTP/1.1 413 ")  # no length declared: counted while read


async def test_a_body_of_another_media_type_is_415(server: Listener) -> None:
    for content_type in ("text/plain", "application/x-www-form-urlencoded", ""):
        answer, _ = await _exchange(server.port, _post("/echo", b"{}", content_type))
        assert answer.startswith(b"HTTP/1.1 415 "), content_type
    answer, _ = await _exchange(server.port, _post("/echo", b"{}", "application/merge-patch+json; charset=x"))
    assert answer.startswith(b"HTTP/1.1 200 ")


async def test_beyond_the_connection_cap_a_newcomer_is_refused_at_once(server: Listener) -> None:
    held = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(LIMITS.max_connections)]
    await asyncio.sleep(0.05)
    answer, took = await _exchange(server.port, b"GET /hold?s=0 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 503 ") and b"open connections" in answer and took < 0.3
    assert server.stats.refused_connections == 1 and server.stats.open == LIMITS.max_connections
    for _, writer in held:
        writer.close()


async def test_beyond_the_requests_in_flight_a_request_waits_briefly_then_gets_503(server: Listener) -> None:
    hold = b"GET /hold?s=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    answers = await asyncio.gather(*(_exchange(server.port, hold) for _ in range(3)))
    statuses = sorted(a[:12] for a, _ in answers)
    assert statuses == [b"HTTP/1.1 200", b"HTTP/1.1 200", b"HTTP/1.1 503"]
    refused = next(a for a, _ in answers if a.startswith(b"HTTP/1.1 503"))
    assert b"in flight" in refused and b"Retry-After: 1" in refused


async def test_a_handler_error_is_a_500_with_a_reason_and_deep_recursion_a_400(server: Listener) -> None:
    answer, _ = await _exchange(server.port, b"GET /broken HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 500 ")
    assert answer.endswith(b'{"error": "internal error", "code": 500}')  # no traceback page
    answer, _ = await _exchange(server.port, b"GET /deep HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 ") and b"nested too deeply" in answer


async def test_bodies_held_at_once_stay_within_the_budget() -> None:
    # Two bodies of 4 KiB do not fit a budget of 6 KiB: the second waits, then is refused.
    listener = await _start(dataclasses.replace(LIMITS, max_in_flight=4, body_timeout_s=2.0))
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        writer.write(_post("/big", b"[", length=4 * KiB))  # reserves 4 KiB, then stalls
        await asyncio.sleep(0.1)
        answer, _ = await _exchange(listener.port, _post("/big", b"[1]", length=4 * KiB - 1))
        assert answer.startswith(b"HTTP/1.1 503 ") and b"held in memory" in answer
        writer.close()
    finally:
        await listener.cleanup()


async def test_slots_serve_waiters_in_order_and_give_up_after_the_queue_time() -> None:
    slots = Slots(3, queue_s=0.2)
    assert await slots.acquire(2) and await slots.acquire(1)
    order: list[str] = []

    async def claim(name: str, weight: int) -> None:
        if await slots.acquire(weight):
            order.append(name)

    waiting = [asyncio.create_task(claim("first", 2)), asyncio.create_task(claim("second", 1))]
    await asyncio.sleep(0.05)
    slots.release(2)
    await asyncio.gather(*waiting)
    assert order == ["first"]  # in order: the second waited behind it, and its time ran out
    assert slots.used == 3
    assert await slots.acquire(100) is False  # a claim over the whole budget waits for all of it


def test_is_json() -> None:
    assert is_json("application/json") and is_json("Application/JSON; charset=utf-8")
    assert is_json("application/merge-patch+json")
    assert not is_json("text/json") and not is_json("") and not is_json("application/jsonx")


async def test_garbage_is_a_400_and_one_debug_line_not_an_error_with_a_traceback(
        server: Listener, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        for garbage in (b"GARBAGE\r\n\r\n", b"\x16\x03\x01\x00\xa5\x01\x00",
                        b"GET / HTTP/1.1\r\nHost: x\r\nAuthorization Bearer t0ken\r\n\r\n"):
            answer, _ = await _exchange(server.port, garbage)
            assert answer.split(b"\r\n")[0].endswith(b" 400 Bad Request"), garbage
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "Traceback" not in caplog.text and "t0ken" not in caplog.text
    assert "malformed request" in caplog.text
