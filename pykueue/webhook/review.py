"""AdmissionReview v1 and ConversionReview v1 on the wire: parse strictly, answer exactly.

Anything the apiserver would never send (not JSON, no ``request``, a wrong apiVersion/kind,
an object that is not a mapping) is a :class:`BadRequest`, answered with HTTP 400 and the
reason, so a confused client learns what was wrong and the server never crashes on it.
Responses always carry the request's ``uid``; mutations are a base64 RFC 6902 JSON Patch
computed as the diff between what arrived and what the defaulter made of it, as
controller-runtime does.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import jsonpatch
import orjson

from pykueue.api.wire import JSON
from pykueue.kube.endpoints import BadRequest

ADMISSION_API_VERSION = "admission.k8s.io/v1"
CONVERSION_API_VERSION = "apiextensions.k8s.io/v1"
# kube-apiserver takes request bodies of up to 3 MiB, so an object under review is at most that;
# an UPDATE's review carries two (object and oldObject) and a little more.
MAX_REVIEW_BYTES = 7 * 1024 * 1024
# A ConversionReview of a list carries every item of it: a LIST of many Workloads in v1beta1
# is one review. Larger lists fail (413) rather than expand into gigabytes of objects.
MAX_CONVERSION_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class AdmissionRequest:
    uid: str
    group: str
    version: str
    kind: str
    operation: str
    namespace: str
    name: str
    object: JSON | None
    old_object: JSON | None
    api_version: str  # of the review, echoed back
    sub_resource: str = ""


def decode_json(body: bytes, limit: int = MAX_REVIEW_BYTES) -> Any:
    if len(body) > limit:
        raise BadRequest(f"request body larger than {limit} bytes")
    try:
        # orjson: a few times faster than the standard library on the large bodies that matter,
        # and it stops at 1,024 levels of nesting by itself.
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc) or "recursion limit" in str(exc).lower():
            raise BadRequest("request body is JSON nested too deeply") from None
        raise BadRequest(f"request body is not JSON: {str(exc)[:200]}") from None


def short(exc: BaseException, limit: int = 200) -> str:
    """An exception's text, cut: it may quote (part of) a hostile body."""
    text = str(exc)
    return text if len(text) <= limit else text[:limit] + "..."


def _brief(value: Any, limit: int = 80) -> str:
    """A value for an error message, cut: a hostile body may put megabytes where a name goes."""
    try:
        text = repr(value)
    except RecursionError:
        return f"a deeply nested {type(value).__name__}"
    return text if len(text) <= limit else text[:limit] + "..."


def _review(payload: Any, api_version: str, kind: str) -> JSON:
    if not isinstance(payload, dict):
        raise BadRequest(f"expected a {kind} object, got {type(payload).__name__}")
    if payload.get("kind") != kind or payload.get("apiVersion") != api_version:
        raise BadRequest(
            f"expected apiVersion {api_version} kind {kind}, got apiVersion "
            f"{_brief(payload.get('apiVersion'))} kind {_brief(payload.get('kind'))}"
        )
    request = payload.get("request")
    if not isinstance(request, dict):
        raise BadRequest(f"{kind} without a request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadRequest(f"{kind} request without a uid")
    return request


def _optional_object(value: Any, what: str) -> JSON | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadRequest(f"request.{what} is not an object")
    return value


def parse_admission_review(body: bytes) -> AdmissionRequest:
    request = _review(decode_json(body), ADMISSION_API_VERSION, "AdmissionReview")
    kind = request.get("kind")
    if not isinstance(kind, dict) or not isinstance(kind.get("kind"), str):
        raise BadRequest("request.kind must be a GroupVersionKind object")
    operation = request.get("operation")
    if operation not in ("CREATE", "UPDATE", "DELETE", "CONNECT"):
        raise BadRequest(f"request.operation {_brief(operation)} is not CREATE, UPDATE, DELETE or CONNECT")
    for field in ("namespace", "name", "subResource"):
        if not isinstance(request.get(field, ""), str):
            raise BadRequest(f"request.{field} must be a string")
    return AdmissionRequest(
        uid=request["uid"],
        group=str(kind.get("group") or ""),
        version=str(kind.get("version") or ""),
        kind=kind["kind"],
        operation=operation,
        namespace=request.get("namespace") or "",
        name=request.get("name") or "",
        object=_optional_object(request.get("object"), "object"),
        old_object=_optional_object(request.get("oldObject"), "oldObject"),
        api_version=ADMISSION_API_VERSION,
        sub_resource=request.get("subResource") or "",
    )


def admission_response(
    uid: str,
    *,
    allowed: bool = True,
    patch: list[JSON] | None = None,
    message: str = "",
    code: int = 0,
    reason: str = "",
    warnings: list[str] | None = None,
) -> JSON:
    response: JSON = {"uid": uid, "allowed": allowed}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch, separators=(",", ":")).encode()).decode()
    if not allowed or message:
        response["status"] = {
            "code": code or (200 if allowed else 403),
            "reason": reason or ("" if allowed else "Forbidden"),
            "message": message,
        }
    if warnings:
        response["warnings"] = warnings
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response}


def json_patch(original: JSON, mutated: JSON) -> list[JSON]:
    ops: list[JSON] = jsonpatch.make_patch(original, mutated).patch
    return ops


@dataclass(frozen=True)
class ConversionRequest:
    uid: str
    desired_api_version: str
    objects: list[Any]


def parse_conversion_review(body: bytes) -> ConversionRequest:
    request = _review(decode_json(body, MAX_CONVERSION_BYTES), CONVERSION_API_VERSION, "ConversionReview")
    desired = request.get("desiredAPIVersion")
    if not isinstance(desired, str) or not desired:
        raise BadRequest("ConversionReview request without desiredAPIVersion")
    objects = request.get("objects")
    if not isinstance(objects, list):
        raise BadRequest("ConversionReview request.objects must be a list")
    return ConversionRequest(request["uid"], desired, objects)


def conversion_response(uid: str, objects: list[JSON] | None = None, error: str = "") -> JSON:
    result: JSON = {"status": "Success"} if not error else {"status": "Failure", "message": error}
    response: JSON = {"uid": uid, "result": result}
    if not error:
        response["convertedObjects"] = objects or []
    return {"apiVersion": CONVERSION_API_VERSION, "kind": "ConversionReview", "response": response}
