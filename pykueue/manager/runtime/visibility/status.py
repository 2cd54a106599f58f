"""Kubernetes ``Status`` objects: how every error of the visibility server is reported.

kubectl and client libraries decode failures from this shape (reason, code, details), so
a 404 for an unknown queue reads the same as one from kube-apiserver.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from pykueue.api.keys import VISIBILITY_GROUP

_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
            405: "MethodNotAllowed", 408: "Timeout", 413: "RequestEntityTooLarge",
            415: "UnsupportedMediaType", 429: "TooManyRequests", 500: "InternalError",
            503: "ServiceUnavailable"}


def status(code: int, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": message, "reason": _REASONS.get(code, "Unknown"), "code": code}
    if details:
        body["details"] = details
    return body


def status_response(code: int, message: str, details: dict[str, Any] | None = None) -> web.Response:
    return web.json_response(status(code, message, details), status=code)


def not_found(kind: str, name: str) -> web.Response:
    # Kueue names the resource in the singular ("clusterqueue"), as its storage does.
    return status_response(404, f'{kind}.{VISIBILITY_GROUP} "{name}" not found',
                           {"name": name, "group": VISIBILITY_GROUP, "kind": kind})
