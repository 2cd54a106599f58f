"""What a hostile or confused client sends the webhook, each answered with a 4xx and a reason:
JSON nested thousands deep, fields of the wrong type (an unhashable ``kind``, a ``request``
that is a string), bodies of other media types or not UTF-8; large bodies, handled off the
event loop, get the same answers as small ones."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from pykueue.webhook.offload import THRESHOLD_BYTES

from .conftest import WebhookServer
from .objects import JOB_M

JOB_KIND = {"group": "batch", "version": "v1", "kind": "Job"}


def _review(obj: Any, operation: str = "CREATE", **request: Any) -> bytes:
    body = {"uid": "u", "kind": JOB_KIND, "operation": operation, "namespace": "team-a", "object": obj}
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {**body, **request}}).encode()


def _conversion(objects: Any) -> bytes:
    return json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {
        "uid": "c", "desiredAPIVersion": "kueue.x-k8s.io/v1beta2", "objects": objects}}).encode()


def _job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}, **spec}}


@pytest.mark.parametrize("depth", [1100, 5000, 200_000])  # the parser stops past 1,024
@pytest.mark.parametrize("path", [JOB_M, "/validate-batch-v1-job", "/convert"])
def test_json_nested_thousands_deep_is_a_400(webhook: WebhookServer, path: str, depth: int) -> None:
    deep = "[" * depth + "]" * depth
    body = (_conversion([{"kind": "Workload", "apiVersion": "kueue.x-k8s.io/v1beta1", "spec": "X"}])
            if path == "/convert" else _review(_job(x="X")))
    status, answer = webhook.post_raw(path, body.replace(b'"X"', deep.encode()))
    assert status == 400 and "nested too deeply" in answer["error"], answer


@pytest.mark.parametrize(("path", "body", "reason"), [
    ("/convert", _conversion([{"kind": ["Workload"], "apiVersion": "kueue.x-k8s.io/v1beta1"}]), "kind"),
    ("/convert", _conversion([{"kind": {"a": 1}, "apiVersion": "kueue.x-k8s.io/v1beta1"}]), "kind"),
    ("/convert", _conversion([{"kind": "Workload", "apiVersion": ["kueue.x-k8s.io/v1beta1"]}]), "apiVersion"),
])
def test_objects_that_cannot_be_converted_fail_the_conversion_not_the_server(
        webhook: WebhookServer, path: str, body: bytes, reason: str) -> None:
    status, answer = webhook.post_raw(path, body)
    assert status == 200, answer  # a ConversionReview reports a failed object in its result
    result = answer["response"]["result"]
    assert result["status"] == "Failure" and reason in result["message"]


@pytest.mark.parametrize(("body", "reason"), [
    (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                 "request": "CREATE"}).encode(), "without a request"),
    (json.dumps({"apiVersion": ["admission.k8s.io/v1"], "kind": {"AdmissionReview": 1}}).encode(),
     "expected apiVersion"),
    (_review(_job(), kind=["batch", "v1", "Job"]), "GroupVersionKind"),
    (_review(_job(), operation={"op": "CREATE"}), "operation"),
    (_review(_job(), uid=7), "uid"),
    (_review(_job(), namespace=["team-a"]), "namespace"),
    (_review(["a", "list"]), "not an object"),
    (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "\xff\xfe"}}',
     "not JSON"),
    (_review(_job())[:-7], "not JSON"),  # truncated
])
def test_wrong_types_truncation_and_bad_utf8_are_400s_with_a_reason(
        webhook: WebhookServer, body: bytes, reason: str) -> None:
    status, answer = webhook.post_raw(JOB_M, body)
    assert status == 400 and reason in answer["error"], answer


@pytest.mark.parametrize("content_type",
                         ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_bodies_of_other_media_types_are_415(webhook: WebhookServer, content_type: str) -> None:
    status, answer = webhook.post_raw(JOB_M, _review(_job()), content_type=content_type)
    assert status == 415 and "JSON" in answer["error"]


def test_a_body_over_the_limit_is_413(webhook: WebhookServer) -> None:
    status, answer = webhook.post_raw(JOB_M, b" " * (8 * 1024 * 1024))
    assert status == 413 and "limit" in answer["error"]


def test_a_large_object_is_answered_as_a_small_one(webhook: WebhookServer) -> None:
    small = _job()
    large = copy.deepcopy(small)
    large["metadata"]["annotations"] = {f"note-{i}": "x" * 1000 for i in range(2 * THRESHOLD_BYTES // 1000)}
    answers = []
    for obj in (small, large):
        status, answer = webhook.post_raw(JOB_M, _review(obj))
        assert status == 200, answer
        answers.append(json.loads(base64.b64decode(answer["response"]["patch"])))
    assert len(_review(large)) > 2 * THRESHOLD_BYTES  # so its parse, copy and diff ran on a worker
    assert answers[0] == answers[1]  # the same defaults, whichever thread worked them out
