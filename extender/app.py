"""The extender's HTTP server: kube-scheduler extender v1 endpoints as an aiohttp app.

``make_app`` builds the application from its dependencies and nothing else, so tests,
benchmarks and ``pykueue extender`` compose it the same way and nothing listens at import.
Routes (``POST``, JSON): ``<prefix>/filter``, ``<prefix>/prioritize``, ``<prefix>/bind``;
``GET /healthz`` for probes. Malformed requests get HTTP 400 with the reason; an API
failure while deciding is reported in the reply's ``Error`` field (the scheduler then
retries the pod), never as a 5xx.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

from aiohttp import web
from aiohttp.typedefs import Middleware

from extender.node_cache import NodeCache
from extender.port import ClusterPort, PortError
from extender.service import TasExtender
from extender.wire import (
    binding_result,
    decode_json,
    filter_result,
    host_priority_list,
    parse_binding_args,
    parse_extender_args,
)
from kube.endpoints import BadRequest

log = logging.getLogger(__name__)

_dumps = partial(json.dumps, separators=(",", ":"))


@dataclass
class ExtenderDeps:
    port: ClusterPort
    node_cache: NodeCache | None = None
    prefix: str = ""  # the path part of the scheduler's urlPrefix, e.g. "/tas"
    max_bind_attempts: int = 8
    freeze_gc: bool = False  # see NodeCache; on in the server process, off in tests
    # Mutual TLS: the common names of client certificates allowed to call the verbs (the
    # TLS layer already required a certificate of our CA). None: no check (plain in-process
    # tests only; every server pykueue starts sets it).
    allowed_clients: frozenset[str] | None = None
    scheduler_name: str | None = None  # bind only pods of this scheduler (None: any)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _guarded(verb: str, handle: Handler) -> Handler:
    async def run(request: web.Request) -> web.StreamResponse:
        try:
            return await handle(request)
        except BadRequest as exc:
            return web.json_response({"Error": str(exc)}, status=400, dumps=_dumps)
        except PortError as exc:
            # Transient API trouble: answer 200 with Error so the scheduler retries the pod.
            log.warning("%s: API error: %s", verb, exc)
            if verb == "prioritize":
                return web.json_response([], dumps=_dumps)
            return web.json_response({"Error": f"API error: {exc}"}, dumps=_dumps)
        except Exception:
            # A bug must not take the scheduler's request down with a 500 page; it
            # fails this pod's attempt (retried later) and leaves a traceback here.
            log.exception("%s: internal error", verb)
            if verb == "prioritize":
                return web.json_response([], dumps=_dumps)
            return web.json_response({"Error": "internal error in the TAS extender"}, dumps=_dumps)

    return run


def client_name(request: web.Request) -> str | None:
    """The common name of the caller's verified client certificate, if any."""
    peer = request.transport.get_extra_info("peercert") if request.transport is not None else None
    for rdn in (peer or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


def _authorizer(allowed: frozenset[str]) -> Middleware:
    @web.middleware
    async def authorize(request: web.Request, handler: Handler) -> web.StreamResponse:
        caller = client_name(request)
        if caller is None:
            return web.json_response({"Error": "a client certificate is required"}, status=401, dumps=_dumps)
        if caller not in allowed:
            log.warning("refused %s %s from client %r", request.method, request.path, caller)
            return web.json_response({"Error": f"client {caller!r} may not call the extender"},
                                     status=403, dumps=_dumps)
        return await handler(request)
    return authorize


def make_app(deps: ExtenderDeps) -> web.Application:
    nodes = deps.node_cache or NodeCache(deps.port, freeze_gc=deps.freeze_gc)
    extender = TasExtender(deps.port, nodes, max_bind_attempts=deps.max_bind_attempts,
                           scheduler_name=deps.scheduler_name)
    prefix = deps.prefix.rstrip("/")

    async def filter_(request: web.Request) -> web.StreamResponse:
        args = parse_extender_args(decode_json(await request.read()))
        verdict = await extender.filter(args)
        return web.json_response(filter_result(args, verdict), dumps=_dumps)

    async def prioritize(request: web.Request) -> web.StreamResponse:
        args = parse_extender_args(decode_json(await request.read()))
        scores = await extender.prioritize(args)
        return web.json_response(host_priority_list(scores), dumps=_dumps)

    async def bind(request: web.Request) -> web.StreamResponse:
        args = parse_binding_args(decode_json(await request.read()))
        error = await extender.bind(args)
        if error:
            log.info("bind %s/%s -> %s refused: %s", args.pod_namespace, args.pod_name, args.node, error)
        return web.json_response(binding_result(error), dumps=_dumps)

    async def healthz(_: web.Request) -> web.StreamResponse:
        return web.Response(text="ok")

    middlewares = [] if deps.allowed_clients is None else [_authorizer(deps.allowed_clients)]
    app = web.Application(client_max_size=64 * 1024 * 1024,  # full NodeLists of large clusters
                          middlewares=middlewares)
    app.router.add_post(f"{prefix}/filter", _guarded("filter", filter_))
    app.router.add_post(f"{prefix}/prioritize", _guarded("prioritize", prioritize))
    app.router.add_post(f"{prefix}/bind", _guarded("bind", bind))
    app.router.add_get("/healthz", healthz)
    return app
