"""Elastic jobs as Kueue runs them through workload slices (ElasticJobsViaWorkloadSlices).

An elastic job (annotation ``kueue.x-k8s.io/elastic-job: "true"``) is not suspended to be
resized. Its Workloads are *slices*, named per job generation:

* the first slice asks for the job's pods as usual;
* a scale-up while a slice holds quota makes a new slice for the new total, annotated
  ``workload-slice-replacement-for: <ns>/<old>``; the scheduler counts only the increase
  (the core judges it with the old slice's quota as its own) and, once it admits the new
  slice, finishes the old one (``WorkloadSliceReplaced``);
* a scale-down lowers the counts of the slice in place: its quota shrinks at once;
* a slice without quota simply follows the job's counts.

Pods are created with the ``kueue.x-k8s.io/elastic-job`` scheduling gate (the job webhook
puts it on the template) and ungated up to the admitted slice's count, so pods of a
scale-up wait for their slice's admission while the first ones keep running.

Pure: :func:`plan_slices` and :func:`pods_to_ungate` decide from the objects they are
given; the job reconciler reads the informers and performs the writes.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON, meta
from pykueue.manager.jobs.lifecycle import pod_live

REPLACED_MESSAGE = "Replaced to accommodate a new workload slice"


def is_elastic(obj: Mapping[str, Any]) -> bool:
    return (meta(obj).get("annotations") or {}).get(keys.ELASTIC_JOB) == "true"


def is_replacement_slice(wl: Mapping[str, Any]) -> bool:
    return bool((meta(wl).get("annotations") or {}).get(keys.WORKLOAD_SLICE_REPLACEMENT_FOR))


def slice_annotations(name: str) -> dict[str, str]:
    """The annotations of a job's first slice (it names its own chain)."""
    return {keys.ELASTIC_JOB: "true", keys.WORKLOAD_SLICE_NAME: name}


def _key(wl: Mapping[str, Any]) -> str:
    m = meta(wl)
    return f"{m.get('namespace')}/{m.get('name')}"


def _counts(wl: Mapping[str, Any]) -> dict[str, int]:
    podsets = (wl.get("spec") or {}).get("podSets") or ()
    return {str(ps.get("name")): int(ps.get("count", 1)) for ps in podsets}


def holds_quota(wl: Mapping[str, Any]) -> bool:
    status = wl.get("status") or {}
    return bool(status.get("admission")) and any(
        c.get("type") == keys.WorkloadCondition.QUOTA_RESERVED and c.get("status") == "True"
        for c in status.get("conditions") or ())


def _with_counts(wl: Mapping[str, Any], counts: Mapping[str, int]) -> JSON:
    out = copy.deepcopy(dict(wl))
    for ps in out["spec"]["podSets"]:
        ps["count"] = counts.get(str(ps.get("name")), ps.get("count", 1))
    return out


@dataclass
class SlicePlan:
    """What to write for an elastic job's slices, and which slice it runs under."""

    current: str  # name of the slice the job runs under now
    create: JSON | None = None
    update: list[JSON] = field(default_factory=list)
    # Slices left behind (older ones that hold no quota while a newer one follows the job).
    finish: list[Mapping[str, Any]] = field(default_factory=list)


def plan_slices(desired: JSON, existing: Iterable[Mapping[str, Any]]) -> SlicePlan:
    """``desired``: the slice the job would get now (named for its generation); ``existing``:
    the job's slices that have not finished."""
    slices = sorted(existing, key=lambda w: (str(meta(w).get("creationTimestamp") or ""),
                                             str(meta(w).get("name"))))
    want = _counts(desired)
    if not slices:
        return SlicePlan(str(meta(desired)["name"]), create=desired)
    holders = [w for w in slices if holds_quota(w)]
    head = holders[-1] if holders else None
    plan = SlicePlan(str(meta(head or slices[-1])["name"]))
    if head is None:
        # Nothing holds quota: the newest slice follows the job, older ones are done.
        newest = slices[-1]
        plan.finish = list(slices[:-1])
        if _counts(newest) != want:
            plan.update.append(_with_counts(newest, want))
        return plan
    pending = [w for w in slices if w is not head and not holds_quota(w)
               and (meta(w).get("annotations") or {}).get(keys.WORKLOAD_SLICE_REPLACEMENT_FOR) == _key(head)]
    plan.finish = [w for w in slices if w is not head and w not in pending[-1:] and not holds_quota(w)]
    have = _counts(head)
    if pending:
        if _counts(pending[-1]) != want:  # a slice without quota follows the job
            plan.update.append(_with_counts(pending[-1], want))
        return plan
    if want == have:
        return plan
    if set(want) == set(have) and all(want[n] <= have[n] for n in want):
        plan.update.append(_with_counts(head, want))  # scaled down: the quota shrinks in place
        return plan
    # The head's pod sets at the new counts: the job's template now carries what starting
    # it merged in, the head's copy is the template as submitted (what a restart restores).
    replacement = copy.deepcopy(desired)
    replacement["spec"]["podSets"] = _with_counts(head, want)["spec"]["podSets"]
    annotations = replacement["metadata"].setdefault("annotations", {})
    origin = (meta(head).get("annotations") or {}).get(keys.WORKLOAD_SLICE_NAME) or meta(head).get("name")
    annotations.update({keys.ELASTIC_JOB: "true", keys.WORKLOAD_SLICE_NAME: str(origin),
                        keys.WORKLOAD_SLICE_REPLACEMENT_FOR: _key(head)})
    plan.create = replacement
    return plan


def gated(pod: Mapping[str, Any]) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or ()
    return any(g.get("name") == keys.ELASTIC_JOB_GATE for g in gates)


def pods_to_ungate(pods: Iterable[Mapping[str, Any]], granted: int) -> list[JSON]:
    """Kueue's ElasticJobUngater for one pod set: the gated pods (lowest names first) that
    may start, written without the gate, so that at most ``granted`` live pods run."""
    live = [p for p in pods if pod_live(p)]
    room = granted - sum(1 for p in live if not gated(p))
    out: list[JSON] = []
    for pod in sorted((p for p in live if gated(p)), key=lambda p: str(meta(p).get("name"))):
        if room <= 0:
            break
        started = copy.deepcopy(dict(pod))
        gates = [g for g in started["spec"]["schedulingGates"] if g.get("name") != keys.ELASTIC_JOB_GATE]
        if gates:
            started["spec"]["schedulingGates"] = gates
        else:
            del started["spec"]["schedulingGates"]
        out.append(started)
        room -= 1
    return out
