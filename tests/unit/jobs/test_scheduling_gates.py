"""Which of Kueue's scheduling gates a job's writes lift, as its gate removal histogram counts them."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.api import keys
from pykueue.manager.jobs.lifecycle import Delete, Replace
from pykueue.manager.jobs.scheduling_gates import admitted_since, lifted_gates, placed_by_tas


def _pod(name: str, *gates: str, group: str | None = None) -> dict[str, Any]:
    annotations = {keys.POD_GROUP_NAME: group} if group else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "annotations": annotations},
            "spec": {"schedulingGates": [{"name": g} for g in gates]}}


def _without(pod: dict[str, Any], *gates: str) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    out["spec"]["schedulingGates"] = [g for g in out["spec"]["schedulingGates"] if g["name"] not in gates]
    return out


def _workload(admitted: bool = True, tas: bool = False) -> dict[str, Any]:
    psa: dict[str, Any] = {"name": "main", "count": 1}
    if tas:
        psa["topologyAssignment"] = {"levels": ["kubernetes.io/hostname"], "domains": []}
    return {"status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [psa]}, "conditions": [
        {"type": "Admitted", "status": "True" if admitted else "False",
         "lastTransitionTime": "2026-01-01T00:00:10Z"}]}}


def test_each_kueue_gate_a_written_pod_lost_counts_once() -> None:
    a = _pod("a", keys.ADMISSION_GATE, "example.com/other")
    b = _pod("b", keys.ELASTIC_JOB_GATE, group="g")
    actions = [Replace(_without(a, keys.ADMISSION_GATE, "example.com/other")),
               Replace(_without(b, keys.ELASTIC_JOB_GATE)), Delete(_pod("c", keys.ADMISSION_GATE))]
    assert lifted_gates([a, b], actions, _workload()) == [(keys.ADMISSION_GATE, False),
                                                          (keys.ELASTIC_JOB_GATE, True)]


def test_the_topology_gate_counts_only_for_a_workload_placed_by_tas() -> None:
    pod = _pod("p", keys.ADMISSION_GATE, keys.TOPOLOGY_GATE)
    written = [Replace(_without(pod, keys.ADMISSION_GATE, keys.TOPOLOGY_GATE))]
    assert lifted_gates([pod], written, _workload()) == [(keys.ADMISSION_GATE, False)]
    assert lifted_gates([pod], written, _workload(tas=True)) == [(keys.ADMISSION_GATE, False),
                                                                 (keys.TOPOLOGY_GATE, False)]
    assert placed_by_tas(_workload(tas=True)) and not placed_by_tas(_workload())


def test_nothing_counts_without_an_admission_an_earlier_version_or_a_lifted_gate() -> None:
    pod = _pod("p", keys.ADMISSION_GATE)
    written = [Replace(_without(pod, keys.ADMISSION_GATE))]
    assert lifted_gates([pod], written, _workload(admitted=False)) == []
    assert lifted_gates([], written, _workload()) == []  # not one of the pods it started from
    assert lifted_gates([pod], [Replace(copy.deepcopy(pod))], _workload()) == []
    job = {"kind": "Job", "metadata": {"name": "p", "namespace": "ns"}, "spec": {}}
    assert lifted_gates([job], [Replace(job)], _workload()) == []


def test_the_admission_time_is_the_admitted_conditions() -> None:
    assert admitted_since(_workload()) == 1767225610.0
    assert admitted_since(_workload(admitted=False)) is None
