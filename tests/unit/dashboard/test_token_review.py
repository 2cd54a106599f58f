"""TokenReview answers become users; a review that says no is no user."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.manager.runtime.token_review import token_review, user_of
from pykueue.manager.runtime.visibility.auth import UserInfo


def test_the_review_asks_about_the_token_for_the_audiences() -> None:
    review = token_review("t0ken", ("pykueue",))
    assert review == {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                      "spec": {"token": "t0ken", "audiences": ["pykueue"]}}
    assert "audiences" not in token_review("t0ken")["spec"]


def test_an_authenticated_review_names_the_user() -> None:
    answer = {"status": {"authenticated": True, "user": {
        "username": "system:serviceaccount:ns:viewer", "groups": ["system:serviceaccounts"],
        "extra": {"authentication.kubernetes.io/pod-name": ["p"]}}}}
    assert user_of(answer) == UserInfo("system:serviceaccount:ns:viewer", ("system:serviceaccounts",),
                                       {"authentication.kubernetes.io/pod-name": ("p",)})


@pytest.mark.parametrize("status", [{"authenticated": False, "error": "expired"},
                                    {"authenticated": True}, {"authenticated": True, "user": "x"}, {}])
def test_anything_else_is_no_user(status: dict[str, Any]) -> None:
    assert user_of({"status": status}) is None
