"""Which pods the extender enforces, and how to read their Workload's assignment.

A pod is managed when the queue manager admitted its PodSet with a topology assignment:
Kueue stamps the pod template with the ``kueue.x-k8s.io/podset`` label, the
``kueue.x-k8s.io/workload`` annotation and a TAS marker (the ``kueue.x-k8s.io/tas``
label, or one of the podset topology annotations). Everything else is passed through.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.api import keys
from pykueue.manager.core.tas.assignment import AssignmentError, TopologyAssignment, decode_v1beta2


@dataclass(frozen=True)
class PodSetRef:
    namespace: str
    workload: str
    podset: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.workload}/{self.podset}"


def managed_podset(pod: Mapping[str, Any]) -> PodSetRef | None:
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    podset = labels.get(keys.PODSET)
    workload = annotations.get(keys.WORKLOAD_ANNOTATION)
    if not podset or not workload:
        return None
    tas = labels.get(keys.TAS_LABEL) == "true" or any(k in annotations for k in keys.TOPOLOGY_ANNOTATIONS)
    if not tas:
        return None
    return PodSetRef(str(meta.get("namespace") or "default"), str(workload), str(podset))


@dataclass(frozen=True)
class PodSetPlacement:
    """What the Workload says about one PodSet, decoded once per request."""

    index: int  # position in status.admission.podSetAssignments
    assignment: TopologyAssignment
    unhealthy_nodes: tuple[str, ...]
    required_level: str | None


def podset_placement(workload: Mapping[str, Any], podset: str) -> PodSetPlacement | None:
    """The PodSet's decoded topologyAssignment, or None when it has none (not TAS-admitted).

    Raises AssignmentError for an assignment that does not decode.
    """
    status = workload.get("status") or {}
    admission = status.get("admission") or {}
    for i, psa in enumerate(admission.get("podSetAssignments") or []):
        if not isinstance(psa, Mapping) or psa.get("name") != podset:
            continue
        raw = psa.get("topologyAssignment")
        if not raw:
            return None
        if not isinstance(raw, Mapping):
            raise AssignmentError("topologyAssignment must be an object")
        assignment = decode_v1beta2(raw)
        unhealthy = tuple(
            str(u.get("name")) for u in status.get("unhealthyNodes") or [] if isinstance(u, Mapping)
        )
        return PodSetPlacement(i, assignment, unhealthy, _required_level(workload, podset))
    return None


def _required_level(workload: Mapping[str, Any], podset: str) -> str | None:
    for ps in (workload.get("spec") or {}).get("podSets") or []:
        if isinstance(ps, Mapping) and ps.get("name") == podset:
            required = (ps.get("topologyRequest") or {}).get("required")
            if required:
                return str(required)
            template_meta = (ps.get("template") or {}).get("metadata") or {}
            annotated = (template_meta.get("annotations") or {}).get(keys.PODSET_REQUIRED_TOPOLOGY)
            return str(annotated) if annotated else None
    return None
