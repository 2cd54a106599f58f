"""Who holds this bearer token, and may they: TokenReview and SubjectAccessReview, cached and bounded.

Endpoints that people and scrapers call directly (the dashboard, the metrics endpoint)
authenticate an ``Authorization: Bearer`` token by asking kube-apiserver with a TokenReview
(``authentication.k8s.io/v1``; the caller needs ``create`` on ``tokenreviews``) and authorize
with a SubjectAccessReview (:mod:`manager.runtime.visibility.auth`). Those endpoints face
anyone who can reach the pod, so every review they could trigger is bounded here:

* answers are cached: positive ones ``CACHE_TTL_S`` (a page's several requests, a scraper's
  scrapes cost one review), negative ones ``NEGATIVE_TTL_S`` (a client repeating a bad token
  costs one review per few seconds, not one per request; a right just granted works within
  those seconds). Positive and negative answers live in separate bounded caches, so a flood
  of bad tokens cannot push out the good ones;
* concurrent requests with the same question share one review;
* a review that kube-apiserver does not answer within ``REVIEW_TIMEOUT_S`` fails (the caller
  gets 503 and may retry) instead of holding the request;
* questions not answered from the cache draw on a :class:`ReviewBudget` (a token bucket):
  beyond it the caller gets 429, so a flood of distinct tokens costs kube-apiserver at most
  ``rate`` reviews a second. Questions answered yes in the last ``KNOWN_GOOD_S`` are asked
  again without drawing on it, so the flood does not lock out those already signed in.

Tokens are kept only as SHA-256 digests and never logged.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.kube.client import KubeClient
from pykueue.manager.runtime.visibility import auth
from pykueue.manager.runtime.visibility.auth import (
    AuthorizationDecision,
    Authorizer,
    RequestAttributes,
    ReviewsThrottled,
    SubjectAccessReviewAuthorizer,
    UserInfo,
)

# The reviewers' calls, as RBAC (``api.access``): a TokenReview per bearer token and a
# SubjectAccessReview per question, each answered from a cache when it can be.
API_ACCESS: tuple[ApiAccess, ...] = (
    ApiAccess("authentication.k8s.io", "tokenreviews", ("create",)),
    auth.SUBJECT_ACCESS_REVIEWS,
)

CACHE_TTL_S = 10.0
NEGATIVE_TTL_S = 5.0
CACHE_MAX_ENTRIES = 4096
REVIEW_TIMEOUT_S = 5.0
# Reviews not answered from a cache, per second and at once, per process: a burst of new
# users (a team opening the dashboard) fits, a flood of made-up tokens is cut off.
TOKEN_REVIEWS_PER_S, TOKEN_REVIEW_BURST = 50.0, 100
ACCESS_REVIEWS_PER_S, ACCESS_REVIEW_BURST = 100.0, 200
# A question answered yes within this long skips the budget when asked again: a flood of
# made-up tokens cannot lock out the people already signed in (their answers, unlike the
# flood's, cannot be made up).
KNOWN_GOOD_S = 3600.0


class TokenAuthenticator(Protocol):
    async def authenticate(self, token: str) -> UserInfo | None:
        """The token's user, or None when the token is not valid."""
        ...


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value (scheme in any case),
    or None when there is none."""
    scheme, _, value = (authorization or "").partition(" ")
    token = value.strip()
    return token if scheme.lower() == "bearer" and token else None


TOKEN_REVIEWS_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"


def token_review(token: str, audiences: tuple[str, ...] = ()) -> JSON:
    spec: JSON = {"token": token}
    if audiences:
        spec["audiences"] = list(audiences)
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}


def user_of(review: JSON) -> UserInfo | None:
    """The user a TokenReview's answer names, or None when the token is not valid."""
    status = review.get("status") or {}
    user = status.get("user")
    if not status.get("authenticated") or not isinstance(user, dict):
        return None
    extra = {str(k): tuple(str(v) for v in vs or ()) for k, vs in (user.get("extra") or {}).items()}
    groups = tuple(str(g) for g in user.get("groups") or ())
    return UserInfo(name=str(user.get("username") or ""), groups=groups, extra=extra)


class TokenReviewAuthenticator:
    """Asks kube-apiserver; needs ``create`` on ``tokenreviews``."""

    def __init__(self, client: KubeClient, audiences: tuple[str, ...] = (),
                 timeout_s: float = REVIEW_TIMEOUT_S) -> None:
        self._client = client
        self._audiences = audiences
        self._timeout_s = timeout_s

    async def authenticate(self, token: str) -> UserInfo | None:
        review = await self._client.request("POST", TOKEN_REVIEWS_PATH, timeout_s=self._timeout_s,
                                            body=token_review(token, self._audiences))
        return user_of(review)


class ReviewBudget:
    """A token bucket of reviews: ``burst`` at once, refilled at ``rate`` a second."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self._clock = rate, burst, clock
        self._tokens = float(burst)
        self._at = clock()

    def take(self) -> bool:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _TtlCache(Generic[K, V]):
    """At most ``max_entries`` answers; when full, expired ones go first, then the oldest."""

    def __init__(self, ttl_s: float, clock: Callable[[], float], max_entries: int) -> None:
        self._ttl_s, self._clock, self._max = ttl_s, clock, max_entries
        self._entries: dict[K, tuple[float, V]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._entries[key]
            return None
        return entry[1]

    def put(self, key: K, value: V) -> None:
        if key not in self._entries and len(self._entries) >= self._max:
            now = self._clock()
            self._entries = {k: e for k, e in self._entries.items() if e[0] > now}
            while len(self._entries) >= self._max:
                del self._entries[next(iter(self._entries))]  # insertion order: the oldest
        self._entries.pop(key, None)
        self._entries[key] = (self._clock() + self._ttl_s, value)


class _CachedReviews(Generic[K, V]):
    """The caching, sharing, budget and timeout rules of both kinds of review."""

    def __init__(self, positive_ttl_s: float, negative_ttl_s: float, clock: Callable[[], float],
                 max_entries: int, timeout_s: float, budget: ReviewBudget | None,
                 positive: Callable[[V], bool]) -> None:
        self.positive_cache: _TtlCache[K, V] = _TtlCache(positive_ttl_s, clock, max_entries)
        self.negative_cache: _TtlCache[K, V] = _TtlCache(negative_ttl_s, clock, max_entries)
        self.known_good: _TtlCache[K, bool] = _TtlCache(KNOWN_GOOD_S, clock, max_entries)
        self._timeout_s, self._budget, self._positive = timeout_s, budget, positive
        self._in_flight: dict[K, asyncio.Future[V]] = {}

    async def answer(self, key: K, ask: Callable[[], Awaitable[V]]) -> V:
        cached = self.positive_cache.get(key)
        if cached is None:
            cached = self.negative_cache.get(key)
        if cached is not None:
            return cached
        shared = self._in_flight.get(key)
        if shared is not None:
            return await asyncio.shield(shared)
        if self._budget is not None and self.known_good.get(key) is None and not self._budget.take():
            raise ReviewsThrottled("too many new credentials to review right now; retry in a second")
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            async with asyncio.timeout(self._timeout_s):
                value = await ask()
        except BaseException as exc:
            if isinstance(exc, Exception):
                future.set_exception(exc)
                future.exception()  # retrieved: nobody may be waiting
            else:
                future.cancel()
            raise
        else:
            if self._positive(value):
                self.positive_cache.put(key, value)
                self.known_good.put(key, True)
            else:
                self.negative_cache.put(key, value)
            future.set_result(value)
            return value
        finally:
            del self._in_flight[key]


class _NoUser:
    """The cached answer "not a valid token" (None cannot be told from a cache miss)."""


_NO_USER = _NoUser()


class CachedTokenAuthenticator:
    """A :class:`TokenAuthenticator` under the rules of this module."""

    def __init__(self, inner: TokenAuthenticator, ttl_s: float = CACHE_TTL_S,
                 clock: Callable[[], float] = time.monotonic, max_entries: int = CACHE_MAX_ENTRIES,
                 negative_ttl_s: float = NEGATIVE_TTL_S, timeout_s: float = REVIEW_TIMEOUT_S,
                 budget: ReviewBudget | None = None) -> None:
        self._inner = inner
        self.reviews: _CachedReviews[bytes, UserInfo | _NoUser] = _CachedReviews(
            ttl_s, negative_ttl_s, clock, max_entries, timeout_s, budget,
            lambda user: isinstance(user, UserInfo))

    async def authenticate(self, token: str) -> UserInfo | None:
        async def ask() -> UserInfo | _NoUser:
            return await self._inner.authenticate(token) or _NO_USER

        user = await self.reviews.answer(hashlib.sha256(token.encode()).digest(), ask)
        return user if isinstance(user, UserInfo) else None


class CachedAuthorizer:
    """An :class:`Authorizer` under the rules of this module, per user and request attributes."""

    def __init__(self, inner: Authorizer, ttl_s: float = CACHE_TTL_S,
                 clock: Callable[[], float] = time.monotonic, max_entries: int = CACHE_MAX_ENTRIES,
                 negative_ttl_s: float = NEGATIVE_TTL_S, timeout_s: float = REVIEW_TIMEOUT_S,
                 budget: ReviewBudget | None = None) -> None:
        self._inner = inner
        self.reviews: _CachedReviews[tuple[object, ...], AuthorizationDecision] = _CachedReviews(
            ttl_s, negative_ttl_s, clock, max_entries, timeout_s, budget, lambda d: d.allowed)

    async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> AuthorizationDecision:
        key = (user.name, user.groups, tuple(sorted(user.extra.items())), attributes)
        return await self.reviews.answer(key, lambda: self._inner.authorize(user, attributes))


@dataclass(frozen=True)
class Reviewers:
    """The one authenticator and authorizer of a process: the dashboard, ``/metrics`` and the
    visibility API share their caches and their budget of reviews."""

    authenticator: TokenAuthenticator
    authorizer: Authorizer


def cached_reviewers(authenticator: TokenAuthenticator, authorizer: Authorizer,
                     clock: Callable[[], float] = time.monotonic) -> Reviewers:
    return Reviewers(
        CachedTokenAuthenticator(authenticator, clock=clock,
                                 budget=ReviewBudget(TOKEN_REVIEWS_PER_S, TOKEN_REVIEW_BURST, clock)),
        CachedAuthorizer(authorizer, clock=clock,
                         budget=ReviewBudget(ACCESS_REVIEWS_PER_S, ACCESS_REVIEW_BURST, clock)))


def cluster_reviewers(client: KubeClient) -> Reviewers:
    """Reviewers asking kube-apiserver through ``client`` (its identity needs ``create`` on
    ``tokenreviews`` and ``subjectaccessreviews``). Give it a client with a rate limit of its
    own (``KubeClient.sharing_pool``): the reviews' budgets bound them, and they must not
    spend the budget Lease renewals and status writes draw from."""
    return cached_reviewers(TokenReviewAuthenticator(client), SubjectAccessReviewAuthorizer(client))
