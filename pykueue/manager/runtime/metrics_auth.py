"""Who may read ``/metrics``: a bearer token, authenticated and authorized by kube-apiserver.

As Kueue's metrics server (controller-runtime's ``WithAuthenticationAndAuthorization``
filter): the ``Authorization: Bearer`` token goes to a TokenReview, then the user it names
to a SubjectAccessReview for the non-resource URL ``/metrics`` with verb ``get`` -- the
right the install's ``pykueue-metrics-reader`` ClusterRole grants. No token or an invalid one
gets 401, a user without the right 403, an API server that cannot be asked (or does not answer
in time) 503, and a flood of new tokens beyond the review budget 429 (the caller may retry;
nothing was decided against it). Answers are cached briefly, refusals too
(:mod:`manager.runtime.token_review`), so a scraper costs a review per token every few
seconds, not per scrape, and a client repeating a bad token costs no more. The token is never
logged.
"""

from __future__ import annotations

import logging

from aiohttp import web

from pykueue.kube.endpoints import Guard
from pykueue.manager.runtime.token_review import Reviewers, TokenAuthenticator, bearer_token
from pykueue.manager.runtime.visibility.auth import Authorizer, RequestAttributes, ReviewsThrottled

log = logging.getLogger(__name__)

METRICS_PATH = "/metrics"
# What a scrape asks for, in SubjectAccessReview terms: a non-resource ``get``.
READ_METRICS = RequestAttributes(verb="get", path=METRICS_PATH)


def _refuse(status: int, message: str) -> web.Response:
    headers = {"WWW-Authenticate": 'Bearer realm="pykueue"'} if status == 401 else \
        {"Retry-After": "1"} if status in (429, 503) else None
    return web.Response(status=status, text=message + "\n", headers=headers)


def _unavailable(step: str, exc: Exception) -> web.Response:
    if isinstance(exc, ReviewsThrottled):
        return _refuse(429, f"Too many requests: {exc}")
    # The exception's type and HTTP status only: nothing of the request, which holds the token.
    status = getattr(exc, "status", None)
    log.warning("metrics: %s failed: %s%s", step, type(exc).__name__, f" ({status})" if status else "")
    return _refuse(503, f"{step} is unavailable; try again")


def metrics_guard(authenticator: TokenAuthenticator, authorizer: Authorizer) -> Guard:
    """A guard for :func:`kube.endpoints.build_app` over these reviewers."""

    async def guard(request: web.Request) -> web.Response | None:
        token = bearer_token(request.headers.get("Authorization"))
        if token is None:
            return _refuse(401, "Unauthorized: a bearer token is required (Authorization: Bearer ...)")
        try:
            user = await authenticator.authenticate(token)
        except Exception as exc:  # the API server could not be asked: not the caller's fault
            return _unavailable("authentication", exc)
        if user is None:
            return _refuse(401, "Unauthorized: invalid or expired token")
        try:
            decision = await authorizer.authorize(user, READ_METRICS)
        except Exception as exc:
            return _unavailable("authorization", exc)
        if not decision.allowed:
            return _refuse(403, f'Forbidden: user "{user.name}" may not get {METRICS_PATH}')
        return None

    return guard


def cluster_metrics_guard(reviewers: Reviewers) -> Guard:
    """The guard the manager serves ``/metrics`` with: the process's shared reviewers
    (:func:`manager.runtime.token_review.cluster_reviewers`)."""
    return metrics_guard(reviewers.authenticator, reviewers.authorizer)
