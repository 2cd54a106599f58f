"""The aiohttp application of the visibility API server, and a helper to serve it over TLS.

Request flow: health probes answer without credentials; every other request must carry the
aggregator's verified identity (401 otherwise) and pass the authorizer (403 otherwise)
before discovery or the pending-workloads handlers run. Handlers only parse the request,
ask the provider for one ClusterQueue snapshot and hand it to the pure paging rules.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from pykueue.api.keys import VISIBILITY_GROUP
from pykueue.kube.http_limits import KiB, Listener, ServerLimits, serve
from pykueue.manager.runtime.visibility import discovery, pagination
from pykueue.manager.runtime.visibility.auth import (
    Authorizer,
    RequestAttributes,
    RequestHeaderAuthenticator,
    ReviewsThrottled,
    UserInfo,
)
from pykueue.manager.runtime.visibility.pagination import PositionedWorkload
from pykueue.manager.runtime.visibility.provider import PendingWorkloadsProvider
from pykueue.manager.runtime.visibility.status import not_found, status_response

log = logging.getLogger(__name__)

PROVIDER: web.AppKey[PendingWorkloadsProvider] = web.AppKey("provider", PendingWorkloadsProvider)
UNAUTHENTICATED_PATHS = frozenset({"/healthz", "/readyz", "/livez"})

GROUP_PREFIX = f"/apis/{VISIBILITY_GROUP}"
# Every served version, as a route segment: the handlers are the same for each.
ANY_VERSION_PREFIX = GROUP_PREFIX + "/{version:" + "|".join(discovery.VERSIONS) + "}"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# Its caller is kube-apiserver's aggregator (and through it kubectl): GETs without bodies, a
# connection per concurrent call. Without the front-proxy client certificate nothing gets
# past a 401, so these only have to keep a flood of such 401s from hurting the other servers.
LIMITS = ServerLimits(name="visibility", max_body_bytes=16 * KiB, max_connections=256, max_in_flight=32,
                      max_buffered_bytes=256 * KiB, json_bodies=False, header_timeout_s=10.0,
                      body_timeout_s=5.0, keepalive_s=60.0)


def _attributes(request: web.Request) -> RequestAttributes:
    verb = "get" if request.method in ("GET", "HEAD") else request.method.lower()
    info = request.match_info
    version = info.get("version", discovery.VERSION)
    if "cluster_queue" in info:
        return RequestAttributes(verb=verb, path=request.path, resource="clusterqueues",
                                 subresource="pendingworkloads", name=info["cluster_queue"],
                                 group=VISIBILITY_GROUP, version=version)
    if "local_queue" in info:
        return RequestAttributes(verb=verb, path=request.path, resource="localqueues",
                                 subresource="pendingworkloads", name=info["local_queue"],
                                 namespace=info["namespace"], group=VISIBILITY_GROUP,
                                 version=version)
    return RequestAttributes(verb=verb, path=request.path)


def _forbidden_message(user: UserInfo, attributes: RequestAttributes) -> str:
    if attributes.resource is None:
        return f'forbidden: User "{user.name}" cannot {attributes.verb} path "{attributes.path}"'
    scope = f'in the namespace "{attributes.namespace}"' if attributes.namespace else "at the cluster scope"
    return (f'{attributes.resource}.{VISIBILITY_GROUP} "{attributes.name}" is forbidden: User "{user.name}" '
            f'cannot {attributes.verb} resource "{attributes.resource}/{attributes.subresource}" '
            f'in API group "{VISIBILITY_GROUP}" {scope}')


def _auth_middleware(authenticator: RequestHeaderAuthenticator, authorizer: Authorizer) -> Any:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in UNAUTHENTICATED_PATHS:
            return await handler(request)
        peercert = request.transport.get_extra_info("peercert") if request.transport else None
        user = authenticator.authenticate(peercert, request.headers)
        if user is None:
            return status_response(401, "Unauthorized")
        attributes = _attributes(request)
        try:
            decision = await authorizer.authorize(user, attributes)
        except Exception as exc:  # kube-apiserver could not be asked, or too many new questions
            throttled = isinstance(exc, ReviewsThrottled)
            log.warning("visibility: access review failed: %s", type(exc).__name__)
            return status_response(429 if throttled else 503, "too many new requests to authorize; retry"
                                   if throttled else "authorization is unavailable; retry")
        if not decision.allowed:
            return status_response(403, _forbidden_message(user, attributes))
        return await handler(request)

    return middleware


class _InvalidQuery(ValueError):
    pass


def _query_int(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise _InvalidQuery(f"invalid {name} {raw!r}: not an integer") from None


def _item(positioned: PositionedWorkload) -> dict[str, Any]:
    workload = positioned.workload
    metadata: dict[str, Any] = {"name": workload.name, "namespace": workload.namespace,
                                "creationTimestamp": workload.creation_timestamp}
    if workload.owner_references:
        metadata["ownerReferences"] = [
            {"apiVersion": o.api_version, "kind": o.kind, "name": o.name, "uid": o.uid}
            for o in workload.owner_references]
    item = {"metadata": metadata, "priority": workload.priority, "localQueueName": workload.local_queue,
            "positionInClusterQueue": positioned.position_in_cluster_queue,
            "positionInLocalQueue": positioned.position_in_local_queue}
    if workload.reason:
        item["reason"], item["message"] = workload.reason, workload.message
    return item


def _summary(request: web.Request, items: list[PositionedWorkload]) -> web.Response:
    version = request.match_info.get("version", discovery.VERSION)
    return web.json_response({"kind": "PendingWorkloadsSummary",
                              "apiVersion": discovery.group_version(version),
                              "metadata": {}, "items": [_item(i) for i in items]})


def _page(request: web.Request) -> pagination.Page:
    return pagination.page_from_query(_query_int(request, "limit"), _query_int(request, "offset"))


async def _cluster_queue_pending(request: web.Request) -> web.StreamResponse:
    name = request.match_info["cluster_queue"]
    try:
        page = _page(request)
    except _InvalidQuery as invalid:
        return status_response(400, str(invalid))
    snapshot = request.app[PROVIDER].cluster_queue_snapshot(name)
    if snapshot is None:
        return not_found("clusterqueue", name)
    return _summary(request, pagination.cluster_queue_page(snapshot, page))


async def _local_queue_pending(request: web.Request) -> web.StreamResponse:
    namespace, name = request.match_info["namespace"], request.match_info["local_queue"]
    try:
        page = _page(request)
    except _InvalidQuery as invalid:
        return status_response(400, str(invalid))
    provider = request.app[PROVIDER]
    cluster_queue = provider.local_queue_exists(namespace, name)
    if cluster_queue is None:
        return not_found("localqueue", name)
    # A LocalQueue pointing at a ClusterQueue that does not exist (yet) has nothing pending.
    snapshot = provider.cluster_queue_snapshot(cluster_queue) or ()
    return _summary(request, pagination.local_queue_page(snapshot, namespace, name, page))


def _document(build: Callable[[], dict[str, Any]]) -> Handler:
    async def handler(_: web.Request) -> web.StreamResponse:
        return web.json_response(build())

    return handler


async def _resource_list(request: web.Request) -> web.StreamResponse:
    return web.json_response(discovery.api_resource_list(request.match_info["version"]))


async def _ok(_: web.Request) -> web.StreamResponse:
    return web.Response(text="ok")


async def _not_found_fallback(request: web.Request) -> web.StreamResponse:
    return status_response(404, f'the server could not find the requested resource ("{request.path}")')


def make_app(provider: PendingWorkloadsProvider, authenticator: RequestHeaderAuthenticator,
             authorizer: Authorizer) -> web.Application:
    """The visibility API server as an aiohttp application; serve it with :func:`start`."""
    app = web.Application(middlewares=[_auth_middleware(authenticator, authorizer)])
    app[PROVIDER] = provider
    get = web.get
    app.add_routes([
        get("/healthz", _ok), get("/readyz", _ok), get("/livez", _ok),
        get("/apis", _document(discovery.api_group_list)),
        get(GROUP_PREFIX, _document(discovery.api_group)),
        get(ANY_VERSION_PREFIX, _resource_list),
        get("/openapi/v2", _document(discovery.openapi_v2)),
        get("/openapi/v3", _document(discovery.openapi_v3_index)),
        *(get(f"/openapi/v3/{discovery.openapi_v3_group_path(v)}", _document(discovery.openapi_v3_group))
          for v in discovery.VERSIONS),
        get(ANY_VERSION_PREFIX + "/clusterqueues/{cluster_queue}/pendingworkloads", _cluster_queue_pending),
        get(ANY_VERSION_PREFIX + "/namespaces/{namespace}/localqueues/{local_queue}/pendingworkloads",
            _local_queue_pending),
    ])
    # Anything else (other verbs included) still answers in Status JSON.
    app.router.add_route("*", "/{tail:.*}", _not_found_fallback)
    return app


async def start(app: web.Application, ssl_context: ssl.SSLContext, host: str = "127.0.0.1",
                port: int = 0) -> tuple[Listener, int]:
    """Serve ``app`` over TLS under :data:`LIMITS`; returns the listener (call ``cleanup()`` to
    stop) and the bound port (port 0: the kernel picks one)."""
    listener = await serve(app, host, port, LIMITS, ssl_context=ssl_context,
                           render=lambda code, reason: status_response(code, reason))
    return listener, listener.port
