"""Kueue's feature gates as the job rules see them, at Kueue's HEAD defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULT_GATES: Mapping[str, bool] = {
    "TopologyAwareScheduling": True,
    "TASMultiLayerTopology": True,
    "ElasticJobsViaWorkloadSlices": True,
    "AdmissionGatedBy": True,
    "WorkloadIdentifierAnnotations": True,
    "SkipAncestorCheckForDeletedWorkloads": True,
    "WorkloadPriorityClassDefaulting": True,
    "MultiKueue": True,
    "LWSImmutableGroupSize": True,
    "PartialAdmission": True,
    "MetricForWorkloadCreationLatency": True,
}


@dataclass(frozen=True)
class FeatureGates:
    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        return bool(self.overrides.get(name, DEFAULT_GATES.get(name, False)))
