"""Listening for the extender: HTTP/2 or HTTP/1.1 per connection, chosen by TLS ALPN.

The TLS context offers ``h2`` first, then ``http/1.1``. Once the handshake is done (the
client certificate already verified), a connection that agreed on ``h2`` is handed to
:class:`extender.http2.Http2Connection`, any other one to aiohttp's protocol for the app
(``extender.app``). Both serve the same :class:`Endpoints`. Without TLS (in-process tests
only) every connection is HTTP/1.1.

The context is changed in place (ALPN added), so a :class:`certs.rotation.CertRotator`
that reloads it keeps serving both protocols.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable

from aiohttp import web

from extender.app import ENDPOINTS
from extender.http2 import Http2Connection

ALPN = ("h2", "http/1.1")
SHUTDOWN_TIMEOUT_S = 5.0


class _Negotiated(asyncio.Protocol):
    """Stands in until the handshake is over, then passes the transport on for good."""

    def __init__(self, http1: Callable[[], asyncio.Protocol], http2: Callable[[], asyncio.Protocol]) -> None:
        self.http1, self.http2 = http1, http2

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        ssl_object = transport.get_extra_info("ssl_object")
        agreed = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
        protocol = self.http2() if agreed == "h2" else self.http1()
        transport.set_protocol(protocol)
        protocol.connection_made(transport)


class ExtenderServer:
    """A listening extender; :meth:`stop` closes it and its connections."""

    def __init__(self, runner: web.AppRunner, server: asyncio.Server, http2: set[Http2Connection]) -> None:
        self.runner, self.server, self.http2 = runner, server, http2
        sockets = server.sockets
        self.port = int(sockets[0].getsockname()[1]) if sockets else 0

    async def stop(self) -> None:
        self.server.close()
        await asyncio.gather(*(c.shutdown(SHUTDOWN_TIMEOUT_S) for c in list(self.http2)))
        await self.runner.cleanup()  # aiohttp's HTTP/1.1 connections
        await self.server.wait_closed()


async def serve(app: web.Application, host: str, port: int, ssl_context: ssl.SSLContext | None,
                access_log: logging.Logger | None = None) -> ExtenderServer:
    """Listen on ``host:port`` (0: a free port, see ``ExtenderServer.port``)."""
    runner = web.AppRunner(app, access_log=access_log)
    await runner.setup()
    endpoints = app[ENDPOINTS]
    if ssl_context is not None:
        ssl_context.set_alpn_protocols(list(ALPN))
    http1 = runner.server
    assert http1 is not None  # set up above
    connections: set[Http2Connection] = set()

    def negotiated() -> asyncio.Protocol:
        return _Negotiated(http1, lambda: Http2Connection(endpoints, connections))

    try:
        listener = await asyncio.get_running_loop().create_server(
            negotiated, host, port, ssl=ssl_context, reuse_address=True)
    except BaseException:
        await runner.cleanup()
        raise
    return ExtenderServer(runner, listener, connections)
