"""The admission rules every job kind shares (Kueue's ValidateJobOnCreate and
ValidateJobOnUpdate) and where a prebuilt Workload's name is read from and written to.

Tests named after Kueue v0.19.2's ``pkg/controller/jobframework/validation_test.go`` take their
inputs and outcomes from its tables (Kueue compares the type and field only; the details
here are those Kueue's code words, checked against it); the others pin a rule of
``validation.go`` or ``utils.go`` that no Kueue case covers.
"""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys
from pykueue.api.field_errors import aggregate
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.gates import FeatureGates
from pykueue.manager.jobs.names import DNS1123_SUBDOMAIN_MSG
from pykueue.manager.jobs.prebuilt import (
    prebuilt_workload_name,
    prebuilt_workload_name_errors,
    prebuilt_workload_path,
    set_prebuilt_workload_name,
)
from pykueue.manager.jobs.validation import validate_job_on_create, validate_job_on_update

SOURCE = "kueue v0.19.2 validation_test.go TestValidateJobOnUpdate"
PRE = keys.PREBUILT_WORKLOAD_NAME
LABEL_PATH = f"metadata.labels[{PRE}]"
ANNOTATION_PATH = f"metadata.annotations[{PRE}]"
LONG = "workload-name-that-is-very-long-and-exceeds-the-63-character-label-limit-value"
ON, OFF = {"WorkloadIdentifierAnnotations": True}, {"WorkloadIdentifierAnnotations": False}
WIA = ", WorkloadIdentifierAnnotations enabled"


def _ctx(gates: dict[str, bool] | None = None, default_lq: bool = False) -> AdmissionContext:
    return AdmissionContext(AdmissionPolicy(gates=FeatureGates(gates or {})),
                            ClusterFacts(default_local_queue=default_lq))


def _job(label: str | None = None, annotation: str | None = None, suspend: bool = True,
         labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "test-job", "namespace": "ns1", "labels": dict(labels or {}),
                            "annotations": dict(annotations or {})}
    if label is not None:
        meta["labels"][PRE] = label
    if annotation is not None:
        meta["annotations"][PRE] = annotation
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {"suspend": suspend}}


def _update(old: dict[str, Any], new: dict[str, Any], gates: dict[str, bool] | None = None) -> list[str]:
    errors = validate_job_on_update(old, new, _ctx(gates), new_suspended=new["spec"]["suspend"],
                                    old_suspended=old["spec"]["suspend"], group="batch", kind="Job")
    return [str(e) for e in errors]


# -- where the name is read from ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "annotation", "gates", "name", "path"),
    [
        pytest.param("from-label", "from-annotation", ON, "from-annotation", ANNOTATION_PATH,
                     id="gate on: the annotation first"),
        pytest.param("from-label", None, ON, "from-label", LABEL_PATH,
                     id="gate on: an object made with the label keeps working"),
        pytest.param("from-label", "", ON, "from-label", LABEL_PATH,
                     id="gate on: an empty annotation is none"),
        pytest.param("from-label", "from-annotation", OFF, "from-label", LABEL_PATH,
                     id="gate off: the label first"),
        pytest.param(None, "short", OFF, "", LABEL_PATH, id="gate off: a short annotation is ignored"),
        pytest.param(None, LONG, OFF, LONG, ANNOTATION_PATH, id="gate off: a name too long for a label"),
        pytest.param("from-label", LONG, OFF, "from-label", ANNOTATION_PATH,
                     id="gate off: the label names it, the long annotation is the one checked"),
    ],
)
def test_the_prebuilt_name_is_read_as_kueue_reads_it(label: str | None, annotation: str | None,
                                                     gates: dict[str, bool], name: str, path: str) -> None:
    obj = _job(label, annotation)
    on = gates["WorkloadIdentifierAnnotations"]
    assert prebuilt_workload_name(obj, on) == name  # PrebuiltWorkloadNameFor
    assert prebuilt_workload_path(obj, on) == path  # GetPrebuiltWorkloadPath


@pytest.mark.parametrize(
    ("on", "name", "where"),
    [
        pytest.param(True, "wl", "annotations", id="gate on: an annotation"),
        pytest.param(False, "wl", "labels", id="gate off: a label"),
        pytest.param(False, LONG, "annotations", id="gate off: too long for a label"),
    ],
)
def test_the_prebuilt_name_is_written_as_kueue_writes_it(on: bool, name: str, where: str) -> None:
    metadata: dict[str, Any] = {"labels": {"a": "b"}}
    set_prebuilt_workload_name(metadata, name, on)  # SetPrebuiltWorkloadName
    assert metadata[where][PRE] == name
    assert metadata["labels"]["a"] == "b"
    other = "labels" if where == "annotations" else "annotations"
    assert PRE not in (metadata.get(other) or {})


def test_an_empty_prebuilt_label_is_an_invalid_name() -> None:
    # ValidateLabelAsCRDName checks a label that exists, whatever its value.
    assert [str(e) for e in prebuilt_workload_name_errors(_job(""), True)] == [
        f'{LABEL_PATH}: Invalid value: "": {DNS1123_SUBDOMAIN_MSG}']


# -- Kueue's TestValidateJobOnUpdate, the prebuilt cases -------------------------------------


def _case(name: str) -> str:
    return f'{SOURCE} "{name}"'


@pytest.mark.parametrize(
    ("old", "new", "gates", "want"),
    [
        pytest.param(_job("workload-name"), _job("workload-name"), OFF, [],
                     id=_case("prebuilt workload label valid on update")),
        pytest.param(_job(annotation="workload-name"), _job(annotation="workload-name"), ON, [],
                     id=_case("prebuilt workload annotation valid on update" + WIA)),
        pytest.param(_job("workload-name"), _job("workload-name"), ON, [],
                     id=_case("prebuilt workload label fallback valid on update, "
                              "WorkloadIdentifierAnnotations enabled")),
        pytest.param(_job("workload-name", "workload-name"), _job("workload-name", "workload-name"), ON, [],
                     id=_case("prebuilt workload same label and annotation on update, "
                              "WorkloadIdentifierAnnotations enabled")),
        pytest.param(_job("workload name"), _job("workload name"), ON,
                     [f'{LABEL_PATH}: Invalid value: "workload name": {DNS1123_SUBDOMAIN_MSG}'],
                     id=_case("prebuilt workload invalid label format with fallback on update, "
                              "WorkloadIdentifierAnnotations enabled")),
        pytest.param(_job(annotation="workload name"), _job(annotation="workload name"), ON,
                     [f'{ANNOTATION_PATH}: Invalid value: "workload name": {DNS1123_SUBDOMAIN_MSG}'],
                     id=_case("prebuilt workload invalid annotation format" + WIA)),
        pytest.param(_job(annotation="workload-name"), _job(annotation="workload-name-new"), ON, [],
                     id=_case("prebuilt workload annotation update" + WIA)),
        pytest.param(_job(annotation=LONG), _job(annotation=LONG), OFF, [],
                     id=_case("prebuilt workload annotation valid for long names > 63 chars when "
                              "WorkloadIdentifierAnnotations disabled")),
        pytest.param(_job(annotation="workload-name", suspend=False),
                     _job(annotation="workload-name-new", suspend=False), ON,
                     [f'{ANNOTATION_PATH}: Invalid value: "workload-name-new": field is immutable'],
                     id=_case("prebuilt workload annotation update not suspended, "
                              "WorkloadIdentifierAnnotations enabled")),
        pytest.param(_job("workload-name"), _job(annotation="workload-name-new"), ON, [],
                     id=_case("prebuilt workload label to annotation update" + WIA)),
        pytest.param(_job(annotation="workload-name"), _job("workload-name-new"), ON, [],
                     id=_case("prebuilt workload annotation to label update" + WIA)),
    ],
)
def test_kueue_prebuilt_workload_on_update(old: dict[str, Any], new: dict[str, Any], gates: dict[str, bool],
                                           want: list[str]) -> None:
    assert _update(old, new, gates) == want


def test_a_running_job_may_not_trade_its_label_for_another_annotation() -> None:
    # With the gate on the annotation wins, so the name changes: immutable, named at the annotation.
    old, new = _job("wl", suspend=False), _job("wl", "other", suspend=False)
    assert _update(old, new, ON) == [f'{ANNOTATION_PATH}: Invalid value: "other": field is immutable']
    assert _update(old, new, OFF) == [], "gate off: the label still names it"


# -- create: the kind and the other rules ----------------------------------------------------


def test_a_prebuilt_workload_on_a_kind_without_support_is_forbidden() -> None:
    obj = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"annotations": {PRE: "wl"}}}
    assert [str(e) for e in validate_job_on_create(obj, _ctx(), "apps", "StatefulSet")] == [
        f'{ANNOTATION_PATH}: Forbidden: Is not supported for "apps/v1, Kind=StatefulSet"']


def test_elastic_jobs_are_refused_by_kind_as_kueue_names_it() -> None:
    # validation_test.go TestValidateJobOnCreate "elastic annotation on unsupported framework is rejected"
    obj = {"apiVersion": "apps/v1", "kind": "StatefulSet",
           "metadata": {"annotations": {keys.ELASTIC_JOB: "true"}}}
    assert [str(e) for e in validate_job_on_create(obj, _ctx(), "apps", "StatefulSet")] == [
        f'metadata.annotations[{keys.ELASTIC_JOB}]: Forbidden: elastic job is not supported for '
        '"apps/v1, Kind=StatefulSet"']
    off = _ctx({"ElasticJobsViaWorkloadSlices": False})
    assert validate_job_on_create(obj, off, "apps", "StatefulSet") == []


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("NaN", 'Invalid value: "NaN": strconv.Atoi: parsing "NaN": invalid syntax'),
        (" 10", 'Invalid value: " 10": strconv.Atoi: parsing " 10": invalid syntax'),
        ("0", "Invalid value: 0: should be greater than 0"),
        ("-10", "Invalid value: -10: should be greater than 0"),
        ("99999999999999999999", 'Invalid value: "99999999999999999999": strconv.Atoi: parsing '
                                 '"99999999999999999999": value out of range'),
        ("+10", None),
    ],
)
def test_max_exec_time_reads_as_go_atoi(value: str, want: str | None) -> None:
    errors = validate_job_on_create(_job(labels={keys.MAX_EXEC_TIME_SECONDS: value}), _ctx(), "batch", "Job")
    assert [e.problem for e in errors] == ([] if want is None else [want])


def test_the_queue_name_label_rules_on_update() -> None:
    path = f"metadata.labels[{keys.QUEUE_NAME}]"
    old = _job(labels={keys.QUEUE_NAME: "lq1"}, suspend=False)
    new = _job(suspend=False)
    errors = validate_job_on_update(old, new, _ctx(default_lq=True), new_suspended=False, old_suspended=False,
                                    group="batch", kind="Job")
    # Kueue checks both: immutability while running and the namespace's default queue.
    assert [str(e) for e in errors] == [
        f'{path}: Invalid value: "": field is immutable',
        f'{path}: Invalid value: "": queue-name must not be empty in namespace with default queue']


def test_the_priority_class_rules_on_update() -> None:
    path = f"metadata.labels[{keys.PRIORITY_CLASS}]"
    with_pc = _job(labels={keys.PRIORITY_CLASS: "high"}, suspend=False)
    without = _job(suspend=False)
    assert _update(without, with_pc) == [
        f'{path}: Invalid value: "high": WorkloadPriorityClass cannot be added to a non-suspended workload']
    assert _update(with_pc, without) == [
        f'{path}: Invalid value: "": WorkloadPriorityClass cannot be removed from a workload']


def test_the_elastic_toggle_names_the_new_state() -> None:
    # validation_test.go "elastic job enabled annotation cannot be removed on update"
    old, new = _job(annotations={keys.ELASTIC_JOB: "true"}), _job()
    assert _update(old, new) == [
        f"metadata.annotations[{keys.ELASTIC_JOB}]: Invalid value: false: field is immutable"]


GATED = f"metadata.annotations[{keys.ADMISSION_GATED_BY}]"


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("example.com/my-gate", [], id="single gate"),
        pytest.param("example.com/my-gate, example.com/other-gate", [], id="space after comma"),
        pytest.param("", [], id="empty string"),
        pytest.param("invalid_gate_name", [
            f'{GATED}: Invalid value: "invalid_gate_name": must be a domain-prefixed path '
            '(such as "acme.io/foo")'],
            id="invalid format"),
        pytest.param("example.com/my-gate,example.com/my-gate", [
            f'{GATED}: Invalid value: "example.com/my-gate,example.com/my-gate": duplicate gate name: '
            "example.com/my-gate"], id="duplicate gates"),
        pytest.param("example.com/" + "a" * 300, [f"{GATED}: Too long: may not be more than 63 bytes"],
                     id="gate name too long"),
        pytest.param("example.com/my gate", [
            f"{GATED}: Invalid value: \"my gate\": Invalid path (regex used for validation is "
            "'[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"], id="space in path component"),
        pytest.param("example.com/a,,example.com/b", [
            f'{GATED}: Invalid value: "example.com/a,,example.com/b": cannot contain empty gate names'],
            id="an empty gate"),
    ],
)
def test_admission_gated_by_format(value: str, want: list[str]) -> None:
    # leaderworkerset_webhook_test.go TestValidateCreate "AdmissionGatedBy Annotation - ..." cases
    # (Kueue compares type and field; the words are validateAdmissionGatedByAnnotationFormat's).
    obj = _job(annotations={keys.ADMISSION_GATED_BY: value})
    errors = validate_job_on_create(obj, _ctx(), "batch", "Job")
    assert [str(e) for e in errors] == want


def test_admission_gates_may_only_be_removed() -> None:
    def gated(value: str | None) -> dict[str, Any]:
        return _job(annotations={} if value is None else {keys.ADMISSION_GATED_BY: value})

    assert _update(gated(None), gated("example.com/a")) == [
        f"{GATED}: Forbidden: cannot add admission gate after creation"]
    assert _update(gated("example.com/a"), gated("example.com/a,example.com/b")) == [
        f"{GATED}: Forbidden: can only remove gates, not add new ones"]
    assert _update(gated("example.com/a,example.com/b"), gated(" example.com/b")) == []


def test_an_error_reported_twice_is_denied_once() -> None:
    # A suspended job's prebuilt name is checked by both ValidateJobOnUpdate and the create
    # rules a kind runs again; Kubernetes' ToAggregate drops the repeated message.
    new = _job(annotation="workload name")
    errors = validate_job_on_update(_job(), new, _ctx(), new_suspended=True, old_suspended=True,
                                    group="batch", kind="Job")
    errors += validate_job_on_create(new, _ctx(), "batch", "Job")
    assert len(errors) == 2
    assert aggregate(errors) == f'{ANNOTATION_PATH}: Invalid value: "workload name": {DNS1123_SUBDOMAIN_MSG}'
