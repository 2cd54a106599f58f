"""``/metrics`` behind a bearer token, over loopback with fake reviewers: 401 without a valid
token, 403 without the right, 503 when kube-apiserver cannot be asked, the exposition when
allowed; the SubjectAccessReview asks for ``get`` on the non-resource path ``/metrics``; the
probes stay open."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web
from multidict import CIMultiDictProxy
from prometheus_client.parser import text_string_to_metric_families

from pykueue.kube.endpoints import HealthChecks, build_app, start_site
from pykueue.manager.runtime.metrics import KueueMetrics
from pykueue.manager.runtime.metrics_auth import READ_METRICS, metrics_guard
from pykueue.manager.runtime.token_review import CachedAuthorizer, CachedTokenAuthenticator, bearer_token
from pykueue.manager.runtime.visibility.auth import AuthorizationDecision, RequestAttributes, UserInfo

READER, STRANGER, BROKEN = "reader-token", "stranger-token", "broken-token"


class ApiDown(Exception):
    pass


@dataclass
class FakeTokens:
    users = {READER: UserInfo("system:serviceaccount:pykueue-system:scraper", ("system:serviceaccounts",)),
             STRANGER: UserInfo("stranger")}
    reviews: list[str] = field(default_factory=list)
    down: bool = False

    async def authenticate(self, token: str) -> UserInfo | None:
        self.reviews.append(token)
        if self.down or token == BROKEN:
            raise ApiDown(f"cannot review {token}")  # a message carrying the token must not be logged
        return self.users.get(token)


@dataclass
class FakeRbac:
    """Only the scraper's ServiceAccount may read the metrics."""

    asked: list[tuple[str, RequestAttributes]] = field(default_factory=list)
    down: bool = False

    async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> AuthorizationDecision:
        self.asked.append((user.name, attributes))
        if self.down:
            raise ApiDown("no answer")
        return AuthorizationDecision(user.name.endswith(":scraper"))


@dataclass
class Server:
    url: str
    tokens: FakeTokens
    rbac: FakeRbac

    async def get(self, path: str, authorization: str | None) -> tuple[int, str, CIMultiDictProxy[str]]:
        headers = {"Authorization": authorization} if authorization else {}
        async with aiohttp.ClientSession() as http, http.get(self.url + path, headers=headers) as resp:
            return resp.status, await resp.text(), resp.headers


async def _serve(tokens: FakeTokens, rbac: FakeRbac, *, cached: bool = False) -> tuple[web.AppRunner, Server]:
    metrics = KueueMetrics()
    metrics.report_pending("cq", 5, 1)
    guard = metrics_guard(CachedTokenAuthenticator(tokens), CachedAuthorizer(rbac)) if cached \
        else metrics_guard(tokens, rbac)
    # Metrics and probes on one port, the way a small deployment may serve them.
    app = build_app(metrics, HealthChecks(), metrics_guard=guard)
    runner, port = await start_site(app, "127.0.0.1", 0)
    return runner, Server(f"http://127.0.0.1:{port}", tokens, rbac)


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    runner, served = await _serve(FakeTokens(), FakeRbac())
    try:
        yield served
    finally:
        await runner.cleanup()


async def test_no_token_is_401_and_asks_nobody(server: Server) -> None:
    status, body, headers = await server.get("/metrics", None)
    assert status == 401 and "bearer token is required" in body
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert (await server.get("/metrics", f"Basic {READER}"))[0] == 401  # not a bearer token
    assert (await server.get("/metrics", "Bearer "))[0] == 401
    assert server.tokens.reviews == [] and server.rbac.asked == []


async def test_an_invalid_token_is_401(server: Server) -> None:
    status, body, _ = await server.get("/metrics", "Bearer forged")
    assert status == 401 and "invalid or expired token" in body
    assert server.tokens.reviews == ["forged"] and server.rbac.asked == []


async def test_a_user_without_the_right_is_403_by_name(server: Server) -> None:
    status, body, _ = await server.get("/metrics", f"Bearer {STRANGER}")
    assert status == 403 and 'user "stranger" may not get /metrics' in body
    assert "kueue_" not in body


async def test_an_allowed_user_gets_the_exposition(server: Server) -> None:
    status, body, headers = await server.get("/metrics", f"bearer {READER}")  # the scheme in any case
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(body)}
    pending = {s.labels["status"]: s.value for s in families["kueue_pending_workloads"].samples}
    assert pending == {"active": 5, "inadmissible": 1}
    # A non-resource review of exactly what Kueue's metrics filter asks: get /metrics.
    assert server.rbac.asked == [("system:serviceaccount:pykueue-system:scraper",
                                  RequestAttributes(verb="get", path="/metrics"))]
    assert READ_METRICS.resource is None


async def test_a_failed_review_is_503_and_logs_no_token(server: Server,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        status, body, _ = await server.get("/metrics", f"Bearer {BROKEN}")
        assert status == 503 and "authentication is unavailable" in body
        server.rbac.down = True
        status, body, _ = await server.get("/metrics", f"Bearer {READER}")
        assert status == 503 and "authorization is unavailable" in body
    assert "ApiDown" in caplog.text
    assert BROKEN not in caplog.text and READER not in caplog.text


async def test_probes_need_no_token(server: Server) -> None:
    for probe in ("/healthz", "/readyz"):
        status, body, _ = await server.get(probe, None)
        assert (status, body) == (200, "ok")
    assert server.tokens.reviews == []


async def test_answers_and_refusals_are_cached() -> None:
    """Both tokens are valid (one review each), and the stranger's refusal is asked once too
    (refusals are kept for a few seconds: a client repeating itself costs no more reviews)."""
    runner, served = await _serve(FakeTokens(), FakeRbac(), cached=True)
    try:
        for _ in range(3):
            assert (await served.get("/metrics", f"Bearer {READER}"))[0] == 200
            assert (await served.get("/metrics", f"Bearer {STRANGER}"))[0] == 403
    finally:
        await runner.cleanup()
    assert served.tokens.reviews == [READER, STRANGER]
    assert [name for name, _ in served.rbac.asked] == ["system:serviceaccount:pykueue-system:scraper",
                                                       "stranger"]


@pytest.mark.parametrize(("header", "token"), [
    ("Bearer abc", "abc"), ("bearer abc", "abc"), ("BEARER  abc ", "abc"), ("Bearer", None),
    ("Bearer  ", None), ("Basic abc", None), ("", None), (None, None)])
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


async def test_a_flood_of_new_tokens_beyond_the_review_budget_is_429() -> None:
    from pykueue.manager.runtime.token_review import ReviewBudget

    tokens = FakeTokens()
    clock = [0.0]
    authenticator = CachedTokenAuthenticator(tokens, clock=lambda: clock[0],
                                             budget=ReviewBudget(rate=1.0, burst=2, clock=lambda: clock[0]))
    app = build_app(KueueMetrics(), metrics_guard=metrics_guard(authenticator, CachedAuthorizer(FakeRbac())))
    runner, port = await start_site(app, "127.0.0.1", 0)
    try:
        served = Server(f"http://127.0.0.1:{port}", tokens, FakeRbac())
        statuses = [(await served.get("/metrics", f"Bearer made-up-{i}"))[0] for i in range(4)]
        status, body, headers = await served.get("/metrics", "Bearer made-up-9")
    finally:
        await runner.cleanup()
    assert statuses == [401, 401, 429, 429] and status == 429
    assert "Too many" in body and headers["Retry-After"] == "1"
    assert len(tokens.reviews) == 2  # kube-apiserver was asked twice, not five times
