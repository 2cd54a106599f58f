"""Kueue v0.19.2's defaults, each switchable as Kueue allows: the feature gates pykueue
honours (a Configuration's ``featureGates``) and ``waitForPodsReady``, whose defaulting
depends on the Configuration's apiVersion as in Kueue's decoding."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api.config import CONFIG_API_VERSION, CONFIG_API_VERSION_V1BETA1
from pykueue.manager.core.config import ConfigError, CoreConfig, config_from
from pykueue.manager.core.features import DEFAULTS, gate_enabled
from pykueue.manager.jobs.gates import FeatureGates

from .test_preemption import _core, _cq, _wl

V1BETA2 = {"apiVersion": CONFIG_API_VERSION, "kind": "Configuration"}
V1BETA1 = {"apiVersion": CONFIG_API_VERSION_V1BETA1, "kind": "Configuration"}


@pytest.mark.parametrize(("gate", "on"), [
    ("UnadmittedWorkloadsObservability", False),
    ("UnadmittedWorkloadsExplicitStatus", False),
    ("WorkloadPriorityClassDefaulting", False),
    ("PrioritizePreemptorWorkloads", False),
    ("DisableWaitForPodsReady", False),
    ("ElasticJobsViaWorkloadSlices", True),
    ("AdmissionGatedBy", True),
    ("PartialAdmission", True),
    ("TopologyAwareScheduling", True),
    ("MultiKueue", True),
    ("TASFailedNodeReplacement", True),
    ("TASReplaceNodeOnPodTermination", True),
    ("TASReplaceNodeOnNodeTaints", True),
    ("TASReplaceNodeDueToNotReadyOverFixedTime", False),
    ("TASHandleOverlappingFlavors", True),
    ("CustomMetricLabels", False),
    ("TASBalancedPlacement", False),
    ("MultiKueueIncrementalDispatcherConfig", True),
])
def test_gate_defaults_are_kueue_v0_19_2s(gate: str, on: bool) -> None:
    assert DEFAULTS[gate] is on
    assert gate_enabled(None, gate) is on and gate_enabled({}, gate) is on
    assert gate_enabled({gate: not on}, gate) is (not on)
    assert FeatureGates().enabled(gate) is on and FeatureGates({gate: not on}).enabled(gate) is (not on)


def test_the_core_follows_the_gates() -> None:
    default = config_from(V1BETA2)
    assert not default.tiered_reasons and not default.prioritize_preemptors
    assert default.workload_slices and default.admission_gated_by and default.partial_admission
    switched = config_from({**V1BETA2, "featureGates": {
        "UnadmittedWorkloadsObservability": True, "PrioritizePreemptorWorkloads": True,
        "ElasticJobsViaWorkloadSlices": False, "AdmissionGatedBy": False, "PartialAdmission": False}})
    assert switched.tiered_reasons and switched.prioritize_preemptors
    assert not (switched.workload_slices or switched.admission_gated_by or switched.partial_admission)


@pytest.mark.parametrize(("config", "timeout", "block"), [
    # v1beta2 (and no Configuration at all): on, the section only tunes it.
    (None, 1800.0, False),
    ({}, 1800.0, False),
    (V1BETA2, 1800.0, False),
    ({**V1BETA2, "waitForPodsReady": {}}, 1800.0, False),
    ({**V1BETA2, "waitForPodsReady": {"timeout": "0s"}}, 1800.0, False),  # zero is unset
    ({**V1BETA2, "waitForPodsReady": {"timeout": "2m", "blockAdmission": True}}, 120.0, True),
    # v1beta1: off unless enabled; then 5 minutes and blocking by default.
    ({**V1BETA1, "waitForPodsReady": {"enable": True}}, 300.0, True),
    ({**V1BETA1, "waitForPodsReady": {"enable": True, "timeout": "10m", "blockAdmission": False}},
     600.0, False),
])
def test_wait_for_pods_ready_on_as_kueue_defaults_it(config: dict[str, Any] | None, timeout: float,
                                                     block: bool) -> None:
    wfpr = config_from(config).wait_for_pods_ready
    assert wfpr is not None
    assert (wfpr.timeout, wfpr.block_admission) == (timeout, block)
    assert wfpr.requeuing.backoff_base_seconds == 60 and wfpr.requeuing.backoff_max_seconds == 3600


@pytest.mark.parametrize("config", [
    V1BETA1,
    {**V1BETA1, "waitForPodsReady": {"enable": False, "timeout": "5m"}},
    {**V1BETA1, "waitForPodsReady": {"timeout": "5m"}},
    {**V1BETA2, "featureGates": {"DisableWaitForPodsReady": True}},
    {**V1BETA2, "waitForPodsReady": {"timeout": "5m"}, "featureGates": {"DisableWaitForPodsReady": True}},
    {"waitForPodsReady": {"enable": False}},  # the v1beta1 spelling scenario files use
])
def test_wait_for_pods_ready_off(config: dict[str, Any]) -> None:
    assert config_from(config).wait_for_pods_ready is None


def _ring(prioritize: bool) -> list[tuple[str, str]]:
    """The preemption ring of test_preemption, with freed quota requeued at once."""
    core = _core(
        _cq("cq0", 3, {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"}),
        _cq("cq1", 1, {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                       "borrowWithinCohort": {"policy": "LowerPriority"}}),
        _cq("cq2", 0, {"withinClusterQueue": "Never", "reclaimWithinCohort": "LowerPriority",
                       "borrowWithinCohort": {"policy": "LowerPriority"}}),
        config=CoreConfig(prioritize_preemptors=prioritize),
    )
    for wl in (_wl("w0", "cq1", 4, 1), _wl("w1", "cq2", 4, 2), _wl("w2", "cq1", 1, 0)):
        core.apply(wl)
    return [(d.key, t) for d in core.run_until_idle(max_cycles=40) for t in d.targets][:6]


def test_prioritize_preemptor_workloads_puts_a_waiting_preemptor_first() -> None:
    # w0 preempted w2 in cq1 and waits; w1 (cq2, higher priority) competes for the same room.
    # Off (Kueue v0.19.2's default), the higher priority goes first and takes the room w2
    # freed; on, w0 goes first, as the gate's preemptor-first order says.
    w2_w1, w0_w2 = ("default/w2", "default/w1"), ("default/w0", "default/w2")
    w1_w0 = ("default/w1", "default/w0")
    assert _ring(prioritize=False) == [w2_w1, w0_w2] * 3
    assert _ring(prioritize=True) == [w2_w1, w0_w2, w1_w0] * 2


def test_balanced_placement_needs_topology_aware_scheduling() -> None:
    assert not config_from(V1BETA2).tas_balanced_placement
    assert config_from({**V1BETA2, "featureGates": {"TASBalancedPlacement": True}}).tas_balanced_placement
    gates = {"TASBalancedPlacement": True, "TopologyAwareScheduling": False}
    with pytest.raises(ConfigError, match="requires TopologyAwareScheduling to be enabled"):
        config_from({**V1BETA2, "featureGates": gates})
