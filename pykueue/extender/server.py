"""Listening for the extender: HTTP/2 or HTTP/1.1 per connection, chosen by TLS ALPN.

The TLS context offers ``h2`` first, then ``http/1.1``. Once the handshake is done (the
client certificate already verified), a connection that agreed on ``h2`` is handed to
:class:`extender.http2.Http2Connection`, any other one to aiohttp's protocol for the app
(``extender.app``). Both serve the same :class:`Endpoints`. Without TLS (in-process tests
only) every connection is HTTP/1.1.

The context is changed in place (ALPN added), so a :class:`certs.rotation.CertRotator`
that reloads it keeps serving both protocols. Connections, deadlines and requests in flight
are held to :data:`extender.endpoints.LIMITS` by ``kube.http_limits``, whichever the protocol.
"""

from __future__ import annotations

import asyncio
import logging
import ssl

from aiohttp import web

from pykueue.extender.app import ENDPOINTS
from pykueue.extender.endpoints import LIMITS
from pykueue.extender.http2 import Http2Connection
from pykueue.kube.http_limits import ConnectionGuard, Listener, ServerLimits
from pykueue.kube.http_limits import serve as serve_with_limits

ALPN = ("h2", "http/1.1")
SHUTDOWN_TIMEOUT_S = 5.0


class ExtenderServer:
    """A listening extender; :meth:`stop` closes it and its connections."""

    def __init__(self, listener: Listener, http2: set[Http2Connection]) -> None:
        self.listener, self.http2 = listener, http2
        self.port = listener.port

    async def stop(self) -> None:
        if self.listener.server is not None:
            self.listener.server.close()
        await asyncio.gather(*(c.shutdown(SHUTDOWN_TIMEOUT_S) for c in list(self.http2)))
        await self.listener.cleanup()  # aiohttp's HTTP/1.1 connections


async def serve(app: web.Application, host: str, port: int, ssl_context: ssl.SSLContext | None,
                access_log: logging.Logger | None = None, limits: ServerLimits = LIMITS) -> ExtenderServer:
    """Listen on ``host:port`` (0: a free port, see ``ExtenderServer.port``) under ``limits``."""
    endpoints = app[ENDPOINTS]
    if ssl_context is not None:
        ssl_context.set_alpn_protocols(list(ALPN))
    connections: set[Http2Connection] = set()

    def choose(transport: asyncio.BaseTransport, guard: ConnectionGuard,
               listener: Listener) -> asyncio.Protocol:
        # The handshake is over (the client certificate verified): the agreed protocol decides.
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None and ssl_object.selected_alpn_protocol() == "h2":
            return Http2Connection(endpoints, connections, guard, limits, listener.in_flight)
        server = listener.runner.server
        assert server is not None
        return server()

    listener = await serve_with_limits(app, host, port, limits, ssl_context=ssl_context, choose=choose,
                                       access_log=access_log,
                                       render=lambda status, reason: web.json_response({"Error": reason},
                                                                                       status=status))
    return ExtenderServer(listener, connections)
