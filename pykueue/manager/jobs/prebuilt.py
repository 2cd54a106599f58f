"""The prebuilt Workload a job object names: a Workload someone else made for it (MultiKueue
in a worker, a LeaderWorkerSet for each group's pods), which it runs under instead of one of
its own.

The name is kept under ``kueue.x-k8s.io/prebuilt-workload-name``, as a label or as an
annotation. Which one counts follows Kueue's PrebuiltWorkloadNameFor, GetPrebuiltWorkloadPath,
ValidatePrebuiltWorkloadName and SetPrebuiltWorkloadName, decided by the
WorkloadIdentifierAnnotations gate (``identifier_annotations``):

* gate on: the annotation when it is set, else the label (objects made before keep
  working); new names are written as annotations;
* gate off: the label; the annotation only for a name too long for a label (over 63
  bytes), which is also the only name written as an annotation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.jobs.job_fields import annotations_of, labels
from pykueue.manager.jobs.names import annotation_path, dns_subdomain_errors, label_path

KEY = keys.PREBUILT_WORKLOAD_NAME
LABEL_VALUE_MAX_BYTES = 63


def _too_long_for_label(name: str) -> bool:
    return len(name.encode()) > LABEL_VALUE_MAX_BYTES


def _annotation_counts(obj: Mapping[str, Any], identifier_annotations: bool) -> bool:
    """Whether the annotation is the one validated and named in errors."""
    name = annotations_of(obj).get(KEY, "")
    return name != "" and (identifier_annotations or _too_long_for_label(name))


def prebuilt_workload_name(obj: Mapping[str, Any], identifier_annotations: bool) -> str:
    """The prebuilt Workload's name, "" when the object names none."""
    annotation, label = annotations_of(obj).get(KEY, ""), labels(obj).get(KEY, "")
    if identifier_annotations:
        return annotation or label
    if label:
        return label
    return annotation if _too_long_for_label(annotation) else ""


def prebuilt_workload_path(obj: Mapping[str, Any], identifier_annotations: bool) -> str:
    """The field errors about the prebuilt name point at."""
    return annotation_path(KEY) if _annotation_counts(obj, identifier_annotations) else label_path(KEY)


def prebuilt_workload_name_errors(obj: Mapping[str, Any], identifier_annotations: bool) -> list[FieldError]:
    """The name must be a Workload's (an RFC 1123 subdomain), checked where it counts; a
    label present but empty is invalid too."""
    if _annotation_counts(obj, identifier_annotations):
        return dns_subdomain_errors(annotations_of(obj)[KEY], annotation_path(KEY))
    label = labels(obj).get(KEY)
    return [] if label is None else dns_subdomain_errors(label, label_path(KEY))


def set_prebuilt_workload_name(metadata: JSON, name: str, identifier_annotations: bool) -> None:
    """Write the name into an object's ``metadata`` where it counts."""
    where = "annotations" if identifier_annotations or _too_long_for_label(name) else "labels"
    if not isinstance(metadata.get(where), dict):
        metadata[where] = {}
    metadata[where][KEY] = name
