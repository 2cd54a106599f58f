"""Configuration ``metrics.customLabels``: object labels promoted to metric labels (Kueue v0.19.2).

Each entry names a Prometheus label ``custom_<name>`` whose value is read from a label
(``sourceLabelKey``, or the entry's ``name`` when neither key is given) or an annotation
(``sourceAnnotationKey``) of the ClusterQueue (the default ``sourceKind``), LocalQueue, Cohort
or Workload a series is about. A value outside a non-empty ``trackedValues`` list is reported
as ``kueue.x-k8s.io/_UNTRACKED_VALUE_``, an object not seen yet as "". The labels exist only
under Kueue's ``CustomMetricLabels`` gate (alpha, off by default in v0.19.2); the section is
validated either way, with Kueue's limits (20 entries, 6 per source kind, 2 for Workloads,
whose values must be a closed list of at most 12; 16 tracked values otherwise), and an
invalid one stops the start.

Which families carry which kinds is decided in ``metrics`` (:func:`family_sources`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pykueue.api.field_errors import aggregate, duplicate, invalid, too_many
from pykueue.api.fields import FieldError
from pykueue.manager.core.config import ConfigError
from pykueue.manager.core.features import gate_enabled
from pykueue.manager.jobs.names import label_key_problems

GATE = "CustomMetricLabels"
CLUSTER_QUEUE, COHORT, LOCAL_QUEUE, WORKLOAD = "ClusterQueue", "Cohort", "LocalQueue", "Workload"
# Kueue orders label names and values by source kind, as Go sorts the kind strings.
KIND_ORDER = (CLUSTER_QUEUE, COHORT, LOCAL_QUEUE, WORKLOAD)
UNTRACKED = "kueue.x-k8s.io/_UNTRACKED_VALUE_"
PATH = "metrics.customLabels"
MAX_LABELS = 20
MAX_PER_KIND: Mapping[str, int] = {WORKLOAD: 2, LOCAL_QUEUE: 6, CLUSTER_QUEUE: 6, COHORT: 6}
MAX_TRACKED = 16
MAX_TRACKED_WORKLOAD = 12
_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]*$")


@dataclass(frozen=True)
class CustomLabel:
    name: str
    kind: str = CLUSTER_QUEUE
    label_key: str = ""
    annotation_key: str = ""
    tracked: tuple[str, ...] = ()

    def value(self, labels: Mapping[str, str], annotations: Mapping[str, str]) -> str:
        if self.annotation_key:
            got = annotations.get(self.annotation_key, "")
        else:
            got = labels.get(self.label_key or self.name, "")
        return got if not self.tracked or got in self.tracked else UNTRACKED


def _entries(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    metrics = config.get("metrics") or {}
    raw = metrics.get("customLabels") if isinstance(metrics, Mapping) else None
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
        raise ConfigError(f"{PATH} is not a list of mappings")
    return raw


def custom_label_errors(config: Mapping[str, Any]) -> list[FieldError]:
    """Kueue v0.19.2's checks of ``metrics.customLabels`` (``pkg/config/validation.go``)."""
    entries = _entries(config)
    errors: list[FieldError] = []
    if len(entries) > MAX_LABELS:
        errors.append(too_many(PATH, f"must have at most {MAX_LABELS} items"))
    seen: set[str] = set()
    per_kind: dict[str, int] = {}
    for i, entry in enumerate(entries):
        path = f"{PATH}[{i}]"
        name = str(entry.get("name") or "")
        label_key, annotation_key = (
            str(entry.get("sourceLabelKey") or ""),
            str(entry.get("sourceAnnotationKey") or ""),
        )
        tracked = [str(v) for v in entry.get("trackedValues") or ()]
        if not _NAME.match(name):
            errors.append(invalid(f"{path}.name", name, "must match ^[a-zA-Z][a-zA-Z0-9_]*$"))
        if name in seen:
            errors.append(duplicate(f"{path}.name", name))
        seen.add(name)
        if label_key and annotation_key:
            errors.append(
                invalid(path, entry, "sourceLabelKey and sourceAnnotationKey are mutually exclusive")
            )
        key_path, key = (
            (f"{path}.sourceLabelKey", label_key)
            if label_key
            else (f"{path}.sourceAnnotationKey", annotation_key)
            if annotation_key
            else (f"{path}.name", name)
        )
        problems = label_key_problems(key)
        if problems:
            errors.append(invalid(key_path, key, "; ".join(problems)))
        kind = str(entry.get("sourceKind") or CLUSTER_QUEUE)
        per_kind[kind] = per_kind.get(kind, 0) + 1
        if kind == WORKLOAD:
            if not tracked:
                errors.append(
                    invalid(
                        f"{path}.trackedValues", tracked, "must not be empty when sourceKind is 'Workload'"
                    )
                )
            if len(tracked) > MAX_TRACKED_WORKLOAD:
                errors.append(
                    invalid(
                        f"{path}.trackedValues",
                        tracked,
                        f"must not be greater than {MAX_TRACKED_WORKLOAD} when sourceKind is 'Workload'",
                    )
                )
        elif len(tracked) > MAX_TRACKED:
            errors.append(too_many(f"{path}.trackedValues", f"must have at most {MAX_TRACKED} items"))
        if len(set(tracked)) < len(tracked):
            errors.append(invalid(f"{path}.trackedValues", tracked, "must not contain duplicates"))
    for kind in sorted(per_kind):
        limit = MAX_PER_KIND.get(kind)
        if limit is None:
            errors.append(invalid(PATH, entries, f"unknown source kind: {kind}"))
        elif per_kind[kind] > limit:
            errors.append(
                invalid(
                    PATH,
                    entries,
                    f"too many custom labels for source kind {kind}: found "
                    f"{per_kind[kind]}, expected <= {limit}",
                )
            )
    return errors


@dataclass
class CustomLabels:
    """The configured labels and, per source kind, each object's current values."""

    labels: tuple[CustomLabel, ...]
    _values: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    def kinds(self) -> frozenset[str]:
        return frozenset(label.kind for label in self.labels)

    def _of(self, kind: str) -> tuple[CustomLabel, ...]:
        return tuple(label for label in self.labels if label.kind == kind)

    def names(self, kinds: Sequence[str]) -> tuple[str, ...]:
        """Prometheus label names for series about objects of ``kinds``, in Kueue's order."""
        return tuple(
            f"custom_{label.name}" for kind in KIND_ORDER if kind in kinds for label in self._of(kind)
        )

    def extract(
        self, kind: str, labels: Mapping[str, str] | None, annotations: Mapping[str, str] | None
    ) -> tuple[str, ...]:
        return tuple(label.value(labels or {}, annotations or {}) for label in self._of(kind))

    def store(
        self, kind: str, key: str, labels: Mapping[str, str] | None, annotations: Mapping[str, str] | None
    ) -> bool:
        """Record an object's values; True when it had others before (its series must go)."""
        if kind not in self.kinds():
            return False
        new = self.extract(kind, labels, annotations)
        old = self._values.get((kind, key))
        self._values[(kind, key)] = new
        return old is not None and old != new

    def delete(self, kind: str, key: str) -> None:
        self._values.pop((kind, key), None)

    def values(self, kind: str, key: str) -> tuple[str, ...]:
        """An object's values ("" each for one not seen)."""
        got = self._values.get((kind, key))
        return got if got is not None else tuple("" for _ in self._of(kind))


def custom_labels_from(config: Mapping[str, Any] | None) -> CustomLabels | None:
    """The Configuration's custom labels, None when there are none or the gate is off; a
    ConfigError when the section is invalid (whatever the gate, as in Kueue)."""
    config = config or {}
    errors = custom_label_errors(config)
    if errors:
        raise ConfigError(aggregate(errors))
    gates = config.get("featureGates")
    if not gate_enabled(gates if isinstance(gates, Mapping) else None, GATE):
        return None
    labels = tuple(
        CustomLabel(
            str(e["name"]),
            str(e.get("sourceKind") or CLUSTER_QUEUE),
            str(e.get("sourceLabelKey") or ""),
            str(e.get("sourceAnnotationKey") or ""),
            tuple(str(v) for v in e.get("trackedValues") or ()),
        )
        for e in _entries(config)
    )
    return CustomLabels(labels) if labels else None
