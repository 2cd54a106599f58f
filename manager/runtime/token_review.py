"""Who holds this bearer token: TokenReview, and short-lived caches of positive answers.

Endpoints that people and scrapers call directly (the dashboard, the metrics endpoint)
authenticate an ``Authorization: Bearer`` token by asking kube-apiserver with a TokenReview
(``authentication.k8s.io/v1``; the caller needs ``create`` on ``tokenreviews``) and authorize
with a SubjectAccessReview (:mod:`manager.runtime.visibility.auth`). Both answers are cached
for a few seconds when positive, so a page that makes several requests, or a browser that
polls, costs one review per token and question instead of one per request; negative answers
are never cached, so a right just granted works at once. Tokens are kept only as SHA-256
digests and never logged.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from kubernetes_asyncio.client import ApiClient, AuthenticationV1Api, V1TokenReview, V1TokenReviewSpec

from manager.runtime.visibility.auth import AuthorizationDecision, Authorizer, RequestAttributes, UserInfo

CACHE_TTL_S = 10.0
CACHE_MAX_ENTRIES = 4096


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


def token_review(token: str, audiences: tuple[str, ...] = ()) -> V1TokenReview:
    return V1TokenReview(api_version="authentication.k8s.io/v1", kind="TokenReview",
                         spec=V1TokenReviewSpec(token=token, audiences=list(audiences) or None))


class TokenReviewAuthenticator:
    """Asks kube-apiserver; needs ``create`` on ``tokenreviews``."""

    def __init__(self, api: ApiClient, audiences: tuple[str, ...] = ()) -> None:
        self._api = AuthenticationV1Api(api)
        self._audiences = audiences

    async def authenticate(self, token: str) -> UserInfo | None:
        review = await self._api.create_token_review(token_review(token, self._audiences))
        status = review.status
        if status is None or not status.authenticated or status.user is None:
            return None
        user = status.user
        extra = {str(k): tuple(str(v) for v in vs or ()) for k, vs in (user.extra or {}).items()}
        return UserInfo(name=str(user.username or ""), groups=tuple(str(g) for g in user.groups or ()),
                        extra=extra)


K = TypeVar("K")
V = TypeVar("V")


class _PositiveCache(Generic[K, V]):
    def __init__(self, ttl_s: float, clock: Callable[[], float], max_entries: int) -> None:
        self._ttl_s, self._clock, self._max = ttl_s, clock, max_entries
        self._entries: dict[K, tuple[float, V]] = {}

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._entries[key]
            return None
        return entry[1]

    def put(self, key: K, value: V) -> None:
        if len(self._entries) >= self._max:
            now = self._clock()
            self._entries = {k: e for k, e in self._entries.items() if e[0] > now}
            if len(self._entries) >= self._max:
                self._entries.clear()  # a flood of distinct tokens: start over, stay bounded
        self._entries[key] = (self._clock() + self._ttl_s, value)


class CachedTokenAuthenticator:
    """Remembers valid tokens (by digest) for ``ttl_s``."""

    def __init__(self, inner: TokenAuthenticator, ttl_s: float = CACHE_TTL_S,
                 clock: Callable[[], float] = time.monotonic, max_entries: int = CACHE_MAX_ENTRIES) -> None:
        self._inner = inner
        self._cache: _PositiveCache[bytes, UserInfo] = _PositiveCache(ttl_s, clock, max_entries)

    async def authenticate(self, token: str) -> UserInfo | None:
        digest = hashlib.sha256(token.encode()).digest()
        user = self._cache.get(digest)
        if user is None:
            user = await self._inner.authenticate(token)
            if user is not None:
                self._cache.put(digest, user)
        return user


class CachedAuthorizer:
    """Remembers allowed decisions per user and request attributes for ``ttl_s``."""

    def __init__(self, inner: Authorizer, ttl_s: float = CACHE_TTL_S,
                 clock: Callable[[], float] = time.monotonic, max_entries: int = CACHE_MAX_ENTRIES) -> None:
        self._inner = inner
        self._cache: _PositiveCache[tuple[object, ...], AuthorizationDecision] = _PositiveCache(
            ttl_s, clock, max_entries)

    async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> AuthorizationDecision:
        key = (user.name, user.groups, tuple(sorted(user.extra.items())), attributes)
        decision = self._cache.get(key)
        if decision is None:
            decision = await self._inner.authorize(user, attributes)
            if decision.allowed:
                self._cache.put(key, decision)
        return decision
