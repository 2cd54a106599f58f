"""The rules every token and access review goes through (``manager.runtime.token_review``):
answers cached (refusals for less time), concurrent questions shared, a silent kube-apiserver
timed out, new questions budgeted (429) except from those recently let in, caches bounded."""

from __future__ import annotations

import asyncio

import pytest

from pykueue.manager.runtime.token_review import (
    KNOWN_GOOD_S,
    CachedAuthorizer,
    CachedTokenAuthenticator,
    ReviewBudget,
    ReviewsThrottled,
)
from pykueue.manager.runtime.visibility.auth import AuthorizationDecision, RequestAttributes, UserInfo

GOOD = "good-token"


class Tokens:
    def __init__(self, delay_s: float = 0.0) -> None:
        self.asked: list[str] = []
        self.delay_s = delay_s

    async def authenticate(self, token: str) -> UserInfo | None:
        self.asked.append(token)
        await asyncio.sleep(self.delay_s)
        return UserInfo("admin") if token == GOOD else None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_answers_are_kept_ten_seconds_refusals_five() -> None:
    tokens, clock = Tokens(), Clock()
    cached = CachedTokenAuthenticator(tokens, clock=clock)
    for _ in range(5):
        assert await cached.authenticate(GOOD) == UserInfo("admin")
        assert await cached.authenticate("bad") is None
    assert tokens.asked == [GOOD, "bad"]
    clock.now = 5.5
    await cached.authenticate(GOOD)
    await cached.authenticate("bad")
    assert tokens.asked == [GOOD, "bad", "bad"]
    clock.now = 10.5
    await cached.authenticate(GOOD)
    assert tokens.asked.count(GOOD) == 2


async def test_concurrent_questions_share_one_review() -> None:
    tokens = Tokens(delay_s=0.05)
    cached = CachedTokenAuthenticator(tokens)
    users = await asyncio.gather(*(cached.authenticate(t) for t in [GOOD] * 20 + ["bad"] * 20))
    assert users == [UserInfo("admin")] * 20 + [None] * 20
    assert sorted(tokens.asked) == ["bad", GOOD]


async def test_a_review_that_does_not_come_back_times_out_and_is_not_cached() -> None:
    tokens = Tokens(delay_s=10)
    cached = CachedTokenAuthenticator(tokens, timeout_s=0.05)
    with pytest.raises(TimeoutError):
        await cached.authenticate(GOOD)
    tokens.delay_s = 0
    assert await cached.authenticate(GOOD) == UserInfo("admin")
    assert tokens.asked == [GOOD, GOOD]


async def test_new_questions_beyond_the_budget_are_throttled_but_known_good_ones_are_not() -> None:
    tokens, clock = Tokens(), Clock()
    budget = ReviewBudget(rate=1.0, burst=3, clock=clock)
    cached = CachedTokenAuthenticator(tokens, clock=clock, budget=budget)
    assert await cached.authenticate(GOOD) == UserInfo("admin")
    assert await cached.authenticate("bad-1") is None
    assert await cached.authenticate("bad-2") is None
    with pytest.raises(ReviewsThrottled):
        await cached.authenticate("bad-3")
    assert await cached.authenticate("bad-1") is None  # refusals answered from the cache cost nothing
    clock.now = 11.0  # the good token's answer expired, the budget refilled: spend it all
    for i in range(3):
        await cached.authenticate(f"bad-{10 + i}")
    assert await cached.authenticate(GOOD) == UserInfo("admin")  # asked again, without the budget
    assert tokens.asked.count(GOOD) == 2
    clock.now = 11.0 + KNOWN_GOOD_S + 20  # long unseen: a stranger again
    for i in range(3):
        await cached.authenticate(f"bad-{20 + i}")
    with pytest.raises(ReviewsThrottled):
        await cached.authenticate(GOOD)


async def test_a_flood_of_bad_tokens_leaves_the_good_ones_cached_and_the_caches_bounded() -> None:
    tokens = Tokens()
    cached = CachedTokenAuthenticator(tokens, max_entries=100)
    await cached.authenticate(GOOD)
    for i in range(1000):
        await cached.authenticate(f"bad-{i}")
    await cached.authenticate(GOOD)
    assert tokens.asked.count(GOOD) == 1
    assert len(cached.reviews.negative_cache) <= 100 and len(cached.reviews.positive_cache) == 1


async def test_access_decisions_follow_the_same_rules() -> None:
    asked: list[str] = []

    class Rbac:
        async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> AuthorizationDecision:
            asked.append(user.name)
            return AuthorizationDecision(user.name == "admin")

    clock = Clock()
    cached = CachedAuthorizer(Rbac(), clock=clock)
    read = RequestAttributes(verb="get", path="/metrics")
    for _ in range(3):
        assert (await cached.authorize(UserInfo("admin"), read)).allowed
        assert not (await cached.authorize(UserInfo("nobody"), read)).allowed
    assert asked == ["admin", "nobody"]
    clock.now = 6.0
    await cached.authorize(UserInfo("nobody"), read)
    assert asked == ["admin", "nobody", "nobody"]
