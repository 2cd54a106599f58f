"""Kueue v0.19.2's unit tables for Deployment, ported: the webhook's defaulting and validation
(``pkg/controller/jobs/deployment/deployment_webhook_test.go``: TestDefault, TestValidateCreate,
TestValidateUpdate). Each case's id is Kueue's test and case name; errors are compared as
Kueue's tables compare them, by field and type (value and detail ignored).

The defaulting cases' cluster lookup (does LocalQueue ``default`` exist in the namespace) is
resolved before the rules run, so those cases state the answer the lookup gives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.deployment.webhook import WEBHOOK

from .serving_objects import (
    annotate,
    ctx,
    deployment,
    error_kinds,
    label,
    queue,
    status,
    template_annotation,
    template_label,
)

JSON = dict[str, Any]
QUEUE_PATH = f"metadata.labels[{keys.QUEUE_NAME}]"
PRIORITY_PATH = f"metadata.labels[{keys.PRIORITY_CLASS}]"
GATED_PATH = f"metadata.annotations[{keys.ADMISSION_GATED_BY}]"
ELASTIC_PATH = f"metadata.annotations[{keys.ELASTIC_JOB}]"
GATED_ON = {"AdmissionGatedBy": True}
GATED_OFF = {"AdmissionGatedBy": False}
INVALID, FORBIDDEN, TOO_LONG = "Invalid value", "Forbidden", "Too long"


def _stamped(d: JSON, q: str, priority: str | None = None) -> JSON:
    """What the defaulter adds to a managed Deployment's pod template."""
    template_label(d, keys.MANAGED, "true")
    template_label(d, keys.QUEUE_NAME, q)
    template_annotation(d, keys.POD_SUSPENDING_PARENT, "deployment")
    if priority:
        template_label(d, keys.PRIORITY_CLASS, priority)
    return d


Build = Callable[[], JSON]

# -- deployment_webhook_test.go TestDefault ------------------------------------------------------

DEFAULT: list[tuple[str, Build, bool, Build]] = [
    ("deployment without queue", lambda: deployment(), False, lambda: deployment()),
    (
        "deployment with queue",
        lambda: queue(deployment(), "test-queue"),
        False,
        lambda: _stamped(queue(deployment(), "test-queue"), "test-queue"),
    ),
    (
        "deployment with queue and pod template spec queue",
        lambda: template_label(queue(deployment(), "new-test-queue"), keys.QUEUE_NAME, "test-queue"),
        False,
        lambda: _stamped(queue(deployment(), "new-test-queue"), "new-test-queue"),
    ),
    (
        "deployment without queue with pod template spec queue",
        lambda: template_label(deployment(), keys.QUEUE_NAME, "test-queue"),
        False,
        lambda: template_label(deployment(), keys.QUEUE_NAME, "test-queue"),
    ),
    (
        "default lq is created, job doesn't have queue label",
        lambda: deployment("test-pod", "default"),
        True,
        lambda: _stamped(queue(deployment("test-pod", "default"), "default"), "default"),
    ),
    (
        "default lq is created, job has queue label",
        lambda: queue(deployment(), "test-queue"),
        True,
        lambda: _stamped(queue(deployment(), "test-queue"), "test-queue"),
    ),
    (
        "default lq isn't created, job doesn't have queue label",
        lambda: deployment(),
        False,
        lambda: deployment(),
    ),
    (
        "deployment with queue and priority class",
        lambda: label(queue(deployment(), "test-queue"), keys.PRIORITY_CLASS, "test"),
        False,
        lambda: _stamped(
            label(queue(deployment(), "test-queue"), keys.PRIORITY_CLASS, "test"), "test-queue", "test"
        ),
    ),
    (
        "deployment with queue, priority class and pod template spec queue, priority class",
        lambda: template_label(
            template_label(
                label(queue(deployment(), "new-test-queue"), keys.PRIORITY_CLASS, "new-test"),
                keys.QUEUE_NAME,
                "test-queue",
            ),
            keys.PRIORITY_CLASS,
            "test",
        ),
        False,
        lambda: _stamped(
            label(queue(deployment(), "new-test-queue"), keys.PRIORITY_CLASS, "new-test"),
            "new-test-queue",
            "new-test",
        ),
    ),
    (
        "deployment without queue with pod template spec queue and priority class",
        lambda: template_label(
            template_label(deployment(), keys.QUEUE_NAME, "test-queue"), keys.PRIORITY_CLASS, "test"
        ),
        False,
        lambda: template_label(
            template_label(deployment(), keys.QUEUE_NAME, "test-queue"), keys.PRIORITY_CLASS, "test"
        ),
    ),
]


@pytest.mark.parametrize("case,given,default_lq,want", DEFAULT, ids=[c[0] for c in DEFAULT])
def test_default(case: str, given: Build, default_lq: bool, want: Build) -> None:
    # kueue v0.19.2 deployment_webhook_test.go TestDefault (the case named in the id)
    assert WEBHOOK.default(given(), ctx(default_local_queue=default_lq)) == want()


# -- deployment_webhook_test.go TestValidateCreate -----------------------------------------------


def _gated(value: str) -> JSON:
    return annotate(queue(deployment("test-deployment", "default"), "queue"), keys.ADMISSION_GATED_BY, value)


# The AdmissionGatedBy create cases both kinds' tables share: (case, value, gates, errors).
GATED_CREATE: list[tuple[str, str, dict[str, bool], list[tuple[str, str]]]] = [
    ("AdmissionGatedBy annotation - single gate", "example.com/controller", GATED_ON, []),
    ("AdmissionGatedBy annotation - trailing space", "example.com/gate ", GATED_ON, []),
    ("AdmissionGatedBy annotation - space before comma", "example.com/gate ,example.com/gate2", GATED_ON, []),
    ("AdmissionGatedBy annotation - space after comma", "example.com/gate, example.com/gate2", GATED_ON, []),
    ("AdmissionGatedBy annotation - leading space", " example.com/gate", GATED_ON, []),
    ("AdmissionGatedBy annotation - multiple gates", "example.com/a,not.example.com/b", GATED_ON, []),
    (
        "invalid AdmissionGatedBy annotation - not in subdomain/path format",
        "this is an invalid value",
        GATED_ON,
        [(GATED_PATH, INVALID)],
    ),
    (
        "invalid AdmissionGatedBy annotation - duplicate gates",
        "duplicates.are/invalid,duplicates.are/invalid",
        GATED_ON,
        [(GATED_PATH, INVALID)],
    ),
    (
        "invalid AdmissionGatedBy annotation - gate name too long",
        "cannot.be.too.long/" + "but-this-is-too-long" * 20,
        GATED_ON,
        [(GATED_PATH, TOO_LONG)],
    ),
    (
        "invalid AdmissionGatedBy annotation - space in path component",
        "example.com/gate name",
        GATED_ON,
        [(GATED_PATH, INVALID)],
    ),
    (
        "invalid AdmissionGatedBy annotation - space in domain component",
        "example .com/gate",
        GATED_ON,
        [(GATED_PATH, INVALID)],
    ),
    (
        "invalid AdmissionGatedBy annotation - multiple gates with one containing space",
        "valid.com/gate,invalid gate.com/controller",
        GATED_ON,
        [(GATED_PATH, INVALID)],
    ),
    (
        "AdmissionGatedBy annotation with feature gate disabled - valid value",
        "example.com/gate",
        GATED_OFF,
        [],
    ),
    (
        "AdmissionGatedBy annotation with feature gate disabled - invalid value",
        "this is an invalid value",
        GATED_OFF,
        [],
    ),
    ("AdmissionGatedBy annotation with feature gate enabled - empty string", "", GATED_ON, []),
]

CREATE: list[tuple[str, Build, dict[str, bool], list[tuple[str, str]]]] = [
    ("without queue", lambda: deployment(), {}, []),
    ("valid queue name", lambda: queue(deployment(), "test-queue"), {}, []),
    ("invalid queue name", lambda: queue(deployment(), "test/queue"), {}, [(QUEUE_PATH, INVALID)]),
    *[(case, (lambda v=value: _gated(v)), gates, want) for case, value, gates, want in GATED_CREATE],
    (
        "elastic job annotation is rejected on create",
        lambda: annotate(queue(deployment("test-deployment", "default"), "queue"), keys.ELASTIC_JOB, "true"),
        {"ElasticJobsViaWorkloadSlices": True},
        [(ELASTIC_PATH, FORBIDDEN)],
    ),
]


@pytest.mark.parametrize("case,obj,gates,want", CREATE, ids=[c[0] for c in CREATE])
def test_validate_create(case: str, obj: Build, gates: dict[str, bool], want: list[tuple[str, str]]) -> None:
    # kueue v0.19.2 deployment_webhook_test.go TestValidateCreate (the case named in the id)
    assert error_kinds(WEBHOOK.validate(obj(), None, ctx(gates))) == want


# -- deployment_webhook_test.go TestValidateUpdate -----------------------------------------------


def _q(
    q: str | None = None,
    *,
    ready: int = 0,
    priority: str | None = None,
    gated: str | None = None,
    name: str = "test-pod",
    ns: str = "",
) -> JSON:
    d = deployment(name, ns)
    if q is not None:
        queue(d, q)
    if priority is not None:
        label(d, keys.PRIORITY_CLASS, priority)
    if gated is not None:
        annotate(d, keys.ADMISSION_GATED_BY, gated)
    if ready:
        status(d, readyReplicas=ready)
    return d


def _dq(gated: str | None = None) -> JSON:
    return _q("queue", gated=gated, name="test-deployment", ns="default")


UPDATE: list[tuple[str, Build, Build, dict[str, bool], list[tuple[str, str]]]] = [
    ("without queue (no changes)", lambda: _q(), lambda: _q(), {}, []),
    ("without queue", lambda: _q("test-queue"), lambda: _q(), {}, [(QUEUE_PATH, INVALID)]),
    ("with queue (no changes)", lambda: _q("test-queue"), lambda: _q("test-queue"), {}, []),
    ("with queue", lambda: _q(), lambda: _q("test-queue"), {}, []),
    ("with queue (invalid)", lambda: _q("test/queue"), lambda: _q("test/queue"), {}, [(QUEUE_PATH, INVALID)]),
    (
        "with queue (ready replicas)",
        lambda: _q("test-queue", ready=1),
        lambda: _q("test-queue-new", ready=1),
        {},
        [(QUEUE_PATH, INVALID)],
    ),
    (
        "update priority-class when suspended",
        lambda: _q("test-queue", priority="test"),
        lambda: _q("test-queue", priority="new-test"),
        {},
        [],
    ),
    (
        "set priority-class when replicas ready",
        lambda: _q("test-queue", ready=1),
        lambda: _q("test-queue", ready=1, priority="test"),
        {},
        [(PRIORITY_PATH, INVALID)],
    ),
    (
        "update priority-class when replicas ready",
        lambda: _q("test-queue", ready=1, priority="test"),
        lambda: _q("test-queue", ready=1, priority="new-test"),
        {},
        [],
    ),
    (
        "delete priority-class when replicas ready",
        lambda: _q("test-queue", ready=1, priority="test"),
        lambda: _q("test-queue", ready=1),
        {},
        [(PRIORITY_PATH, INVALID)],
    ),
    (
        "set priority-class when replicas not ready",
        lambda: _q("test-queue"),
        lambda: _q("test-queue", priority="test"),
        {},
        [],
    ),
    (
        "update priority-class when replicas not ready",
        lambda: _q("test-queue", priority="test"),
        lambda: _q("test-queue", priority="new-test"),
        {},
        [],
    ),
    (
        "delete priority-class when replicas not ready",
        lambda: _q("test-queue", priority="test"),
        lambda: _q("test-queue"),
        {},
        [(PRIORITY_PATH, INVALID)],
    ),
    (
        "reject adding AdmissionGatedBy annotation after Deployment creation",
        lambda: _dq(),
        lambda: _dq("example.com/controller1"),
        GATED_ON,
        [(GATED_PATH, FORBIDDEN)],
    ),
    (
        "allow removing AdmissionGatedBy annotation with single gate",
        lambda: _dq("example.com/controller1"),
        lambda: _dq(),
        GATED_ON,
        [],
    ),
    (
        "allow removing AdmissionGatedBy annotation with multiple gates",
        lambda: _dq("example.com/controller1,example.com/controller2"),
        lambda: _dq(),
        GATED_ON,
        [],
    ),
    (
        "allow removing one gate from AdmissionGatedBy annotation",
        lambda: _dq("example.com/controller1,example.com/controller2"),
        lambda: _dq("example.com/controller2"),
        GATED_ON,
        [],
    ),
    (
        "reject injecting new gate in AdmissionGatedBy annotation",
        lambda: _dq("example.com/controller1,example.com/controller2"),
        lambda: _dq("example.com/controller3"),
        GATED_ON,
        [(GATED_PATH, FORBIDDEN)],
    ),
    (
        "allow reordering gates in AdmissionGatedBy annotation",
        lambda: _dq("example.com/controller1,example.com/controller2"),
        lambda: _dq("example.com/controller2,example.com/controller1"),
        GATED_ON,
        [],
    ),
    (
        "elastic job annotation is rejected on update",
        lambda: _dq(),
        lambda: annotate(_dq(), keys.ELASTIC_JOB, "true"),
        {"ElasticJobsViaWorkloadSlices": True},
        [(ELASTIC_PATH, FORBIDDEN)],
    ),
]


@pytest.mark.parametrize("case,old,new,gates,want", UPDATE, ids=[c[0] for c in UPDATE])
def test_validate_update(
    case: str, old: Build, new: Build, gates: dict[str, bool], want: list[tuple[str, str]]
) -> None:
    # kueue v0.19.2 deployment_webhook_test.go TestValidateUpdate (the case named in the id)
    assert error_kinds(WEBHOOK.validate(new(), old(), ctx(gates))) == want
