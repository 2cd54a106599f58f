"""When a node is lost to a TAS workload, under Kueue v0.19.2's node failure gates.

Cases ported from Kueue v0.19.2 ``pkg/controller/tas/node_controller_test.go``
(``TestNodeFailureReconciler`` and ``TestGetWorkloadStatus``): each test names the case it
follows. There one reconcile of a node gives a workload's ``unhealthyNodes``; here the
same facts go through the pure rules: ``lost_outright`` (the node is gone, has no Ready
condition, or the fixed-time rule fired) and then ``workload_health`` for the workload
(FAILED marks the node, HEALTHY clears the mark, WAIT leaves it).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pykueue.manager.core.config import config_from
from pykueue.manager.core.features import DEFAULTS
from pykueue.manager.core.tas.node_health import (
    Health,
    NodeFailureRules,
    TaintTolerance,
    lost_outright,
    recheck_after,
    taint_tolerance,
    workload_health,
)
from pykueue.manager.core.tas.replacement import NODE_FAILURE_DELAY

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
EARLIER = NOW - NODE_FAILURE_DELAY  # Kueue's tests' "earlierTime": the delay has just passed

DEFAULT = NodeFailureRules()
FIXED_TIME_ONLY = NodeFailureRules(pod_termination=False, fixed_time=True)  # v0.12-like
BOTH_OFF = NodeFailureRules(pod_termination=False, fixed_time=False)
FIXED_AND_PODS = NodeFailureRules(fixed_time=True)

NOEXEC_FOO = {"key": "foo", "effect": "NoExecute"}
NOSCHED_FOO = {"key": "foo", "effect": "NoSchedule"}


def node(ready: str | None = "True", since: datetime = NOW,
         taints: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    conditions = [] if ready is None else [
        {"type": "Ready", "status": ready, "lastTransitionTime": since.strftime("%Y-%m-%dT%H:%M:%SZ")}]
    return {"kind": "Node", "metadata": {"name": "test-node-name"},
            "spec": {"taints": list(taints)}, "status": {"conditions": conditions}}


def verdict(n: dict[str, Any] | None, rules: NodeFailureRules, *, pods: bool,
            tolerations: Sequence[Sequence[dict[str, Any]]] = ((),), assigned: bool = True) -> Health:
    """A reconcile's outcome for one workload: FAILED when the node ends up in its
    unhealthyNodes, HEALTHY when a mark would be cleared, WAIT when nothing changes."""
    outright = lost_outright(n, NOW, rules)
    health = workload_health(n, NOW, rules, assigned=assigned, progressing_pods=pods,
                             podset_tolerations=tolerations)
    if outright and health is Health.WAIT:
        return Health.FAILED
    return health


def test_gate_defaults_are_kueue_v0_19_2() -> None:
    assert DEFAULTS["TASFailedNodeReplacement"] is True
    assert DEFAULTS["TASReplaceNodeOnPodTermination"] is True
    assert DEFAULTS["TASReplaceNodeOnNodeTaints"] is True
    assert DEFAULTS["TASReplaceNodeDueToNotReadyOverFixedTime"] is False
    assert NodeFailureRules.from_gates(None) == DEFAULT
    assert NodeFailureRules.from_gates({"TASReplaceNodeOnPodTermination": False}).pod_termination is False


# -- TestNodeFailureReconciler ----------------------------------------------------------------

def test_node_found_and_healthy_not_marked() -> None:
    # "Node Found and Healthy - not marked as unavailable"
    assert verdict(node("True"), DEFAULT, pods=True) is Health.HEALTHY


def test_node_becomes_healthy_mark_removed() -> None:
    # "Node becomes healthy, it is removed from the list of nodes to replace"
    assert workload_health(node("True"), NOW, DEFAULT, progressing_pods=True) is Health.HEALTHY


def test_not_ready_delay_not_passed_requeued() -> None:
    # "Node Found and Unhealthy (NotReady), delay not passed - not marked as unavailable"
    assert verdict(node("False", NOW), FIXED_TIME_ONLY, pods=True) is Health.WAIT
    assert recheck_after(node("False", NOW), NOW, FIXED_TIME_ONLY) == NODE_FAILURE_DELAY.total_seconds()


def test_not_ready_delay_passed_marked() -> None:
    # "Node Found and Unhealthy (NotReady), delay passed - marked as unavailable"
    assert verdict(node("False", EARLIER), FIXED_TIME_ONLY, pods=True) is Health.FAILED
    assert recheck_after(node("False", EARLIER), NOW, FIXED_TIME_ONLY) is None


def test_not_ready_delay_passed_pod_running_fixed_time_off_not_marked() -> None:
    # "Node NotReady, delay passed, pod running, fixed-time marking disabled - not marked"
    assert verdict(node("False", EARLIER), DEFAULT, pods=True) is Health.HEALTHY
    assert recheck_after(node("False", NOW), NOW, DEFAULT) is None  # pods decide, not time


def test_not_ready_delay_passed_pod_running_fixed_time_on_marked() -> None:
    # "Node NotReady, delay passed, pod running, fixed-time marking enabled - marked"
    n = node("False", EARLIER)
    assert lost_outright(n, NOW, FIXED_AND_PODS)
    # Kueue marks it for every workload first; the workload's own check then finds its pod
    # running and would clear it again in the same reconcile (handleHealthyNode).
    assert workload_health(n, NOW, FIXED_AND_PODS, progressing_pods=True) is Health.HEALTHY


def test_not_ready_both_gates_off_marked_at_fixed_time() -> None:
    # "Node NotReady, delay passed, pod running, both gates disabled - marked at the fixed time"
    assert verdict(node("False", EARLIER), BOTH_OFF, pods=True) is Health.FAILED
    assert verdict(node("False", NOW), BOTH_OFF, pods=True) is Health.WAIT
    assert recheck_after(node("False", NOW), NOW, BOTH_OFF) == NODE_FAILURE_DELAY.total_seconds()


def test_not_ready_pod_terminating_both_gates_off_marked() -> None:
    # "Node NotReady, pod terminating, both gates disabled - marked"
    assert verdict(node("False", EARLIER), BOTH_OFF, pods=False) is Health.FAILED


def test_not_ready_pod_terminating_marked() -> None:
    # "Node NotReady, pod terminating, marked as unavailable"
    assert verdict(node("False", EARLIER), DEFAULT, pods=False) is Health.FAILED


def test_not_ready_pod_failed_marked_at_once() -> None:
    # "Node NotReady, pod failed, marked as unavailable" (NotReady just now)
    assert verdict(node("False", NOW), DEFAULT, pods=False) is Health.FAILED


def test_not_ready_pod_failed_pod_termination_off_requeued() -> None:
    # "Node NotReady, pod failed, ReplaceNodeOnPodTermination feature gate off, requeued"
    assert verdict(node("False", NOW), FIXED_TIME_ONLY, pods=False) is Health.WAIT


@pytest.mark.parametrize("case", [
    "Node NotReady, pod running, not marked as unavailable, requeued",
    "Node NotReady, 2 succeeded pods, 1 running pod -> waits",
    "Node NotReady, 2 succeeded pods, 1 pending pod, 1 failed pod -> waits",
])
def test_not_ready_with_a_progressing_pod_waits(case: str) -> None:
    # One pod neither terminated nor being deleted keeps the node.
    assert verdict(node("False", NOW), DEFAULT, pods=True) is Health.HEALTHY


def test_node_deleted_marked() -> None:
    # "Node Deleted - marked as unavailable"
    for rules in (DEFAULT, FIXED_TIME_ONLY, BOTH_OFF):
        assert verdict(None, rules, pods=True) is Health.FAILED


def test_node_without_ready_condition_marked() -> None:
    # the Reconcile branch "NodeReady condition is missing. Marking as failed immediately"
    assert lost_outright(node(None), NOW, DEFAULT)


@pytest.mark.parametrize("case", [
    "Node Deleted, late pod exists for reassigned workload -> UnhealthyNodes not polluted",
    "NodeReady missing, late pod exists for reassigned workload -> UnhealthyNodes not polluted",
    "Node NotReady, workload missing TAS assignment but has late pod -> Workload marked Healthy, pod patched",
])
def test_node_not_in_the_assignment_is_healthy(case: str) -> None:
    # The workload was reassigned away: its verdict for this node is healthy. (Kueue only
    # reaches such a workload through a late pod; the runtime only asks about workloads
    # whose assignment names the node.)
    assert workload_health(None, NOW, DEFAULT, assigned=False, progressing_pods=False) is Health.HEALTHY


def test_no_replacement_when_the_gate_is_off() -> None:
    # TASFailedNodeReplacement off: the controller's predicates never reconcile.
    off = NodeFailureRules(replacement=False)
    assert not lost_outright(None, NOW, off)
    assert workload_health(node("False", EARLIER), NOW, off, progressing_pods=False) is Health.WAIT


def test_untolerated_noexecute_taint_pod_termination_off_marked() -> None:
    # "Node has untolerated NoExecute taint -> Unhealthy"
    # "Node has untolerated NoExecute taint, ReplaceNodeOnPodTermination off -> Unhealthy (Immediate)"
    assert verdict(node(taints=[NOEXEC_FOO]), FIXED_TIME_ONLY, pods=True) is Health.FAILED


TEMPORARY = [{"key": "foo", "effect": "NoExecute", "operator": "Exists", "tolerationSeconds": 300}]


def test_noexecute_with_toleration_seconds_waits_for_eviction() -> None:
    # "Node has NoExecute taint with TolerationSeconds -> Healthy (wait for eviction)"
    # "... ReplaceNodeOnPodTermination off -> Healthy (wait for eviction)"
    for rules in (DEFAULT, FIXED_TIME_ONLY):
        assert verdict(node(taints=[NOEXEC_FOO]), rules, pods=True, tolerations=[TEMPORARY]) is Health.HEALTHY


def test_noexecute_with_toleration_seconds_pod_terminating_marked() -> None:
    # "Node has NoExecute taint with TolerationSeconds, pod terminating -> Unhealthy"
    # "... ReplaceNodeOnPodTermination off, pod terminating -> Unhealthy"
    for rules in (DEFAULT, FIXED_TIME_ONLY):
        assert verdict(node(taints=[NOEXEC_FOO]), rules, pods=False, tolerations=[TEMPORARY]) is Health.FAILED


def test_untolerated_noexecute_pod_termination_on() -> None:
    # "... ReplaceNodeOnPodTermination on, pod running -> Healthy (wait)"
    assert verdict(node(taints=[NOEXEC_FOO]), DEFAULT, pods=True) is Health.HEALTHY
    # "... ReplaceNodeOnPodTermination on, pod terminating -> Unhealthy"
    # "... ReplaceNodeOnPodTermination on, no pods -> Unhealthy (immediate)"
    # "Node has NoExecute taint and pods missing -> Unhealthy (immediate)"
    assert verdict(node(taints=[NOEXEC_FOO]), DEFAULT, pods=False) is Health.FAILED


def test_noschedule_taint() -> None:
    # "Node has NoSchedule taint, ReplaceNodeOnPodTermination on, pod running -> Healthy"
    assert verdict(node(taints=[NOSCHED_FOO]), DEFAULT, pods=True) is Health.HEALTHY
    # "Node has NoSchedule taint, ReplaceNodeOnPodTermination off, pod running -> Unhealthy"
    assert verdict(node(taints=[NOSCHED_FOO]), FIXED_TIME_ONLY, pods=True) is Health.FAILED
    # "Node has untolerated NoSchedule taint, workload has no pods at all -> Unhealthy"
    # "Node has untolerated NoSchedule taint, pod is Gated -> Healthy" (whose expectation is
    # in fact the node marked: a gated pod is not bound, so not progressing)
    assert verdict(node(taints=[NOSCHED_FOO]), DEFAULT, pods=False) is Health.FAILED


@pytest.mark.parametrize("case", [
    "Node has NoSchedule taint, tolerated -> Healthy",
    "Node has NoSchedule taint tolerated by assigned ResourceFlavor -> Healthy",
    "Assigned node gets NoSchedule taint tolerated by AdmissionCheck PodSetUpdate -> Healthy",
])
def test_noschedule_taint_tolerated(case: str) -> None:
    # The tolerations are the PodSet's, its flavor's and its checks' podSetUpdates' together.
    tolerated = [{"key": "foo", "effect": "NoSchedule", "operator": "Exists"}]
    assert verdict(node(taints=[NOSCHED_FOO]), DEFAULT, pods=False, tolerations=[tolerated]) is Health.HEALTHY


def test_taints_gate_off_ignores_taints() -> None:
    # TestGetWorkloadStatus "Node Ready, TASReplaceNodeOnNodeTaints disabled -> Healthy"
    off = NodeFailureRules(node_taints=False)
    assert verdict(node(taints=[NOEXEC_FOO]), off, pods=False) is Health.HEALTHY


def test_prefer_noschedule_taint_is_not_a_failure() -> None:
    # classifyTaints reads only NoSchedule and NoExecute taints.
    soft = {"key": "foo", "effect": "PreferNoSchedule"}
    assert verdict(node(taints=[soft]), DEFAULT, pods=False) is Health.HEALTHY


# -- TestGetWorkloadStatus --------------------------------------------------------------------

def test_get_workload_status_not_ready() -> None:
    # "Node NotReady, ReplaceNodeOnPodTermination disabled -> Unhealthy immediately" (the
    # reconcile only asks once the delay has passed)
    down = node("False", EARLIER)
    assert workload_health(down, NOW, FIXED_TIME_ONLY, progressing_pods=True) is Health.FAILED
    # "Node NotReady, ReplaceNodeOnPodTermination enabled -> Healthy (Waiting for pod termination)"
    assert workload_health(node("False", NOW), NOW, DEFAULT, progressing_pods=True) is Health.HEALTHY


# -- checkTaintTolerations --------------------------------------------------------------------

def test_taint_tolerance_needs_every_podset_on_the_node() -> None:
    exists = {"key": "foo", "operator": "Exists"}
    temporary = {**exists, "tolerationSeconds": 60}
    assert taint_tolerance(NOEXEC_FOO, [[exists], [exists]]) is TaintTolerance.PERMANENT
    assert taint_tolerance(NOEXEC_FOO, [[exists], []]) is TaintTolerance.UNTOLERATED
    assert taint_tolerance(NOEXEC_FOO, [[exists], [temporary]]) is TaintTolerance.TEMPORARY
    assert taint_tolerance(NOEXEC_FOO, [[temporary, exists]]) is TaintTolerance.PERMANENT
    assert taint_tolerance(NOEXEC_FOO, [[{"operator": "Exists"}]]) is TaintTolerance.PERMANENT
    wrong_effect = {"key": "foo", "operator": "Exists", "effect": "NoSchedule"}
    assert taint_tolerance(NOEXEC_FOO, [[wrong_effect]]) is TaintTolerance.UNTOLERATED


def test_recheck_only_when_time_matters() -> None:
    half = node("False", NOW - timedelta(seconds=10))
    assert recheck_after(half, NOW, FIXED_AND_PODS) == 20.0
    assert recheck_after(half, NOW, DEFAULT) is None
    assert recheck_after(node("True"), NOW, FIXED_TIME_ONLY) is None
    assert recheck_after(None, NOW, FIXED_TIME_ONLY) is None


def test_configuration_feature_gates_reach_the_core() -> None:
    config = config_from({"featureGates": {"TASReplaceNodeOnNodeTaints": False,
                                           "TASHandleOverlappingFlavors": False}})
    assert config.tas_node_failure == NodeFailureRules(node_taints=False)
    assert config.tas_overlapping_flavors is False
    assert config_from({}).tas_node_failure == DEFAULT
    assert config_from({}).tas_overlapping_flavors is True
