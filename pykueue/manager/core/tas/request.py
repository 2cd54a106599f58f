"""What one PodSet asks of the topology: count, per-pod requests and the TAS constraint.

A request is read either from the podset's pod-template annotations (what users write)
or from ``spec.podSets[].topologyRequest`` (what Kueue persists on a Workload); both give
the same :class:`TopologyRequest`. Precedence follows Kueue: required > preferred >
unconstrained; slice constraints are read independently of the main constraint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pykueue.api import keys

from .resources import PODS, Resources, pod_spec_requests


@dataclass(frozen=True)
class SliceLayer:
    """One layer of slice constraints: every ``size`` pods share one domain of ``level``."""

    level: str
    size: int


@dataclass(frozen=True)
class TopologyRequest:
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slice_layers: tuple[SliceLayer, ...] = ()
    slice_level_without_size: str | None = None
    group_name: str | None = None

    @property
    def slice_only(self) -> bool:
        return (
            self.required is None
            and self.preferred is None
            and bool(self.slice_layers or self.slice_level_without_size)
        )

    @property
    def is_tas(self) -> bool:
        return bool(
            self.required
            or self.preferred
            or self.unconstrained
            or self.slice_layers
            or self.slice_level_without_size
        )


def _parse_bool(value: str) -> bool:
    # strconv.ParseBool spellings; anything else counts as false.
    return value in ("1", "t", "T", "TRUE", "true", "True")


def topology_request_from_annotations(annotations: Mapping[str, str]) -> TopologyRequest:
    required = annotations.get(keys.PODSET_REQUIRED_TOPOLOGY) or None
    preferred = None if required else annotations.get(keys.PODSET_PREFERRED_TOPOLOGY) or None
    unconstrained = False
    if not required and not preferred:
        unconstrained = _parse_bool(annotations.get(keys.PODSET_UNCONSTRAINED_TOPOLOGY, ""))
    layers: tuple[SliceLayer, ...] = ()
    missing_size: str | None = None
    raw_layers = annotations.get(keys.PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS)
    if raw_layers:
        parsed = json.loads(raw_layers)
        layers = tuple(SliceLayer(str(item["topology"]), int(item["size"])) for item in parsed)
    elif annotations.get(keys.PODSET_SLICE_REQUIRED_TOPOLOGY):
        level = annotations[keys.PODSET_SLICE_REQUIRED_TOPOLOGY]
        size = annotations.get(keys.PODSET_SLICE_SIZE)
        if size:
            layers = (SliceLayer(level, int(size)),)
        else:
            missing_size = level
    return TopologyRequest(
        required=required,
        preferred=preferred,
        unconstrained=unconstrained,
        slice_layers=layers,
        slice_level_without_size=missing_size,
        group_name=annotations.get(keys.PODSET_GROUP_NAME) or None,
    )


def topology_request_from_field(raw: Mapping[str, Any]) -> TopologyRequest:
    """``spec.podSets[].topologyRequest`` as persisted on a v1beta2 Workload."""
    layers: tuple[SliceLayer, ...] = ()
    missing_size: str | None = None
    constraints = raw.get("podsetSliceRequiredTopologyConstraints") or []
    if constraints:
        layers = tuple(SliceLayer(str(c["topology"]), int(c["size"])) for c in constraints)
    elif raw.get("podSetSliceRequiredTopology"):
        if raw.get("podSetSliceSize"):
            layers = (SliceLayer(str(raw["podSetSliceRequiredTopology"]), int(raw["podSetSliceSize"])),)
        else:
            missing_size = str(raw["podSetSliceRequiredTopology"])
    return TopologyRequest(
        required=raw.get("required") or None,
        preferred=None if raw.get("required") else raw.get("preferred") or None,
        unconstrained=bool(raw.get("unconstrained")) and not raw.get("required") and not raw.get("preferred"),
        slice_layers=layers,
        slice_level_without_size=missing_size,
        group_name=raw.get("podSetGroupName") or None,
    )


@dataclass(frozen=True)
class PodSetRequest:
    """Everything placement needs about one PodSet.

    ``per_pod`` holds the template's effective requests (not quota-adjusted) without the
    implicit ``pods: 1``, which placement adds itself. ``implied`` marks a PodSet without
    TAS annotations in a TAS-only ClusterQueue (treated as unconstrained at the lowest level).
    """

    name: str
    count: int
    per_pod: Resources
    topology: TopologyRequest
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: Sequence[Mapping[str, Any]] = ()
    affinity: Mapping[str, Any] | None = None
    implied: bool = False

    @classmethod
    def from_podset(
        cls,
        podset: Mapping[str, Any],
        *,
        implied: bool = False,
        count: int | None = None,
        extra_node_selector: Mapping[str, str] | None = None,
        extra_tolerations: Sequence[Mapping[str, Any]] = (),
    ) -> PodSetRequest:
        """Build from a Workload ``spec.podSets[]`` item.

        ``extra_node_selector``/``extra_tolerations`` carry admission-check podSetUpdates
        (e.g. a ProvisioningRequest's node selector for the second pass).
        """
        template = podset.get("template") or {}
        meta = template.get("metadata") or {}
        spec = template.get("spec") or {}
        raw_request = podset.get("topologyRequest")
        topology = (
            topology_request_from_field(raw_request)
            if raw_request
            else topology_request_from_annotations(meta.get("annotations") or {})
        )
        selector = dict(spec.get("nodeSelector") or {})
        selector.update(extra_node_selector or {})
        per_pod = pod_spec_requests(spec)
        per_pod.pop(PODS, None)
        return cls(
            name=str(podset.get("name", "main")),
            count=int(podset.get("count", 1) if count is None else count),
            per_pod=per_pod,
            topology=topology,
            node_selector=selector,
            tolerations=tuple(spec.get("tolerations") or ()) + tuple(extra_tolerations),
            affinity=spec.get("affinity"),
            implied=implied and not topology.is_tas,
        )
