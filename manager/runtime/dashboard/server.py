"""The dashboard's aiohttp application: authentication, authorization, JSON pages, live events.

Only I/O lives here; what a page contains is :mod:`.view`'s business. Every path except the
health probe needs a valid bearer token (401 otherwise), taken from the ``Authorization``
header or, for the browser, from an HttpOnly ``SameSite=Strict`` cookie: ``/?token=...``
(the link ``pykueue dev up`` prints, or one made from ``kubectl create token``) is checked
once and exchanged for that cookie by a redirect that drops the token from the address, since
an ``EventSource`` cannot send headers. Each data request then needs the rights
:mod:`.access` names (403 otherwise). Everything is read-only: only GET (and HEAD) exist.

Live updates are server-sent events carrying a revision and the totals; the page refetches
what it shows when the revision moves. A stream re-checks its caller's token and rights at
every event and heartbeat, so a revoked token stops receiving within ``HEARTBEAT_S``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from aiohttp import web

from manager.runtime.token_review import TokenAuthenticator, bearer_token
from manager.runtime.visibility.auth import Authorizer, RequestAttributes, UserInfo

from . import access, view
from .changes import ChangeFeed

log = logging.getLogger(__name__)

COOKIE = "pykueue-dashboard-token"
HEARTBEAT_S = 15.0
STATIC_FILES = {"app.js": "text/javascript", "app.css": "text/css"}
SECURITY_HEADERS = {
    # Our own files only; the page never loads anything from elsewhere.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Explainer = view.Explainer

FEED: web.AppKey[ChangeFeed] = web.AppKey("feed", ChangeFeed)
AUTHENTICATOR: web.AppKey[TokenAuthenticator] = web.AppKey("authenticator", TokenAuthenticator)
AUTHORIZER: web.AppKey[Authorizer] = web.AppKey("authorizer", Authorizer)
EXPLAINER: web.AppKey[Explainer | None] = web.AppKey("explainer", object)  # type: ignore[arg-type]
HEARTBEAT: web.AppKey[float] = web.AppKey("heartbeat", float)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message, "code": status}, status=status, headers=SECURITY_HEADERS)


def _bearer(request: web.Request) -> str | None:
    return bearer_token(request.headers.get("Authorization")) or request.cookies.get(COOKIE) or None


async def _authenticate(request: web.Request, token: str) -> UserInfo | web.Response:
    try:
        user = await request.app[AUTHENTICATOR].authenticate(token)
    except Exception as exc:  # the API server could not be asked: not the caller's fault
        log.warning("dashboard: token review failed: %s", type(exc).__name__)
        return _error(503, "authentication is unavailable; try again")
    if user is None:
        return _error(401, "invalid or expired token")
    return user


@dataclass(frozen=True)
class Caller:
    user: UserInfo
    token: str


CallerHandler = Callable[[web.Request, Caller], Awaitable[web.StreamResponse]]


def _signed_in(handler: CallerHandler) -> Handler:
    """The handler, behind token authentication (401 without a valid token)."""
    async def authenticated(request: web.Request) -> web.StreamResponse:
        token = _bearer(request)
        if not token:
            return _error(401, "a bearer token is required (open the link with ?token=..., or send "
                               "Authorization: Bearer)")
        user = await _authenticate(request, token)
        if isinstance(user, web.Response):
            if COOKIE in request.cookies:
                user.del_cookie(COOKIE, path="/")
            return user
        return await handler(request, Caller(user, token))

    return authenticated


@web.middleware
async def _read_only_and_link_tokens(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method not in ("GET", "HEAD"):
        return _error(405, "the dashboard is read-only")
    offered = request.query.get("token") if request.path == "/" else None
    if offered:
        user = await _authenticate(request, offered)
        if isinstance(user, web.Response):
            return user
        # Keep the token in a cookie scripts cannot read and other sites cannot send, and
        # take it out of the address bar and history.
        redirect = web.HTTPSeeOther("/", headers=SECURITY_HEADERS)
        redirect.set_cookie(COOKIE, offered, path="/", httponly=True, samesite="Strict",
                            secure=request.secure)
        raise redirect
    return await handler(request)


async def _denied(request: web.Request, caller: Caller,
                  rules: Sequence[RequestAttributes]) -> web.Response | None:
    """403 for the first rule the caller fails, else None."""
    user = caller.user
    for attributes in rules:
        try:
            decision = await request.app[AUTHORIZER].authorize(user, attributes)
        except Exception as exc:
            log.warning("dashboard: access review failed: %s", type(exc).__name__)
            return _error(503, "authorization is unavailable; try again")
        if not decision.allowed:
            return _error(403, f'user "{user.name}" may not {access.describe(attributes)}')
    return None


def _json(data: Any) -> web.Response:
    return web.Response(text=json.dumps(data, separators=(",", ":")), content_type="application/json",
                        headers=SECURITY_HEADERS)


class _BadQuery(ValueError):
    pass


def _page(request: web.Request) -> int:
    raw = request.query.get("page", "0") or "0"
    try:
        return max(0, int(raw))
    except ValueError:
        raise _BadQuery(f"page must be a number, not {raw!r}") from None


def _namespace(request: web.Request) -> str | None:
    return request.query.get("namespace") or None


async def _overview(request: web.Request, caller: Caller) -> web.StreamResponse:
    denied = await _denied(request, caller, access.cluster_views(request.path))
    if denied is not None:
        return denied
    feed = request.app[FEED]
    revision, index = feed.index()
    return _json({"revision": revision, **view.overview(feed.core, index)})


async def _cluster_queues(request: web.Request, caller: Caller) -> web.StreamResponse:
    denied = await _denied(request, caller, access.cluster_views(request.path))
    if denied is not None:
        return denied
    feed = request.app[FEED]
    revision, index = feed.index()
    return _json({"revision": revision, **view.cohort_tree_page(feed.core, index, _page(request))})


async def _local_queues(request: web.Request, caller: Caller) -> web.StreamResponse:
    namespace = _namespace(request)
    denied = await _denied(request, caller, access.local_queues(namespace, request.path))
    if denied is not None:
        return denied
    feed = request.app[FEED]
    revision, index = feed.index()
    return _json({"revision": revision,
                  **view.local_queues_page(feed.core, index, _page(request), namespace)})


async def _workloads(request: web.Request, caller: Caller) -> web.StreamResponse:
    namespace = _namespace(request)
    state = request.query.get("state", view.PENDING_STATE)
    if state not in view.STATES:
        return _error(400, f"state must be one of {', '.join(view.STATES)}")
    denied = await _denied(request, caller, access.workloads(namespace, request.path))
    if denied is not None:
        return denied
    revision, index = request.app[FEED].index()
    page = view.workloads_page(index, state, _page(request), namespace=namespace,
                               cluster_queue=request.query.get("clusterQueue") or None)
    return _json({"revision": revision, "state": state, **page})


async def _workload(request: web.Request, caller: Caller) -> web.StreamResponse:
    namespace, name = request.match_info["namespace"], request.match_info["name"]
    denied = await _denied(request, caller, access.workloads(namespace, request.path))
    if denied is not None:
        return denied
    feed = request.app[FEED]
    revision, index = feed.index()
    detail = view.workload_detail(feed.core, index, f"{namespace}/{name}", request.app[EXPLAINER])
    if detail is None:
        return _error(404, f"workload {namespace}/{name} not found")
    return _json({"revision": revision, **detail})


async def _topology(request: web.Request, caller: Caller) -> web.StreamResponse:
    denied = await _denied(request, caller, access.topology(request.path))
    if denied is not None:
        return denied
    feed = request.app[FEED]
    revision = feed.check()
    return _json({"revision": revision, **view.topology_view(feed.core)})


async def _whoami(request: web.Request, caller: Caller) -> web.StreamResponse:
    return _json({"user": caller.user.name})


async def _still_allowed(request: web.Request, caller: Caller, rules: Sequence[RequestAttributes]) -> bool:
    user = await request.app[AUTHENTICATOR].authenticate(caller.token)
    return user is not None and await _denied(request, Caller(user, caller.token), rules) is None


async def _events(request: web.Request, caller: Caller) -> web.StreamResponse:
    """Server-sent events: ``change`` with the revision (and, for cluster-wide viewers, the
    totals) when the core changed, a comment line as heartbeat otherwise."""
    namespace = _namespace(request)
    rules = access.workloads(namespace, request.path)
    denied = await _denied(request, caller, rules)
    if denied is not None:
        return denied
    cluster_wide = namespace is None
    feed = request.app[FEED]
    response = web.StreamResponse(headers={**SECURITY_HEADERS, "Content-Type": "text/event-stream",
                                           "X-Accel-Buffering": "no"})
    await response.prepare(request)
    sent = 0
    try:
        while not feed.closed:
            revision, index = feed.index()
            if revision != sent:
                summary = view.change_summary(feed.core, index, revision) if cluster_wide \
                    else {"revision": revision}
                await response.write(f"event: change\ndata: {json.dumps(summary)}\n\n".encode())
                sent = revision
            else:
                await response.write(b": heartbeat\n\n")
            await feed.wait_after(sent, request.app[HEARTBEAT])
            if not await _still_allowed(request, caller, rules):
                await response.write(b"event: denied\ndata: {}\n\n")
                break
    except (ConnectionResetError, ConnectionError):
        pass  # the page went away
    return response


def _static(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


async def _index(_: web.Request, __: Caller) -> web.StreamResponse:
    return web.Response(body=_static("index.html"), content_type="text/html", headers=SECURITY_HEADERS)


async def _asset(request: web.Request, _: Caller) -> web.StreamResponse:
    name = request.match_info["name"]
    content_type = STATIC_FILES.get(name)
    if content_type is None:
        return _error(404, "no such file")
    return web.Response(body=_static(name), content_type=content_type, headers=SECURITY_HEADERS)


async def _ok(_: web.Request) -> web.StreamResponse:
    return web.Response(text="ok")


@web.middleware
async def _bad_queries(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except _BadQuery as bad:
        return _error(400, str(bad))


def make_app(feed: ChangeFeed, authenticator: TokenAuthenticator, authorizer: Authorizer,
             explainer: Explainer | None = None, heartbeat_s: float = HEARTBEAT_S) -> web.Application:
    """The dashboard as an aiohttp application over ``feed``'s core; serve it with :func:`start`."""
    app = web.Application(middlewares=[_read_only_and_link_tokens, _bad_queries])
    app[FEED], app[AUTHENTICATOR], app[AUTHORIZER] = feed, authenticator, authorizer
    app[EXPLAINER], app[HEARTBEAT] = explainer, heartbeat_s
    def get(path: str, handler: CallerHandler) -> web.RouteDef:
        return web.get(path, _signed_in(handler))

    app.add_routes([
        web.get("/healthz", _ok), web.get("/readyz", _ok),
        get("/", _index), get("/static/{name}", _asset),
        get("/api/whoami", _whoami), get("/api/overview", _overview),
        get("/api/clusterqueues", _cluster_queues), get("/api/localqueues", _local_queues),
        get("/api/workloads", _workloads), get("/api/workloads/{namespace}/{name}", _workload),
        get("/api/topology", _topology), get("/api/events", _events),
    ])

    async def stop_streams(_: web.Application) -> None:
        await feed.close()  # open event streams end, so shutdown does not wait for them

    app.on_shutdown.append(stop_streams)
    return app


async def start(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, int]:
    """Serve ``app`` (plain HTTP: reach it through ``kubectl port-forward`` or a TLS-terminating
    proxy); returns the runner (``cleanup()`` stops it) and the bound port. No access log:
    a request line may carry a token."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    return runner, port or int(runner.addresses[0][1])
