"""Slow clients (slowloris): connections that hold a server's descriptor while saying little.

Three ways: ``silent`` connects and sends nothing (for a TLS server, not even its handshake),
``head`` sends a request head a header line a second and never ends it, ``body`` sends a whole
head announcing a body and then a byte a second of it. Each reports how long the server let it
live and what the server said before closing it (408, 503 at a connection cap, or nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

from .wire import Target

TRICKLE_S = 1.0


@dataclass(frozen=True)
class Slow:
    mode: str
    held_s: float
    status: int | None


async def _drain_until_closed(reader: asyncio.StreamReader) -> bytes:
    first = b""
    with contextlib.suppress(ConnectionError, OSError):
        while chunk := await reader.read(65536):
            first = first or chunk
    return first


async def slow_connection(target: Target, mode: str, body_path: str, give_up_s: float,
                          handshakes: asyncio.Semaphore) -> Slow:
    async with handshakes:  # open them in waves: a thousand handshakes at once is a test of the client
        use_tls = target.ssl if mode != "silent" else None
        try:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", target.port, ssl=use_tls, server_hostname="localhost" if use_tls else None)
        except (ConnectionError, OSError):
            return Slow(mode, 0.0, None)
    opened = time.monotonic()
    if mode == "head":
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    elif mode == "body":
        writer.write(f"POST {body_path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     f"Content-Length: 100000\r\n\r\n{{".encode())
    closed = asyncio.ensure_future(_drain_until_closed(reader))
    sent = 0
    try:
        while not closed.done() and time.monotonic() - opened < give_up_s:
            await asyncio.wait([closed], timeout=TRICKLE_S)
            if closed.done() or mode == "silent":
                continue
            sent += 1
            with contextlib.suppress(ConnectionError, OSError):
                writer.write(f"X-Slow-{sent}: y\r\n".encode() if mode == "head" else b" ")
    finally:
        held = time.monotonic() - opened
        if not closed.done():
            closed.cancel()
        with contextlib.suppress(Exception):
            writer.close()
    first = closed.result() if closed.done() and not closed.cancelled() else b""
    status = int(first.split(b" ", 2)[1]) if first.startswith(b"HTTP/1.1 ") else None
    return Slow(mode, held, status)
