"""When a TAS workload counts as having lost a node: Kueue v0.19.2's node controller rules.

Pure functions over the facts the runtime feeds in: the Node (or None once it is gone),
the time, whether the workload still has progressing pods on the node (bound there, not
terminated, not being deleted) and the tolerations of its PodSets placed there. The gates
select the rules (defaults as Kueue v0.19.2):

``TASFailedNodeReplacement`` (on)
    without it no node is ever marked; a deleted node still frees its capacity.
``TASReplaceNodeDueToNotReadyOverFixedTime`` (off, deprecated)
    a node NotReady for ``NODE_FAILURE_DELAY`` is lost to every workload on it, whatever
    its pods do (the workload's own verdict below may then clear the mark again).
``TASReplaceNodeOnPodTermination`` (on)
    a NotReady node, or one with a taint the workload does not tolerate, is lost to a
    workload once none of its pods there is progressing; without it, a NotReady node is
    lost after ``NODE_FAILURE_DELAY`` and an untolerated taint at once.
``TASReplaceNodeOnNodeTaints`` (on)
    a Ready node with a NoSchedule or NoExecute taint that a PodSet placed there does not
    tolerate is lost to that workload; a taint tolerated only for ``tolerationSeconds`` is
    lost once the pods are gone.

A node that is gone, or has no Ready condition, is lost to every workload at once.
:data:`Health.HEALTHY` also clears an earlier mark (the node came back); :data:`Health.WAIT`
leaves the workload as it is.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pykueue.manager.core.features import gate_enabled

from . import nodes as nodepred
from .replacement import NODE_FAILURE_DELAY

FAILED_NODE_REPLACEMENT = "TASFailedNodeReplacement"
FIXED_TIME = "TASReplaceNodeDueToNotReadyOverFixedTime"
POD_TERMINATION = "TASReplaceNodeOnPodTermination"
NODE_TAINTS = "TASReplaceNodeOnNodeTaints"

Toleration = Mapping[str, Any]


class Health(enum.Enum):
    HEALTHY = "Healthy"  # keep the node; clear it from unhealthyNodes
    FAILED = "Failed"  # record the node as unhealthy (replace it, or evict)
    WAIT = "Wait"  # nothing to decide yet


@dataclass(frozen=True)
class NodeFailureRules:
    """Which of Kueue's node failure rules apply (see the module docstring)."""

    replacement: bool = True
    fixed_time: bool = False
    pod_termination: bool = True
    node_taints: bool = True
    delay: timedelta = NODE_FAILURE_DELAY

    @classmethod
    def from_gates(cls, gates: Mapping[str, Any] | None) -> NodeFailureRules:
        return cls(
            replacement=gate_enabled(gates, FAILED_NODE_REPLACEMENT),
            fixed_time=gate_enabled(gates, FIXED_TIME),
            pod_termination=gate_enabled(gates, POD_TERMINATION),
            node_taints=gate_enabled(gates, NODE_TAINTS),
        )


def _not_ready_for(node: Mapping[str, Any], now: datetime) -> timedelta | None:
    """How long the node has been NotReady; None when it is Ready (or has no condition)."""
    cond = nodepred.ready_condition(node)
    if cond is None or cond.get("status") == "True":
        return None
    since = nodepred.not_ready_since(node)
    return timedelta.max if since is None else now - since


def lost_outright(node: Mapping[str, Any] | None, now: datetime, rules: NodeFailureRules) -> bool:
    """The node is lost to every workload placed on it, whatever their pods do: it is gone,
    has no Ready condition, or (fixed-time rule) has been NotReady for the delay."""
    if not rules.replacement:
        return False
    if node is None or nodepred.ready_condition(node) is None:
        return True
    down = _not_ready_for(node, now)
    return rules.fixed_time and down is not None and down >= rules.delay


def recheck_after(node: Mapping[str, Any] | None, now: datetime, rules: NodeFailureRules) -> float | None:
    """Seconds until the NotReady delay expires, when a verdict depends on it; else None."""
    if node is None or not rules.replacement:
        return None
    down = _not_ready_for(node, now)
    if down is None or down >= rules.delay:
        return None
    if rules.fixed_time or not rules.pod_termination:
        return (rules.delay - down).total_seconds()
    return None


def has_scheduling_taints(node: Mapping[str, Any]) -> bool:
    taints = (node.get("spec") or {}).get("taints") or ()
    return any(t.get("effect") in nodepred.SCHEDULING_EFFECTS for t in taints)


class TaintTolerance(enum.Enum):
    UNTOLERATED = "Untolerated"
    TEMPORARY = "TemporarilyTolerated"  # only by tolerations with tolerationSeconds
    PERMANENT = "PermanentlyTolerated"


def taint_tolerance(taint: Mapping[str, Any], podsets: Sequence[Sequence[Toleration]]) -> TaintTolerance:
    """How the PodSets placed on a node (each as its tolerations) take one of its taints:
    untolerated when any PodSet does not tolerate it; temporary when one does only through
    a toleration with ``tolerationSeconds``."""
    permanent = True
    for tolerations in podsets:
        if not any(nodepred.toleration_matches(t, taint) for t in tolerations):
            return TaintTolerance.UNTOLERATED
        if not any(nodepred.toleration_matches(t, taint) for t in tolerations
                   if t.get("tolerationSeconds") is None):
            permanent = False
    return TaintTolerance.PERMANENT if permanent else TaintTolerance.TEMPORARY


def classify_taints(
    node: Mapping[str, Any], podsets: Sequence[Sequence[Toleration]]
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """(untolerated, temporarily tolerated) NoSchedule/NoExecute taints of the node."""
    untolerated: list[Mapping[str, Any]] = []
    temporary: list[Mapping[str, Any]] = []
    for taint in (node.get("spec") or {}).get("taints") or ():
        if taint.get("effect") not in nodepred.SCHEDULING_EFFECTS:
            continue
        verdict = taint_tolerance(taint, podsets)
        if verdict is TaintTolerance.UNTOLERATED:
            untolerated.append(taint)
        elif verdict is TaintTolerance.TEMPORARY:
            temporary.append(taint)
    return untolerated, temporary


def workload_health(
    node: Mapping[str, Any] | None,
    now: datetime,
    rules: NodeFailureRules,
    *,
    assigned: bool = True,
    progressing_pods: bool,
    podset_tolerations: Sequence[Sequence[Toleration]] = (),
) -> Health:
    """The node's verdict for one workload.

    ``assigned``: the workload's topology assignment names the node; ``progressing_pods``:
    one of its pods is bound there, not terminated and not being deleted;
    ``podset_tolerations``: the effective tolerations of each of its PodSets placed there.
    """
    if not rules.replacement:
        return Health.WAIT
    if not assigned:
        return Health.HEALTHY
    if node is None or nodepred.ready_condition(node) is None:
        return Health.FAILED
    down = _not_ready_for(node, now)
    if down is not None:
        if not rules.pod_termination:
            return Health.FAILED if down >= rules.delay else Health.WAIT
        return Health.HEALTHY if progressing_pods else Health.FAILED
    if not rules.node_taints or not has_scheduling_taints(node):
        return Health.HEALTHY
    untolerated, temporary = classify_taints(node, podset_tolerations)
    if untolerated:
        if not rules.pod_termination:
            return Health.FAILED
        return Health.HEALTHY if progressing_pods else Health.FAILED
    if temporary:
        return Health.HEALTHY if progressing_pods else Health.FAILED
    return Health.HEALTHY
