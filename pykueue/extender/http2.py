"""The extender over HTTP/2: one asyncio protocol per connection, on the ``h2`` state machine.

Why HTTP/2: kube-scheduler's extender client keeps at most two idle HTTP/1.1 connections,
so its concurrent binds keep opening (and TLS-handshaking) new ones. Its transport offers
``h2`` by ALPN; once accepted, every call of the scheduler shares one connection as a stream.

Each request runs :meth:`Endpoints.respond` in a task of its own, so streams proceed
concurrently. The caller's identity is the connection's verified client certificate, read
once. A stream the client resets before its body is complete is cancelled (no verb has
started yet); one reset later (a bind under way) finishes and its reply is dropped.

The server's limits (``kube.http_limits``) hold here too: each stream is one of the server's
requests in flight (``503`` beyond), its body must arrive within the body timeout (``408``),
and it tells the connection's guard when it starts and ends, so a connection with no stream
open is timed as idle (and closed after the keep-alive) like an HTTP/1.1 one.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    Event,
    RemoteSettingsChanged,
    RequestReceived,
    StreamEnded,
    StreamReset,
    WindowUpdated,
)
from h2.exceptions import ProtocolError
from h2.settings import SettingCodes, Settings

from pykueue.extender.endpoints import MAX_BODY_BYTES, Endpoints, Reply, client_name
from pykueue.kube.http_limits import ConnectionGuard, Refused, ServerLimits, Slots

log = logging.getLogger(__name__)

MAX_STREAMS = 128  # more than the scheduler's parallelism (16 binding goroutines by default)
# Receive windows wide enough that a full NodeList (several MB) needs few window updates.
STREAM_WINDOW = 4 * 1024 * 1024
CONNECTION_WINDOW = 16 * 1024 * 1024
DEFAULT_WINDOW = 65_535


@dataclass(eq=False)
class _Stream:
    id: int
    method: str
    path: str
    content_type: str
    ended: asyncio.Future[None]
    body_timeout_s: float
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    too_large: bool = False
    task: asyncio.Task[None] | None = None

    async def read(self) -> bytes:
        try:
            async with asyncio.timeout(self.body_timeout_s):
                await self.ended
        except TimeoutError:
            raise Refused(408, f"the body did not arrive within {self.body_timeout_s:g} s") from None
        if self.too_large:
            raise Refused(413, f"body larger than {MAX_BODY_BYTES} bytes")
        return b"".join(self.chunks)


def _text(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _request_line(headers: Iterable[tuple[bytes | str, bytes | str]]) -> tuple[str, str, str]:
    """Method, path (without the query) and content type of a request's headers."""
    fields = {_text(name): _text(value) for name, value in headers}
    return (fields.get(":method", "GET"), fields.get(":path", "/").split("?", 1)[0],
            fields.get("content-type", ""))


class Http2Connection(asyncio.Protocol):
    def __init__(self, endpoints: Endpoints, registry: set[Http2Connection] | None = None,
                 guard: ConnectionGuard | None = None, limits: ServerLimits | None = None,
                 in_flight: Slots | None = None) -> None:
        self.endpoints = endpoints
        self.registry = registry  # the server's open connections, to close them on stop
        self.guard, self.in_flight = guard, in_flight  # the listener's, when it has them
        self.body_timeout_s = limits.body_timeout_s if limits is not None else 60.0
        # Our reply headers are built here, always valid: checking them again on every reply
        # cost about 3 % of the extender's work per pod. What the peer sends is still checked.
        self.h2 = H2Connection(H2Configuration(client_side=False, header_encoding=None,
                                               validate_outbound_headers=False,
                                               normalize_outbound_headers=False))
        self.transport: asyncio.Transport | None = None
        self.caller: str | None = None
        self.streams: dict[int, _Stream] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self._window_waiters: list[asyncio.Future[None]] = []
        self.closed = False

    # -- asyncio.Protocol ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TLS transport is no asyncio.Transport subclass, but has its methods.
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            # A reply is one write: send it now, not after the peer's delayed ACK.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.registry is not None:
            self.registry.add(self)
        self.caller = client_name(transport.get_extra_info("peercert"))
        self.h2.local_settings = Settings(client=False, initial_values={
            SettingCodes.MAX_CONCURRENT_STREAMS: MAX_STREAMS,
            SettingCodes.INITIAL_WINDOW_SIZE: STREAM_WINDOW,
            SettingCodes.MAX_HEADER_LIST_SIZE: 64 * 1024,
        })
        self.h2.initiate_connection()
        if CONNECTION_WINDOW > DEFAULT_WINDOW:
            self.h2.increment_flow_control_window(CONNECTION_WINDOW - DEFAULT_WINDOW)
        self._flush()

    def data_received(self, data: bytes) -> None:
        try:
            events = self.h2.receive_data(data)
        except ProtocolError as exc:
            log.info("HTTP/2 protocol error from %r: %s", self.caller, exc)
            self._flush()  # the GOAWAY h2 queued
            self._close()
            return
        for event in events:
            self._on_event(event)
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.registry is not None:
            self.registry.discard(self)
        self._wake_senders()
        for stream in self.streams.values():
            self._abandon(stream)
        self.streams.clear()

    # -- events ---------------------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        if isinstance(event, RequestReceived) and event.stream_id is not None:
            method, path, content_type = _request_line(event.headers or ())
            stream = _Stream(event.stream_id, method, path, content_type,
                             asyncio.get_running_loop().create_future(), self.body_timeout_s)
            self.streams[stream.id] = stream
            stream.task = asyncio.create_task(self._serve(stream))
            self.tasks.add(stream.task)
            stream.task.add_done_callback(self.tasks.discard)
            if event.stream_ended is not None:
                stream.ended.set_result(None)
        elif isinstance(event, DataReceived) and event.stream_id is not None:
            # Credit the window whatever becomes of the data, or the connection stalls.
            self.h2.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id)
            known = self.streams.get(event.stream_id)
            if known is not None and not known.too_large and event.data:
                known.size += len(event.data)
                if known.size > MAX_BODY_BYTES:
                    known.too_large, known.chunks = True, []
                else:
                    known.chunks.append(event.data)
            if event.stream_ended is not None and known is not None:
                _finish(known)
        elif isinstance(event, StreamEnded) and event.stream_id is not None:
            known = self.streams.get(event.stream_id)
            if known is not None:
                _finish(known)
        elif isinstance(event, StreamReset) and event.stream_id is not None:
            known = self.streams.pop(event.stream_id, None)
            if known is not None:
                self._abandon(known)
            self._wake_senders()
        elif isinstance(event, WindowUpdated | RemoteSettingsChanged):
            self._wake_senders()
        elif isinstance(event, ConnectionTerminated):
            self._flush()
            self._close()

    def _abandon(self, stream: _Stream) -> None:
        if not stream.ended.done() and stream.task is not None:
            stream.task.cancel()  # still reading its body: no verb has started

    # -- replies --------------------------------------------------------------------------
    async def _serve(self, stream: _Stream) -> None:
        if self.guard is not None:
            self.guard.request_started()
        try:
            await self._answer(stream)
        finally:
            if self.guard is not None:
                self.guard.request_finished()

    async def _answer(self, stream: _Stream) -> None:
        if self.in_flight is not None and not await self.in_flight.acquire():
            reply = Reply(503, b'{"Error":"the extender has too many requests in flight; retry later"}')
        else:
            try:
                reply = await self.endpoints.respond(stream.method, stream.path, self.caller, stream.read,
                                                     stream.content_type)
            finally:
                if self.in_flight is not None:
                    self.in_flight.release()
        log.debug("h2 %s %s %d (%s)", stream.method, stream.path, reply.status, self.caller)
        if self.streams.get(stream.id) is not stream or self.closed:
            return  # reset or disconnected meanwhile
        try:
            await self._send(stream, reply)
        except ProtocolError:  # the stream closed under us (reset)
            pass
        finally:
            self.streams.pop(stream.id, None)
        self._flush()

    async def _send(self, stream: _Stream, reply: Reply) -> None:
        body = b"" if stream.method == "HEAD" else reply.body
        headers = [(b":status", str(reply.status).encode()), (b"content-type", reply.content_type.encode()),
                   (b"content-length", str(len(reply.body)).encode())]
        self.h2.send_headers(stream.id, headers, end_stream=not body)
        sent = 0
        while sent < len(body):
            window = min(self.h2.local_flow_control_window(stream.id), self.h2.max_outbound_frame_size)
            if window <= 0:
                self._flush()
                await self._wait_for_window()
                if self.closed or self.streams.get(stream.id) is not stream:
                    return
                continue
            chunk = body[sent:sent + window]
            sent += len(chunk)
            self.h2.send_data(stream.id, chunk, end_stream=sent == len(body))
        if not stream.ended.done():
            # Answered before the request was complete (e.g. a refused caller): tell the
            # client to stop sending it, as RFC 9113 section 8.1 allows.
            self.h2.reset_stream(stream.id, ErrorCodes.NO_ERROR)

    async def _wait_for_window(self) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._window_waiters.append(waiter)
        await waiter

    def _wake_senders(self) -> None:
        waiters, self._window_waiters = self._window_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -- connection -----------------------------------------------------------------------
    def _flush(self) -> None:
        data = self.h2.data_to_send()
        if data and self.transport is not None and not self.closed:
            self.transport.write(data)

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def close_gracefully(self) -> None:
        """GOAWAY, then close: the connection has been idle too long (``kube.http_limits``)."""
        if not self.closed:
            self.h2.close_connection()
            self._flush()
        self._close()

    async def shutdown(self, timeout_s: float) -> None:
        """Let the streams under way answer (up to ``timeout_s``), then GOAWAY and close.

        In that order because ``h2`` refuses to send anything once it has sent GOAWAY."""
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=timeout_s)
        if not self.closed:
            self.h2.close_connection()
            self._flush()
        self._close()


def _finish(stream: _Stream) -> None:
    if not stream.ended.done():
        stream.ended.set_result(None)
