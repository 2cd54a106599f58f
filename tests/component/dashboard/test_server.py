"""The dashboard server on loopback, with a fake token authenticator and authorizer: who gets
in (401/403), signing in (a same-origin form for an opaque session cookie), the JSON pages and
the live event stream."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
import pytest

from pykueue.manager.runtime.dashboard.changes import ChangeFeed
from pykueue.manager.runtime.dashboard.server import OLD_TOKEN_COOKIE, SESSION_COOKIE, make_app, start
from pykueue.manager.runtime.visibility.auth import AuthorizationDecision, RequestAttributes, UserInfo
from pykueue.manager.scenario.explain import explain_record
from pykueue.manager.scenario.runner import Simulation
from tests.unit.dashboard.fixture import workload, world

ADMIN, VIEWER_A, NOBODY = "admin-token", "ns-a-token", "nobody-token"


@dataclass
class FakeTokens:
    users = {ADMIN: UserInfo("admin"), VIEWER_A: UserInfo("alice"), NOBODY: UserInfo("nobody")}
    reviews: list[str] = field(default_factory=list)

    async def authenticate(self, token: str) -> UserInfo | None:
        self.reviews.append(token)
        return self.users.get(token)


@dataclass
class FakeRbac:
    """admin may do anything; alice may list workloads and localqueues in ns-a only."""

    asked: list[tuple[str, RequestAttributes]] = field(default_factory=list)

    async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> AuthorizationDecision:
        self.asked.append((user.name, attributes))
        if user.name == "admin":
            return AuthorizationDecision(True)
        allowed = user.name == "alice" and attributes.namespace == "ns-a" \
            and attributes.resource in ("workloads", "localqueues")
        return AuthorizationDecision(allowed)


@dataclass
class Dashboard:
    url: str
    sim: Simulation
    tokens: FakeTokens
    rbac: FakeRbac

    async def get(self, path: str, token: str | None = ADMIN) -> tuple[int, object]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with aiohttp.ClientSession() as session, session.get(self.url + path, headers=headers,
                                                                     allow_redirects=False) as r:
            body = await r.json() if r.content_type == "application/json" else await r.text()
            return r.status, body


@pytest.fixture
async def dashboard() -> AsyncIterator[Dashboard]:
    sim = world()
    tokens, rbac = FakeTokens(), FakeRbac()
    feed = ChangeFeed(sim.core, poll_s=0.02)
    runner, port = await start(make_app(feed, tokens, rbac, explain_record, heartbeat_s=0.2), "127.0.0.1", 0)
    try:
        yield Dashboard(f"http://127.0.0.1:{port}", sim, tokens, rbac)
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("path", ["/static/app.js", "/api/overview", "/api/workloads",
                                  "/api/events", "/api/workloads/ns-a/big", "/api/topology"])
async def test_every_path_needs_a_valid_token(dashboard: Dashboard, path: str) -> None:
    assert (await dashboard.get(path, None))[0] == 401
    assert (await dashboard.get(path, "forged"))[0] == 401
    assert (await dashboard.get("/healthz", None))[0] == 200


async def test_the_page_sends_a_stranger_to_the_sign_in_form(dashboard: Dashboard) -> None:
    for token in (None, "forged"):
        async with aiohttp.ClientSession() as session, session.get(
                dashboard.url + "/", headers={"Authorization": f"Bearer {token}"} if token else {},
                allow_redirects=False) as r:
            assert r.status == 303 and r.headers["Location"] == "/login"
    status, page = await dashboard.get("/login", None)
    assert status == 200 and isinstance(page, str) and 'action="/login"' in page
    assert (await dashboard.get("/static/login.js", None))[0] == 200  # what the form needs is public


@pytest.mark.parametrize("path", ["/api/overview", "/api/clusterqueues", "/api/topology", "/api/workloads",
                                  "/api/workloads?namespace=ns-b", "/api/localqueues",
                                  "/api/workloads/ns-b/small", "/api/events"])
async def test_views_beyond_the_callers_rights_are_403(dashboard: Dashboard, path: str) -> None:
    status, body = await dashboard.get(path, VIEWER_A)
    assert status == 403
    assert isinstance(body, dict) and 'user "alice" may not list' in body["error"]
    assert (await dashboard.get(path, NOBODY))[0] == 403


async def test_a_namespace_viewer_sees_that_namespace(dashboard: Dashboard) -> None:
    status, body = await dashboard.get("/api/workloads?state=pending&namespace=ns-a", VIEWER_A)
    assert status == 200 and isinstance(body, dict)
    assert [w["key"] for w in body["items"]] == ["ns-a/urgent", "ns-a/later"]
    status, detail = await dashboard.get("/api/workloads/ns-a/later", VIEWER_A)
    assert status == 200 and isinstance(detail, dict) and detail["tier"] == "WaitingForQuota"
    assert ("alice", RequestAttributes(verb="list", path="/api/workloads/ns-a/later", resource="workloads",
                                       namespace="ns-a", group="kueue.x-k8s.io", version="v1beta2")) \
        in dashboard.rbac.asked


async def test_nothing_but_reads(dashboard: Dashboard) -> None:
    async with aiohttp.ClientSession() as session, session.post(
            dashboard.url + "/api/workloads", headers={"Authorization": f"Bearer {ADMIN}"}) as r:
        assert r.status == 405


def _form_token(page: str) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', page)
    assert match, page
    return match.group(1)


async def _sign_in(session: aiohttp.ClientSession, url: str, token: str,
                   origin: str | None = None) -> aiohttp.ClientResponse:
    async with session.get(url + "/login") as page:
        csrf = _form_token(await page.text())
    headers = {"Origin": origin if origin is not None else url}
    async with session.post(url + "/login", data={"token": token, "csrf": csrf}, headers=headers,
                            allow_redirects=False) as r:
        await r.read()
        return r


async def test_signing_in_gives_an_opaque_httponly_strict_session_cookie(dashboard: Dashboard) -> None:
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        r = await _sign_in(session, dashboard.url, ADMIN)
        assert r.status == 303 and r.headers["Location"] == "/"
        cookie = r.cookies[SESSION_COOKIE]
        assert cookie["httponly"] and cookie["samesite"] == "Strict" and not cookie["secure"]  # plain HTTP
        assert ADMIN not in cookie.value and len(cookie.value) >= 32
        async with session.get(dashboard.url + "/api/overview") as r:
            assert r.status == 200 and (await r.json())["clusterQueues"] == 2
        async with session.get(dashboard.url + "/") as r:
            assert r.status == 200 and "/static/app.js" in await r.text()
            assert "default-src 'self'" in r.headers["Content-Security-Policy"]
        async with session.post(dashboard.url + "/logout", headers={"Origin": dashboard.url},
                                allow_redirects=False) as r:
            assert r.status == 303 and r.headers["Location"] == "/login"
        async with session.get(dashboard.url + "/api/overview") as r:
            assert r.status == 401  # the session is gone on the server, not only in the browser


async def test_a_link_with_a_token_no_longer_signs_in(dashboard: Dashboard) -> None:
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        async with session.get(f"{dashboard.url}/?token={ADMIN}", allow_redirects=False) as r:
            assert r.status == 303 and r.headers["Location"] == f"/login#token={ADMIN}"
            assert SESSION_COOKIE not in r.cookies and OLD_TOKEN_COOKIE not in r.cookies
        assert (await session.get(dashboard.url + "/api/overview")).status == 401


async def test_a_sign_in_from_elsewhere_or_without_the_form_is_refused(dashboard: Dashboard) -> None:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        assert (await _sign_in(session, dashboard.url, ADMIN, origin="http://evil.example")).status == 403
        assert (await _sign_in(session, dashboard.url, ADMIN, origin="http://127.0.0.1:1")).status == 403
        for csrf in ("", "x.1.y", "forged.99999999999.0000"):  # no form token, or not ours
            async with session.post(dashboard.url + "/login", data={"token": ADMIN, "csrf": csrf},
                                    headers={"Origin": dashboard.url}, allow_redirects=False) as r:
                assert r.status == 403
        async with session.post(dashboard.url + "/login", json={"token": ADMIN},
                                headers={"Origin": dashboard.url}, allow_redirects=False) as r:
            assert r.status == 415
        r = await _sign_in(session, dashboard.url, "forged")
        assert r.status == 401 and SESSION_COOKIE not in r.cookies
        assert (await session.get(dashboard.url + "/api/overview")).status == 401


async def test_answers_are_cached_refusals_for_less_time(dashboard: Dashboard) -> None:
    from pykueue.manager.runtime.token_review import CachedAuthorizer, CachedTokenAuthenticator

    now = [0.0]
    tokens = CachedTokenAuthenticator(dashboard.tokens, ttl_s=10, negative_ttl_s=5, clock=lambda: now[0])
    rbac = CachedAuthorizer(dashboard.rbac, ttl_s=10, negative_ttl_s=5, clock=lambda: now[0])
    attributes = RequestAttributes(verb="list", path="/", resource="workloads")
    for _ in range(3):
        assert await tokens.authenticate(ADMIN) == UserInfo("admin")
        assert await tokens.authenticate("forged") is None
        assert (await rbac.authorize(UserInfo("admin"), attributes)).allowed
        assert not (await rbac.authorize(UserInfo("nobody"), attributes)).allowed
    assert dashboard.tokens.reviews.count(ADMIN) == 1 and dashboard.tokens.reviews.count("forged") == 1
    assert [u for u, _ in dashboard.rbac.asked] == ["admin", "nobody"]
    now[0] = 6.0  # refusals expired, approvals not
    await tokens.authenticate(ADMIN)
    await tokens.authenticate("forged")
    assert dashboard.tokens.reviews.count(ADMIN) == 1 and dashboard.tokens.reviews.count("forged") == 2
    now[0] = 11.0
    await tokens.authenticate(ADMIN)
    assert dashboard.tokens.reviews.count(ADMIN) == 2


async def test_pages_and_bad_queries(dashboard: Dashboard) -> None:
    status, tree = await dashboard.get("/api/clusterqueues")
    assert status == 200 and isinstance(tree, dict)
    assert [r["name"] for r in tree["items"]] == ["all", "team-a", "team-b"]
    status, topology = await dashboard.get("/api/topology")
    assert status == 200 and isinstance(topology, dict) and topology["flavors"][0]["nodes"] == 4
    assert (await dashboard.get("/api/workloads?page=x"))[0] == 400
    assert (await dashboard.get("/api/workloads?state=finished"))[0] == 400
    assert (await dashboard.get("/api/workloads/ns-a/none"))[0] == 404
    assert (await dashboard.get("/static/secret.py"))[0] == 404


async def _events(response: aiohttp.ClientResponse) -> AsyncIterator[dict[str, object]]:
    event = ""
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[len("event: "):]
        elif line.startswith("data: ") and event == "change":
            yield json.loads(line[len("data: "):])


async def test_a_change_of_the_core_is_streamed_without_asking(dashboard: Dashboard) -> None:
    async with aiohttp.ClientSession() as session, session.get(
            dashboard.url + "/api/events", headers={"Authorization": f"Bearer {ADMIN}"}) as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("text/event-stream")
        stream = _events(r)
        first = await anext(stream)
        assert first["totals"]["pending"] == 2  # type: ignore[index]
        dashboard.sim.apply(workload("ns-b", "new", 1))
        dashboard.sim.run()
        second = await asyncio.wait_for(anext(stream), 5)
        assert second["revision"] > first["revision"]  # type: ignore[operator]
        assert second["totals"]["pending"] == 3  # type: ignore[index]


async def test_a_namespace_stream_carries_no_cluster_totals(dashboard: Dashboard) -> None:
    headers = {"Authorization": f"Bearer {VIEWER_A}"}
    async with aiohttp.ClientSession() as session, session.get(
            dashboard.url + "/api/events?namespace=ns-a", headers=headers) as r:
        assert r.status == 200
        first = await anext(_events(r))
        assert set(first) == {"revision"}
