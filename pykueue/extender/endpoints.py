"""The extender's HTTP semantics, independent of the HTTP version that carries them.

kube-scheduler reaches the extender over HTTP/2 (``extender.http2``), probes and other
clients over HTTP/1.1 (``extender.app``); both hand every request to :class:`Endpoints`,
so routing, caller authorization, status codes and bodies are decided in one place.

Routes (``POST``, JSON): ``<prefix>/filter``, ``<prefix>/prioritize``, ``<prefix>/bind``;
``GET /healthz`` for probes. The caller is checked before anything else (401 without a
client certificate, 403 for a name not allowed), then the route (404, 405) and the media
type (415). Malformed requests get HTTP 400 with the reason, a body refused by the server's
limits (``kube.http_limits``) its status; an API failure while deciding is reported in the
reply's ``Error`` field (the scheduler then retries the pod), never as a 5xx.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from pykueue.extender.node_cache import NodeCache
from pykueue.extender.port import ClusterPort, PortError
from pykueue.extender.service import TasExtender
from pykueue.extender.wire import (
    binding_result,
    decode_json,
    filter_result,
    host_priority_list,
    parse_binding_args,
    parse_extender_args,
)
from pykueue.kube.endpoints import BadRequest
from pykueue.kube.http_limits import MiB, Refused, ServerLimits, is_json

log = logging.getLogger(__name__)

_dumps = partial(json.dumps, separators=(",", ":"))
JSON = "application/json; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
# Full NodeLists of large clusters (nodeCacheCapable: false) run to several MB.
MAX_BODY_BYTES = 64 * MiB
# Only holders of a client certificate of the extender's own CA get through the TLS handshake,
# so these limits are about a misbehaving scheduler more than a hostile one: its 16 binding
# goroutines and the filter calls beside them fit many times over; NodeLists of that size
# are held a few at a time.
LIMITS = ServerLimits(name="extender", max_body_bytes=MAX_BODY_BYTES, max_connections=256, max_in_flight=256,
                      max_buffered_bytes=192 * MiB, json_bodies=False, header_timeout_s=10.0,
                      body_timeout_s=10.0, keepalive_s=60.0)


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


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str = JSON


BodyReader = Callable[[], Awaitable[bytes]]
Verb = Callable[[bytes], Awaitable[Any]]


def _json(payload: Any, status: int = 200) -> Reply:
    return Reply(status, _dumps(payload).encode())


def client_name(peercert: Mapping[str, Any] | None) -> str | None:
    """The common name of a verified client certificate (``SSLObject.getpeercert()``)."""
    for rdn in (peercert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


class Endpoints:
    def __init__(self, deps: ExtenderDeps) -> None:
        nodes = deps.node_cache or NodeCache(deps.port, freeze_gc=deps.freeze_gc)
        self.extender = TasExtender(deps.port, nodes, max_bind_attempts=deps.max_bind_attempts,
                                    scheduler_name=deps.scheduler_name)
        self.allowed = deps.allowed_clients
        prefix = deps.prefix.rstrip("/")
        self.verbs: dict[str, tuple[str, Verb]] = {
            f"{prefix}/filter": ("filter", self._filter),
            f"{prefix}/prioritize": ("prioritize", self._prioritize),
            f"{prefix}/bind": ("bind", self._bind),
        }

    async def respond(self, method: str, path: str, caller: str | None, read: BodyReader,
                      content_type: str = "application/json") -> Reply:
        """The reply to one request; ``read`` is awaited only once the caller may be served."""
        refusal = self._authorize(caller, method, path)
        if refusal is not None:
            return refusal
        if path == "/healthz":
            return Reply(200, b"ok", TEXT) if method in ("GET", "HEAD") else _json({"Error": "use GET"}, 405)
        route = self.verbs.get(path)
        if route is None:
            return _json({"Error": f"no such path: {path}"}, 404)
        if method != "POST":
            return _json({"Error": "use POST"}, 405)
        if not is_json(content_type):
            return _json({"Error": "the body must be JSON (Content-Type: application/json)"}, 415)
        verb, handle = route
        return await self._guarded(verb, handle, read)

    def _authorize(self, caller: str | None, method: str, path: str) -> Reply | None:
        if self.allowed is None:
            return None
        if caller is None:
            return _json({"Error": "a client certificate is required"}, 401)
        if caller not in self.allowed:
            log.warning("refused %s %s from client %r", method, path, caller)
            return _json({"Error": f"client {caller!r} may not call the extender"}, 403)
        return None

    async def _guarded(self, verb: str, handle: Verb, read: BodyReader) -> Reply:
        try:
            return _json(await handle(await read()))
        except Refused as exc:
            return _json({"Error": exc.reason}, exc.status)
        except BadRequest as exc:
            return _json({"Error": str(exc)}, 400)
        except RecursionError:
            return _json({"Error": "the request is nested too deeply"}, 400)
        except PortError as exc:
            # Transient API trouble: answer 200 with Error so the scheduler retries the pod.
            log.warning("%s: API error: %s", verb, exc)
            return _json([] if verb == "prioritize" else {"Error": f"API error: {exc}"})
        except Exception:
            # A bug must not take the scheduler's request down with a 500 page; it
            # fails this pod's attempt (retried later) and leaves a traceback here.
            log.exception("%s: internal error", verb)
            return _json([] if verb == "prioritize" else {"Error": "internal error in the TAS extender"})

    async def _filter(self, body: bytes) -> Any:
        args = parse_extender_args(decode_json(body))
        return filter_result(args, await self.extender.filter(args))

    async def _prioritize(self, body: bytes) -> Any:
        args = parse_extender_args(decode_json(body))
        return host_priority_list(await self.extender.prioritize(args))

    async def _bind(self, body: bytes) -> Any:
        args = parse_binding_args(decode_json(body))
        error = await self.extender.bind(args)
        if error:
            log.info("bind %s/%s -> %s refused: %s", args.pod_namespace, args.pod_name, args.node, error)
        return binding_result(error)
