"""The extender's HTTP/1.1 side: an aiohttp app handing every request to :class:`Endpoints`.

``make_app`` builds the application from its dependencies and nothing else, so tests,
benchmarks and ``pykueue extender`` compose it the same way and nothing listens at import.
The app also carries its :class:`Endpoints` (``app[ENDPOINTS]``) so ``extender.server``
serves HTTP/2 connections with the very same instance (one node cache, one set of bind locks).
"""

from __future__ import annotations

from aiohttp import web

from pykueue.extender.endpoints import MAX_BODY_BYTES, Endpoints, ExtenderDeps, client_name
from pykueue.kube.http_limits import Refused, read_body

__all__ = ["ENDPOINTS", "ExtenderDeps", "make_app"]

ENDPOINTS = web.AppKey("endpoints", Endpoints)


def make_app(deps: ExtenderDeps) -> web.Application:
    endpoints = Endpoints(deps)

    async def handle(request: web.Request) -> web.StreamResponse:
        async def read() -> bytes:
            try:
                return await read_body(request)
            except web.HTTPRequestEntityTooLarge:  # served without the limits (in-process tests)
                raise Refused(413, f"body larger than {MAX_BODY_BYTES} bytes") from None

        transport = request.transport
        caller = client_name(transport.get_extra_info("peercert") if transport is not None else None)
        reply = await endpoints.respond(request.method, request.path, caller, read,
                                        request.headers.get("Content-Type", ""))
        headers = {"Content-Type": reply.content_type}
        return web.Response(status=reply.status, body=reply.body, headers=headers)

    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app[ENDPOINTS] = endpoints
    app.router.add_route("*", "/{path:.*}", handle)
    return app
