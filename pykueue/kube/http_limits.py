"""The limits every pykueue HTTP server holds to, and the one listener and middleware that hold them.

``pykueue run`` serves the webhook, extender, visibility API, dashboard, metrics and probes from
one event loop, so one hostile client of any of them could otherwise starve all of them: by
holding connections open with a request head that never ends (slowloris), by opening
descriptors until the process has none left, by sending bodies of any size, or by keeping
every handler busy. Each server therefore states its :class:`ServerLimits` and is served by
:func:`serve`:

* the listener counts connections: beyond ``max_connections`` a new one is answered ``503``
  and closed at once (never queued); a TLS handshake must end within ``header_timeout_s``;
* a request head must be complete ``header_timeout_s`` after its first byte (or after the
  connection opened), else ``408`` and close; an idle connection closes after ``keepalive_s``;
* the middleware lets ``max_in_flight`` requests be handled at once (one may wait ``queue_s``
  for a slot, then ``503``), refuses a declared body over the path's limit with ``413`` before
  reading it and, where bodies are JSON, any other media type with ``415``; :func:`read_body`
  reads a body within ``body_timeout_s`` (``408``) and within the server's budget of buffered
  bytes (``503`` beyond it); what escapes a handler is answered with a reason, not a
  traceback page.

Bodies are read lazily, when the handler asks, so a server can refuse a caller first (the
extender checks the client certificate before anything else).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

log = logging.getLogger(__name__)

KiB = 1024
MiB = 1024 * KiB

Render = Callable[[int, str], web.Response]
"""How a server words a refusal (status, reason) in its own format."""
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class ServerLimits:
    name: str
    max_body_bytes: int
    max_connections: int
    max_in_flight: int
    # Paths whose bodies may be larger (or must be smaller) than max_body_bytes.
    body_bytes_by_path: tuple[tuple[str, int], ...] = ()
    # Bodies held in memory at once (being read or handled); a request beyond waits queue_s.
    max_buffered_bytes: int = 64 * MiB
    header_timeout_s: float = 10.0
    body_timeout_s: float = 10.0
    keepalive_s: float = 60.0
    queue_s: float = 1.0
    json_bodies: bool = True  # POST/PUT/PATCH bodies must be application/json
    max_header_bytes: int = 16 * KiB  # one header line: a long bearer token fits
    max_headers: int = 100

    def body_limit(self, path: str) -> int:
        return dict(self.body_bytes_by_path).get(path, self.max_body_bytes)

    def handler_options(self) -> dict[str, Any]:
        """aiohttp's per-connection settings (``web.AppRunner`` keywords) for these limits.
        A second of lingering lets a refused client read its 413 before the close."""
        return {"keepalive_timeout": self.keepalive_s, "lingering_time": 1.0, "max_line_size": 8 * KiB,
                "max_field_size": self.max_header_bytes, "max_headers": self.max_headers,
                # No caller of ours compresses its requests; a compressed body is only a way to
                # make us inflate (and bodies are limited after inflation anyway).
                "auto_decompress": False, "logger": _PROTOCOL_LOG}


class _ProtocolLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's connection log, with a request it could not parse as one DEBUG line.

    aiohttp answers such a request 400 and logs it at ERROR with a traceback that quotes the
    bytes received: a flood of garbage would become a flood of tracebacks, and a quoted
    header may hold a credential. It is the sender's fault and already answered, so one line
    at DEBUG says what was wrong, without the bytes."""

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        if isinstance(exc_info, HttpProcessingError):
            self.logger.debug("malformed request: %s", _first_line(exc_info))
        else:
            self.logger.exception(msg, *args, exc_info=exc_info, **kwargs)

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        if isinstance(kwargs.get("exc_info"), HttpProcessingError):
            self.logger.debug("malformed request: %s", _first_line(kwargs["exc_info"]))
        else:
            self.logger.debug(msg, *args, **kwargs)


def _first_line(exc: HttpProcessingError) -> str:
    lines = str(exc.message or "").strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:120] if lines else ''}"


_PROTOCOL_LOG = _ProtocolLog(logging.getLogger("aiohttp.server"), {})


def json_error(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason, "code": status}, status=status)


def is_json(content_type: str) -> bool:
    """``application/json`` or a ``+json`` type, parameters (charset) aside."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


class Refused(Exception):
    """A request refused by a limit: ``status`` and a reason for the caller."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class Slots:
    """At most ``limit`` held at once; a claimant waits ``queue_s`` at most, in order.

    Weighted, so one class is both the in-flight cap (weight 1) and the budget of buffered
    bytes (weight: a body's size; a claim over the whole budget is cut to it and so passes
    when it is alone)."""

    def __init__(self, limit: int, queue_s: float) -> None:
        self.limit, self.queue_s = limit, queue_s
        self.used = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    async def acquire(self, weight: int = 1) -> bool:
        weight = min(weight, self.limit)
        if not self._waiters and self.used + weight <= self.limit:
            self.used += weight
            return True
        if self.queue_s <= 0:
            return False
        entry = (weight, asyncio.get_running_loop().create_future())
        self._waiters.append(entry)
        try:
            async with asyncio.timeout(self.queue_s):
                await entry[1]
            return True
        except TimeoutError:
            if entry[1].done() and not entry[1].cancelled():
                self.release(weight)  # granted just as the time ran out: pass it on
            return False
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(entry)

    def release(self, weight: int = 1) -> None:
        self.used -= min(weight, self.limit)
        while self._waiters:
            wanted, waiter = self._waiters[0]
            if waiter.done():
                self._waiters.pop(0)
            elif self.used + wanted <= self.limit:
                self.used += wanted
                self._waiters.pop(0)
                waiter.set_result(None)
            else:
                return


@dataclass
class ListenerStats:
    open: int = 0
    refused_connections: int = 0
    header_timeouts: int = 0


def _raw_response(status: int, reason: str) -> bytes:
    """A whole HTTP/1.1 answer, for a connection no handler will serve."""
    phrase = {408: "Request Timeout", 503: "Service Unavailable"}[status]
    body = json.dumps({"error": reason, "code": status}).encode()
    retry = "Retry-After: 1\r\n" if status == 503 else ""
    head = (f"HTTP/1.1 {status} {phrase}\r\nContent-Type: application/json\r\n{retry}"
            f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


@runtime_checkable
class ClosesGracefully(Protocol):
    """A protocol with something to say before its connection is closed for being idle."""

    def close_gracefully(self) -> None: ...


class ConnectionGuard(asyncio.Protocol):
    """Stands between a transport and the protocol that speaks HTTP on it, and keeps the
    connection's deadlines.

    A request head must be complete ``header_timeout_s`` after its first byte, an idle
    connection lives ``keepalive_s``, and nothing is timed while a request is handled (an
    event stream may last as long as it likes). The HTTP side says when each request starts
    and ends: the middleware for HTTP/1.1, the extender's HTTP/2 streams themselves."""

    def __init__(self, limits: ServerLimits, stats: ListenerStats,
                 choose: Callable[[asyncio.BaseTransport, ConnectionGuard], asyncio.Protocol]) -> None:
        self._limits, self._stats, self._choose = limits, stats, choose
        self._inner: asyncio.Protocol | None = None
        self._transport: asyncio.BaseTransport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._busy = 0
        self._idle = False  # between requests, as opposed to inside a request head
        self.http1 = True

    # -- asyncio.Protocol, passed on ------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        ssl_object = transport.get_extra_info("ssl_object")
        self.http1 = ssl_object is None or ssl_object.selected_alpn_protocol() != "h2"
        if self._stats.open >= self._limits.max_connections:
            self._stats.refused_connections += 1
            self._answer(503, f"{self._limits.name}: more than {self._limits.max_connections} open "
                              "connections; retry later")
            transport.close()
            return
        self._stats.open += 1
        self._inner = self._choose(transport, self)
        self._arm(self._limits.header_timeout_s)
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._inner is None:
            return
        if self._idle and not self._busy:  # the first bytes of the next request
            self._idle = False
            self._arm(self._limits.header_timeout_s)
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        inner, self._inner, self._transport = self._inner, None, None
        if inner is not None:
            self._stats.open -= 1
            inner.connection_lost(exc)

    # -- what the HTTP side reports -------------------------------------------------------
    def request_started(self) -> None:
        self._busy += 1
        self._cancel()

    def request_finished(self) -> None:
        self._busy -= 1
        if not self._busy and self._transport is not None:
            self._idle = True
            self._arm(self._limits.keepalive_s)

    # -- deadlines ------------------------------------------------------------------------
    def _arm(self, after_s: float) -> None:
        self._cancel()
        self._timer = asyncio.get_running_loop().call_later(after_s, self._expired)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        transport = self._transport
        if self._busy or transport is None or transport.is_closing():
            return
        if not self._idle:
            self._stats.header_timeouts += 1
            self._answer(408, "the request head did not arrive in time")
        if isinstance(self._inner, ClosesGracefully):
            self._inner.close_gracefully()  # HTTP/2: GOAWAY first, so the peer knows why
        transport.close()

    def _answer(self, status: int, reason: str) -> None:
        if self.http1 and self._transport is not None:
            # uvloop's TLS transport has the methods but is no asyncio.Transport subclass.
            cast(asyncio.WriteTransport, self._transport).write(_raw_response(status, reason))


class _BodyReader:
    """Reads one request's body once, its size held in the server's budget of buffered bytes
    until the request is answered."""

    def __init__(self, request: web.Request, limits: ServerLimits, budget: Slots) -> None:
        self.request, self.limits, self.budget = request, limits, budget
        self.reserved = 0
        self.body: bytes | None = None

    def release(self) -> None:
        if self.reserved:
            self.budget.release(self.reserved)
            self.reserved = 0

    async def read(self) -> bytes:
        if self.body is None:
            self.body = await self._read()
        return self.body

    async def _read(self) -> bytes:
        request, limits = self.request, self.limits
        if not request.body_exists:
            return b""
        limit = limits.body_limit(request.path)
        want = min(request.content_length or limit, limit)
        if not await self.budget.acquire(want):
            raise Refused(503, f"{limits.name}: too many request bodies held in memory; retry later")
        self.reserved = want
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(limits.body_timeout_s):
                async for chunk in request.content.iter_any():
                    size += len(chunk)
                    if size > limit:
                        raise Refused(413, f"request body over this path's limit of {limit} bytes")
                    chunks.append(chunk)
        except TimeoutError:
            raise Refused(408, f"the body did not arrive within {limits.body_timeout_s:g} s") from None
        except (Refused, asyncio.CancelledError):
            raise
        except Exception as exc:  # a broken chunked encoding, a reset: the sender's doing
            raise Refused(400, f"incomplete request body: {type(exc).__name__}") from None
        return b"".join(chunks)


_BODY = web.RequestKey("pykueue-body", _BodyReader)


async def read_body(request: web.Request) -> bytes:
    """The request's body, read under its server's limits (raises :class:`Refused`); an app
    served without :func:`limits_middleware` (an in-process test) reads it plainly."""
    reader = request.get(_BODY)
    return await (reader.read() if reader is not None else request.read())


def _head_refusal(request: web.Request, limits: ServerLimits) -> tuple[int, str] | None:
    if not request.body_exists:
        return None
    limit = limits.body_limit(request.path)
    declared = request.content_length
    if declared is not None and declared > limit:
        return 413, f"request body of {declared} bytes is over this path's limit of {limit} bytes"
    if limits.json_bodies and request.method in ("POST", "PUT", "PATCH") \
            and not is_json(request.headers.get("Content-Type", "")):
        return 415, "the body must be JSON (Content-Type: application/json)"
    return None


def limits_middleware(limits: ServerLimits, render: Render = json_error,
                      in_flight: Slots | None = None) -> Any:
    """The per-request rules of ``limits`` (see the module's docstring) as aiohttp middleware;
    ``in_flight``: the server's cap, when requests also arrive another way (HTTP/2)."""
    in_flight = in_flight or Slots(limits.max_in_flight, limits.queue_s)
    budget = Slots(limits.max_buffered_bytes, limits.queue_s)

    def refuse(status: int, reason: str) -> web.Response:
        response = render(status, reason)
        if status in (429, 503):
            response.headers["Retry-After"] = "1"
        if status in (408, 413, 415):
            response.force_close()  # an unread body must not be taken for the next request
        return response

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        protocol = request.transport.get_protocol() if request.transport is not None else None
        guard = protocol if isinstance(protocol, ConnectionGuard) else None
        if guard is not None:
            guard.request_started()
        try:
            if not await in_flight.acquire():
                return refuse(503, f"{limits.name}: more than {limits.max_in_flight} requests in "
                                   "flight; retry later")
            reader = _BodyReader(request, limits, budget)
            try:
                refusal = _head_refusal(request, limits)
                if refusal is not None:
                    return refuse(*refusal)
                request[_BODY] = reader
                return await handler(request)
            except Refused as exc:
                return refuse(exc.status, exc.reason)
            except RecursionError:
                return refuse(400, "the request is nested too deeply")
            finally:
                reader.release()
                in_flight.release()
        except (web.HTTPException, asyncio.CancelledError, ConnectionError):
            raise
        except Exception:
            # A bug, not the caller's doing: say so without a traceback page. The log has the
            # traceback and the path only (a query may carry a secret).
            log.exception("%s: unexpected error on %s %s", limits.name, request.method, request.path)
            return refuse(500, "internal error")
        finally:
            if guard is not None:
                guard.request_finished()

    return middleware


@dataclass
class Listener:
    """A listening server; :meth:`cleanup` stops it and closes its connections."""

    limits: ServerLimits
    runner: web.AppRunner
    in_flight: Slots  # the requests being handled, whichever protocol brought them
    server: asyncio.Server | None = None
    port: int = 0
    stats: ListenerStats = field(default_factory=ListenerStats)

    async def cleanup(self) -> None:
        if self.server is not None:
            self.server.close()
        await self.runner.cleanup()


Chooser = Callable[[asyncio.BaseTransport, ConnectionGuard, Listener], asyncio.Protocol]


def http1_only(transport: asyncio.BaseTransport, guard: ConnectionGuard, listener: Listener,
               ) -> asyncio.Protocol:
    """aiohttp's HTTP/1.1 protocol for every connection."""
    server = listener.runner.server
    assert server is not None  # the runner is set up before anything listens
    return server()


async def serve(app: web.Application, host: str, port: int, limits: ServerLimits, *,
                ssl_context: ssl.SSLContext | None = None, render: Render = json_error,
                choose: Chooser = http1_only, access_log: logging.Logger | None = None) -> Listener:
    """Serve ``app`` on ``host:port`` (0: a free one, see ``Listener.port``) under ``limits``.

    ``choose`` picks the protocol of a new connection (the extender picks HTTP/2 by ALPN);
    ``render`` words the refusals in the server's format."""
    in_flight = Slots(limits.max_in_flight, limits.queue_s)
    app.middlewares.insert(0, limits_middleware(limits, render, in_flight))
    runner = web.AppRunner(app, access_log=access_log, **limits.handler_options())
    await runner.setup()
    listener = Listener(limits, runner, in_flight)

    def protocol() -> asyncio.Protocol:
        return ConnectionGuard(limits, listener.stats,
                               lambda transport, guard: choose(transport, guard, listener))

    try:
        listener.server = await asyncio.get_running_loop().create_server(
            protocol, host, port, ssl=ssl_context, reuse_address=True,
            backlog=min(limits.max_connections, 1024),
            ssl_handshake_timeout=limits.header_timeout_s if ssl_context is not None else None)
    except BaseException:
        await runner.cleanup()
        raise
    sockets = listener.server.sockets
    listener.port = int(sockets[0].getsockname()[1]) if sockets else port
    return listener
