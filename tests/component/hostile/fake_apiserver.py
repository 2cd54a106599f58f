"""The two kube-apiserver endpoints the token-checking servers call, on loopback, counted.

As the dashboard and metrics component tests fake their reviewers, this fakes the reviews
one level lower, over HTTP, so the real ``TokenReviewAuthenticator`` and
``SubjectAccessReviewAuthorizer`` (request timeout, wire format) and the caches in front of
them are what the hostile suite exercises. Like kube-apiserver, a TokenReview's answer echoes
its ``spec`` and so the caller's token: a log line of the answer would leak it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
VIEWERS = "pykueue-hostile-viewers"


@dataclass
class Reviews:
    """``good_token`` belongs to user ``admin``, who may do anything; no other token is valid."""

    good_token: str
    token_reviews: int = 0
    access_reviews: int = 0
    distinct_tokens: set[str] = field(default_factory=set)

    async def token_review(self, request: web.Request) -> web.Response:
        body = await request.json()
        token = body["spec"]["token"]
        self.token_reviews += 1
        self.distinct_tokens.add(token)
        status: dict[str, object] = {"authenticated": False, "error": "invalid bearer token"}
        if token == self.good_token:
            status = {"authenticated": True, "user": {"username": "admin", "groups": [VIEWERS]}}
        return web.json_response({**body, "status": status}, status=201)

    async def access_review(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.access_reviews += 1
        spec = body["spec"]
        allowed = spec.get("user") == "admin" or VIEWERS in (spec.get("groups") or ())
        return web.json_response({**body, "status": {"allowed": allowed}}, status=201)


def make_app(reviews: Reviews) -> web.Application:
    app = web.Application()
    app.router.add_post(TOKEN_REVIEWS, reviews.token_review)
    app.router.add_post(ACCESS_REVIEWS, reviews.access_review)
    return app
