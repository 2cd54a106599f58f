"""Kueue's feature gates that pykueue honours, with Kueue v0.19.2's defaults.

A Configuration's ``featureGates`` map overrides them, as Kueue's does; a gate not listed
here changes nothing in pykueue. The core reads its gates through :func:`gate_enabled`, the
job rules through ``manager.jobs.gates.FeatureGates``: both from this one table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

KUEUE_VERSION: Final = "v0.19.2"

# Gate -> its default in Kueue v0.19.2 (pkg/features/kube_features.go).
DEFAULTS: Final[Mapping[str, bool]] = {
    # Scheduling core
    "PartialAdmission": True,
    "AdmissionGatedBy": True,
    "ElasticJobsViaWorkloadSlices": True,
    "UnadmittedWorkloadsObservability": False,  # beta since v0.19, off
    "UnadmittedWorkloadsExplicitStatus": False,  # needs UnadmittedWorkloadsObservability
    "PrioritizePreemptorWorkloads": False,  # alpha since v0.19
    "DisableWaitForPodsReady": False,  # alpha since v0.19: turns waitForPodsReady off
    "QuotaCheckStrategy": True,  # beta since v0.19: resources.quotaCheckStrategy
    "FlavorFungibilityPreserveScanProgress": True,  # beta since v0.19: flavor scan progress kept
    "ReclaimablePods": True,  # beta since v0.15: status.reclaimablePods lowers a PodSet's count
    # Job rules and webhooks
    "TopologyAwareScheduling": True,
    "TASMultiLayerTopology": True,
    # TAS node failure (core.tas.node_health)
    "TASFailedNodeReplacement": True,
    "TASReplaceNodeOnPodTermination": True,  # beta since v0.14
    "TASReplaceNodeOnNodeTaints": True,  # beta since v0.17
    "TASReplaceNodeDueToNotReadyOverFixedTime": False,  # deprecated, off since v0.19
    "TASHandleOverlappingFlavors": True,  # beta since v0.18: TAS usage summed over flavors
    "TASBalancedPlacement": False,  # alpha since v0.15: balanced placement of preferred requests
    "WorkloadIdentifierAnnotations": True,
    "SkipAncestorCheckForDeletedWorkloads": True,
    "WorkloadPriorityClassDefaulting": False,  # alpha since v0.18
    "MultiKueue": True,
    "MultiKueueIncrementalDispatcherConfig": True,  # beta since v0.19: incremental stepSize
    "MultiKueueIncrementalDispatcherRespectConfigOrder": True,  # beta since v0.19
    "LWSImmutableGroupSize": True,
    "FinishOrphanedWorkloads": True,  # beta since v0.18
    "ValidateRayAndSparkJobUpdates": True,  # beta since v0.18
    # Servers
    "TLSOptions": True,  # beta since v0.16: the Configuration's tls section
    # Metrics
    "MetricForWorkloadCreationLatency": True,
    "MetricsForCohorts": True,
    "CustomMetricLabels": False,  # alpha since v0.17: metrics.customLabels
}


def gate_enabled(gates: Mapping[str, Any] | None, name: str) -> bool:
    """Whether ``name`` is on under a Configuration's ``featureGates`` (its overrides)."""
    value = (gates or {}).get(name)
    if isinstance(value, bool):
        return value
    return DEFAULTS.get(name, False)
