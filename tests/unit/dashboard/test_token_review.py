"""TokenReview answers become users; a review that says no is no user."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio.client import V1TokenReview, V1TokenReviewStatus, V1UserInfo

from pykueue.manager.runtime import token_review
from pykueue.manager.runtime.token_review import TokenReviewAuthenticator
from pykueue.manager.runtime.visibility.auth import UserInfo


class _FakeAuthenticationApi:
    def __init__(self, status: V1TokenReviewStatus) -> None:
        self.status = status
        self.sent: list[V1TokenReview] = []

    async def create_token_review(self, body: V1TokenReview, _request_timeout: float) -> V1TokenReview:
        assert 0 < _request_timeout <= 10  # a review never holds a request for long
        self.sent.append(body)
        return V1TokenReview(spec=body.spec, status=self.status)


def _authenticator(monkeypatch: pytest.MonkeyPatch, status: V1TokenReviewStatus) -> tuple[Any, Any]:
    fake = _FakeAuthenticationApi(status)
    monkeypatch.setattr(token_review, "AuthenticationV1Api", lambda _api: fake)
    return TokenReviewAuthenticator(object(), audiences=("pykueue",)), fake  # type: ignore[arg-type]


async def test_an_authenticated_review_names_the_user(monkeypatch: pytest.MonkeyPatch) -> None:
    user = V1UserInfo(username="system:serviceaccount:ns:viewer", groups=["system:serviceaccounts"],
                      extra={"authentication.kubernetes.io/pod-name": ["p"]})
    authenticator, fake = _authenticator(monkeypatch, V1TokenReviewStatus(authenticated=True, user=user))
    assert await authenticator.authenticate("t0ken") == UserInfo(
        "system:serviceaccount:ns:viewer", ("system:serviceaccounts",),
        {"authentication.kubernetes.io/pod-name": ("p",)})
    (sent,) = fake.sent
    assert sent.spec.token == "t0ken" and sent.spec.audiences == ["pykueue"]


@pytest.mark.parametrize("status", [V1TokenReviewStatus(authenticated=False, error="expired"),
                                    V1TokenReviewStatus(authenticated=True, user=None)])
async def test_anything_else_is_no_user(monkeypatch: pytest.MonkeyPatch, status: V1TokenReviewStatus) -> None:
    authenticator, _ = _authenticator(monkeypatch, status)
    assert await authenticator.authenticate("t0ken") is None
