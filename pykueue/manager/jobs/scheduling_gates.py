"""Which of Kueue's pod scheduling gates a job's writes lift: pure, for the runtime to time.

Kueue times each lifted gate from its Workload's admission (``kueue_pod_scheduling_gate_removal_seconds``,
labelled with the gate): ``kueue.x-k8s.io/admission`` when a pod of the pod integration starts,
``kueue.x-k8s.io/elastic-job`` when an elastic job's pods are let run up to the admitted slice,
``kueue.x-k8s.io/topology`` when the pods of a workload placed by topology-aware scheduling are
let go to their domains. Here the pod integration lifts the topology gate together with the
admission gate (the TAS scheduler places the pods); it counts for a workload placed by TAS only,
as Kueue's topology ungater sees no other, and a pod of any other workload loses it uncounted,
as in Kueue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import meta
from pykueue.manager.core.objects import ObjectError, parse_time

from .lifecycle import Action, Replace, condition_true

KUEUE_GATES = (keys.ADMISSION_GATE, keys.TOPOLOGY_GATE, keys.ELASTIC_JOB_GATE)


def _gates(pod: Mapping[str, Any]) -> set[str]:
    return {str(g.get("name")) for g in (pod.get("spec") or {}).get("schedulingGates") or ()
            if isinstance(g, Mapping)}


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    m = meta(obj)
    return str(m.get("namespace") or ""), str(m.get("name") or "")


def _in_group(pod: Mapping[str, Any]) -> bool:
    m = meta(pod)
    return bool((m.get("labels") or {}).get(keys.POD_GROUP_NAME)
                or (m.get("annotations") or {}).get(keys.POD_GROUP_NAME))


def admitted_since(workload: Mapping[str, Any]) -> float | None:
    """When the Workload was admitted (its Admitted condition's time), or None if it is not."""
    for cond in (workload.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == keys.WorkloadCondition.ADMITTED \
                and cond.get("status") == "True":
            try:
                return parse_time(cond.get("lastTransitionTime"))
            except ObjectError:
                return None
    return None


def placed_by_tas(workload: Mapping[str, Any]) -> bool:
    """Kueue's IsAdmittedByTAS: some pod set of the admission has a topology assignment."""
    admission = (workload.get("status") or {}).get("admission") or {}
    return any(isinstance(psa, Mapping) and psa.get("topologyAssignment")
               for psa in admission.get("podSetAssignments") or ())


def lifted_gates(before: Iterable[Mapping[str, Any]], actions: Iterable[Action],
                 workload: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """(gate, whether the pod is in a pod group) for each Kueue gate a written pod lost:
    its version in ``before`` (matched by namespace and name) had it, the written one has not.
    Only an admitted ``workload``'s gates count (Kueue times them from the admission)."""
    if not condition_true(workload, keys.WorkloadCondition.ADMITTED):
        return []
    old = {_key(p): p for p in before}
    tas = placed_by_tas(workload)
    out: list[tuple[str, bool]] = []
    for action in actions:
        if not isinstance(action, Replace) or action.obj.get("kind") != "Pod":
            continue
        was = old.get(_key(action.obj))
        if was is None:
            continue
        lifted = _gates(was) - _gates(action.obj)
        group = _in_group(action.obj)
        out.extend((gate, group) for gate in KUEUE_GATES
                   if gate in lifted and (gate != keys.TOPOLOGY_GATE or tas))
    return out
