"""The dashboard's aiohttp application: sign-in, authorization, JSON pages, live events.

Only I/O lives here; what a page contains is :mod:`.view`'s business. Every path except the
health probes and the sign-in page needs a valid bearer token (401 otherwise; a browser asking
for ``/`` is sent to ``/login``). Scripts send it as ``Authorization: Bearer``; a browser signs
in once with a form (:mod:`.sign_in`: ``POST /login``, same-origin and carrying the form's
token) and then holds an opaque session id (:mod:`.sessions`) in an HttpOnly, SameSite=Strict
cookie, Secure when served over TLS, since an ``EventSource`` cannot send headers. A link
``/?token=...`` no longer signs in: it leads to the form with the token filled in.
Each data request then needs the rights :mod:`.access` names (403 otherwise). Signing in and
out aside, everything is read-only: only GET (and HEAD) exist.

Live updates are server-sent events carrying a revision and the totals; the page refetches
what it shows when the revision moves. A stream re-checks its caller's token, session and
rights at every event and heartbeat, so a revoked token stops receiving within
``HEARTBEAT_S``; an error while streaming ends the stream (the browser reconnects), never the
server.
"""

from __future__ import annotations

import json
import logging
import ssl
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from aiohttp import web

from pykueue.kube.http_limits import KiB, Listener, ServerLimits, Slots, read_body, serve
from pykueue.manager.runtime.token_review import TokenAuthenticator, bearer_token
from pykueue.manager.runtime.visibility.auth import Authorizer, RequestAttributes, ReviewsThrottled, UserInfo

from . import access, sign_in, view
from .changes import ChangeFeed
from .sessions import SessionStore

log = logging.getLogger(__name__)

SESSION_COOKIE = "pykueue-dashboard-session"
OLD_TOKEN_COOKIE = "pykueue-dashboard-token"  # held the raw token before sessions; removed on sight
HEARTBEAT_S = 15.0
MAX_EVENT_STREAMS = 32
STATIC_FILES = {"app.js": "text/javascript", "app.css": "text/css", "login.js": "text/javascript"}
PUBLIC_STATIC = frozenset({"app.css", "login.js"})  # what the sign-in page needs
SECURITY_HEADERS = {
    # Our own files only; the page never loads anything from elsewhere, nor posts elsewhere.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
                               "form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    # Same-origin only: a browser then names our origin on the sign-in POST (with no-referrer it
    # says "null"), and no address of ours reaches another site.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
# People with a browser, a handful at a time: small requests (a sign-in form with a token is
# the largest), a few pages' worth in flight, and the event streams capped on their own.
LIMITS = ServerLimits(name="dashboard", max_body_bytes=16 * KiB, max_connections=128, max_in_flight=64,
                      max_buffered_bytes=512 * KiB, json_bodies=False, header_timeout_s=10.0,
                      body_timeout_s=5.0, keepalive_s=30.0)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Explainer = view.Explainer

FEED: web.AppKey[ChangeFeed] = web.AppKey("feed", ChangeFeed)
AUTHENTICATOR: web.AppKey[TokenAuthenticator] = web.AppKey("authenticator", TokenAuthenticator)
AUTHORIZER: web.AppKey[Authorizer] = web.AppKey("authorizer", Authorizer)
EXPLAINER: web.AppKey[Explainer | None] = web.AppKey("explainer", object)  # type: ignore[arg-type]
HEARTBEAT: web.AppKey[float] = web.AppKey("heartbeat", float)
SESSIONS: web.AppKey[SessionStore] = web.AppKey("sessions", SessionStore)
FORMS: web.AppKey[sign_in.FormTokens] = web.AppKey("forms", sign_in.FormTokens)
STREAMS: web.AppKey[Slots] = web.AppKey("streams", Slots)


def _error(status: int, message: str) -> web.Response:
    headers = {**SECURITY_HEADERS, "Retry-After": "1"} if status in (429, 503) else SECURITY_HEADERS
    return web.json_response({"error": message, "code": status}, status=status, headers=headers)


async def _authenticate(request: web.Request, token: str) -> UserInfo | web.Response:
    try:
        user = await request.app[AUTHENTICATOR].authenticate(token)
    except ReviewsThrottled as exc:
        return _error(429, str(exc))
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
    session_id: str | None = None  # a browser's; None for an Authorization header


CallerHandler = Callable[[web.Request, Caller], Awaitable[web.StreamResponse]]


def _see_other(location: str) -> web.Response:
    return web.Response(status=303, headers={**SECURITY_HEADERS, "Location": location})


def _signed_out(request: web.Request, refusal: web.Response) -> web.StreamResponse:
    """What a caller without a valid token gets: the page's address sends a browser to the
    sign-in form, everything else the refusal; stale cookies go."""
    response: web.StreamResponse = refusal
    if request.path == "/" and refusal.status == 401:
        response = _see_other("/login")
    for cookie in (SESSION_COOKIE, OLD_TOKEN_COOKIE):
        if cookie in request.cookies:
            response.del_cookie(cookie, path="/")
    return response


def _signed_in(handler: CallerHandler) -> Handler:
    """The handler, behind token authentication (401 without a valid token)."""
    async def authenticated(request: web.Request) -> web.StreamResponse:
        token = bearer_token(request.headers.get("Authorization"))
        session_id = None
        if token is None:
            session_id = request.cookies.get(SESSION_COOKIE)
            session = request.app[SESSIONS].get(session_id)
            if session is None:
                return _signed_out(request, _error(401, "not signed in: sign in at /login, or send "
                                                        "Authorization: Bearer"))
            token = session.token
        user = await _authenticate(request, token)
        if isinstance(user, web.Response):
            if user.status == 401:
                request.app[SESSIONS].end(session_id)
                return _signed_out(request, user)
            return user
        return await handler(request, Caller(user, token, session_id))

    return authenticated


@web.middleware
async def _read_only(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method not in ("GET", "HEAD") and request.path not in ("/login", "/logout"):
        return _error(405, "the dashboard is read-only")
    if request.path == "/" and "token" in request.query:
        # A link with the token in its query (as older `pykueue dev up` printed): it no longer
        # signs in; the sign-in form gets the token in the fragment, which stays in the browser.
        fragment = urllib.parse.urlencode({"token": request.query.get("token", "")})
        return _see_other(f"/login#{fragment}")
    return await handler(request)


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html", headers=SECURITY_HEADERS)


async def _login_page(request: web.Request) -> web.StreamResponse:
    return _html(sign_in.page(request.app[FORMS].issue()))


async def _login(request: web.Request) -> web.StreamResponse:
    forms = request.app[FORMS]

    def again(status: int, message: str) -> web.Response:
        return _html(sign_in.page(forms.issue(), message), status)

    if not sign_in.same_origin(request):
        return again(403, "Sign-in must come from this page (its Origin did not match).")
    if request.content_type != "application/x-www-form-urlencoded":
        return again(415, "Sign-in takes the form's fields (application/x-www-form-urlencoded).")
    try:
        fields = urllib.parse.parse_qs((await read_body(request)).decode(), max_num_fields=4)
    except (UnicodeDecodeError, ValueError):
        return again(400, "The form could not be read.")
    token = (fields.get("token") or [""])[0].strip()
    if not forms.valid((fields.get("csrf") or [""])[0]):
        return again(403, "The form expired or did not come from this page; sign in again.")
    if not token:
        return again(400, "Enter a token.")
    user = await _authenticate(request, token)
    if isinstance(user, web.Response):
        reason = {401: "That token is not valid (or has expired).",
                  429: "Too many sign-ins right now; try again in a second."}
        return again(user.status, reason.get(user.status, "Kubernetes could not be asked; try again."))
    session_id = request.app[SESSIONS].create(token, user)
    response = _see_other("/")
    response.set_cookie(SESSION_COOKIE, session_id, path="/", httponly=True, samesite="Strict",
                        secure=request.secure, max_age=int(request.app[SESSIONS].ttl_s))
    response.del_cookie(OLD_TOKEN_COOKIE, path="/")
    return response


async def _logout(request: web.Request) -> web.StreamResponse:
    if not sign_in.same_origin(request):
        return _error(403, "sign-out must come from the dashboard's page")
    request.app[SESSIONS].end(request.cookies.get(SESSION_COOKIE))
    response = _see_other("/login")
    response.del_cookie(SESSION_COOKIE, path="/")
    return response


async def _denied(request: web.Request, caller: Caller,
                  rules: Sequence[RequestAttributes]) -> web.Response | None:
    """403 for the first rule the caller fails, else None."""
    user = caller.user
    for attributes in rules:
        try:
            decision = await request.app[AUTHORIZER].authorize(user, attributes)
        except ReviewsThrottled as exc:
            return _error(429, str(exc))
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
    """Whether the stream may go on: the session still open, the token still valid, the rights
    still there. When kube-apiserver cannot say right now, the stream goes on until it can."""
    if caller.session_id is not None and request.app[SESSIONS].get(caller.session_id) is None:
        return False
    try:
        user = await request.app[AUTHENTICATOR].authenticate(caller.token)
    except Exception as exc:
        log.info("dashboard: could not re-check a stream's token: %s", type(exc).__name__)
        return True
    if user is None:
        return False
    denied = await _denied(request, Caller(user, caller.token, caller.session_id), rules)
    return denied is None or denied.status not in (401, 403)


async def _events(request: web.Request, caller: Caller) -> web.StreamResponse:
    """Server-sent events: ``change`` with the revision (and, for cluster-wide viewers, the
    totals) when the core changed, a comment line as heartbeat otherwise."""
    namespace = _namespace(request)
    rules = access.workloads(namespace, request.path)
    denied = await _denied(request, caller, rules)
    if denied is not None:
        return denied
    streams = request.app[STREAMS]
    if not await streams.acquire():
        return _error(503, f"more than {MAX_EVENT_STREAMS} live streams are open; retry later")
    try:
        return await _stream(request, caller, rules, namespace is None)
    finally:
        streams.release()


async def _stream(request: web.Request, caller: Caller, rules: Sequence[RequestAttributes],
                  cluster_wide: bool) -> web.StreamResponse:
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
    except Exception:
        # The headers are sent: no error page can follow. End the stream (the browser
        # reconnects) and keep the cause for whoever reads the log.
        log.exception("dashboard: event stream failed")
    return response


def _static(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


async def _index(_: web.Request, __: Caller) -> web.StreamResponse:
    return web.Response(body=_static("index.html"), content_type="text/html", headers=SECURITY_HEADERS)


async def _asset(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    content_type = STATIC_FILES.get(name)
    if content_type is None:
        return _error(404, "no such file")
    return web.Response(body=_static(name), content_type=content_type, headers=SECURITY_HEADERS)


_signed_in_asset = _signed_in(lambda request, _: _asset(request))


async def _static_file(request: web.Request) -> web.StreamResponse:
    """The sign-in page's files are public; the others need a signed-in caller."""
    if request.match_info["name"] in PUBLIC_STATIC:
        return await _asset(request)
    return await _signed_in_asset(request)


async def _ok(_: web.Request) -> web.StreamResponse:
    return web.Response(text="ok")


@web.middleware
async def _bad_queries(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except _BadQuery as bad:
        return _error(400, str(bad))


def make_app(feed: ChangeFeed, authenticator: TokenAuthenticator, authorizer: Authorizer,
             explainer: Explainer | None = None, heartbeat_s: float = HEARTBEAT_S,
             sessions: SessionStore | None = None) -> web.Application:
    """The dashboard as an aiohttp application over ``feed``'s core; serve it with :func:`start`."""
    app = web.Application(middlewares=[_read_only, _bad_queries], client_max_size=LIMITS.max_body_bytes)
    app[FEED], app[AUTHENTICATOR], app[AUTHORIZER] = feed, authenticator, authorizer
    app[EXPLAINER], app[HEARTBEAT] = explainer, heartbeat_s
    app[SESSIONS], app[FORMS] = sessions or SessionStore(), sign_in.FormTokens()
    app[STREAMS] = Slots(MAX_EVENT_STREAMS, queue_s=0)  # a stream lasts: waiting for one is pointless

    def get(path: str, handler: CallerHandler) -> web.RouteDef:
        return web.get(path, _signed_in(handler))

    app.add_routes([
        web.get("/healthz", _ok), web.get("/readyz", _ok),
        web.get("/login", _login_page), web.post("/login", _login), web.post("/logout", _logout),
        get("/", _index), web.get("/static/{name}", _static_file),
        get("/api/whoami", _whoami), get("/api/overview", _overview),
        get("/api/clusterqueues", _cluster_queues), get("/api/localqueues", _local_queues),
        get("/api/workloads", _workloads), get("/api/workloads/{namespace}/{name}", _workload),
        get("/api/topology", _topology), get("/api/events", _events),
    ])

    async def stop_streams(_: web.Application) -> None:
        await feed.close()  # open event streams end, so shutdown does not wait for them

    app.on_shutdown.append(stop_streams)
    return app


async def start(app: web.Application, host: str, port: int,
                ssl_context: ssl.SSLContext | None = None) -> tuple[Listener, int]:
    """Serve ``app`` under :data:`LIMITS`: plain HTTP on loopback (reached through ``kubectl
    port-forward``), HTTPS with ``ssl_context`` elsewhere. Returns the listener (``cleanup()``
    stops it) and the bound port. No access log: a request line may carry a token."""
    listener = await serve(app, host, port, LIMITS, ssl_context=ssl_context, render=_error)
    return listener, listener.port
