"""What the given jobs would get on a cluster: the core run forward over a live snapshot.

``predict`` applies the cluster's objects (see :mod:`.cluster_snapshot`) and the submitted
jobs' Workloads to a fresh core at the time the cluster was read and schedules until idle:
what it admits now, and why the rest waits. With ``until_admitted`` it goes on in simulated
time, finishing each workload that holds quota at its expected end, until every submitted
workload holds quota (or nothing is left to finish). The result is ``simulate --json``'s
object with, per submitted workload, ``submitted: true``, ``preempts``, ``position`` and,
under ``until_admitted``, ``predictedAdmission``.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.tiers import Tier, record_tier
from pykueue.manager.core.workload_state import PENDING, WorkloadView
from pykueue.manager.jobs.admission import AdmissionPolicy

from .cluster_snapshot import ClusterListing, Submitted, apply_snapshot, what_if_scenario
from .gc_pause import paused_collection
from .report import result
from .runner import Simulation

# Where a running workload's expected end comes from, in the order they are tried.
MAX_EXECUTION = "maximumExecutionTimeSeconds"
MAX_EXECUTION_EXCEEDED = keys.Reason.DEACTIVATED_DUE_TO_MAXIMUM_EXECUTION_TIME_EXCEEDED
ACTIVE_DEADLINE = "activeDeadlineSeconds"
ASSUMED = "assumedRuntime"
MAX_STEPS = 100_000
# Tiers that waiting for running workloads to finish does not change.
NOT_HELPED_BY_TIME = frozenset({Tier.DEACTIVATED, Tier.ON_HOLD, Tier.MISCONFIGURED, Tier.NO_MATCHING_FLAVOR,
                                Tier.SUSPENDED, Tier.ADMISSION_GATED, Tier.EXCEEDS_MAX_QUOTA})


@dataclass(frozen=True)
class Runtime:
    seconds: float
    source: str


def expected_runtime(rec: WorkloadView, assume_s: float) -> Runtime:
    """How long a workload runs once admitted: its Workload's maximumExecutionTimeSeconds, else
    its pods' (or its job's, for a submission) activeDeadlineSeconds, else ``assume_s``."""
    spec = rec.wl.source.get("spec") or {}
    if spec.get(MAX_EXECUTION):
        return Runtime(float(spec[MAX_EXECUTION]), MAX_EXECUTION)
    deadlines = [float(d) for ps in spec.get("podSets") or ()
                 if (d := (((ps or {}).get("template") or {}).get("spec") or {}).get(ACTIVE_DEADLINE))]
    job_deadline = ((rec.wl.source.get("metadata") or {}).get("annotations") or {}).get(_JOB_DEADLINE)
    if job_deadline:
        deadlines.append(float(job_deadline))
    if deadlines:
        return Runtime(max(deadlines), ACTIVE_DEADLINE)
    return Runtime(assume_s, ASSUMED)


# A submitted job's own activeDeadlineSeconds, carried on its what-if Workload only.
_JOB_DEADLINE = "pykueue.dev/what-if-active-deadline-seconds"


def _carry_job_deadlines(submissions: Sequence[JSON], scenario_objects: list[JSON],
                         submitted: list[Submitted]) -> None:
    by_key = {f"{(o.get('metadata') or {}).get('namespace')}/{(o.get('metadata') or {}).get('name')}": o
              for o in scenario_objects if o.get("kind") == "Workload"}
    for obj, sub in zip(submissions, submitted, strict=True):
        spec = obj.get("spec") or {}
        deadline = spec.get(ACTIVE_DEADLINE) or (spec.get("runPolicy") or {}).get(ACTIVE_DEADLINE)
        if not deadline:
            continue
        for key in sub.workloads:
            wl = by_key[key]
            meta = wl.setdefault("metadata", {})
            meta["annotations"] = {**(meta.get("annotations") or {}), _JOB_DEADLINE: str(deadline)}


def _current(core: QueueingCore, entry: tuple[float, str, int]) -> bool:
    """The heap entry still describes a workload holding quota in the same admission."""
    rec = core.workload(entry[1])
    return rec is not None and rec.holds_quota and rec.generation == entry[2]


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def predict(listing: ClusterListing, submissions: Sequence[JSON], policy: AdmissionPolicy,
            until_admitted: bool = False, assume_runtime_s: float = 3600.0) -> dict[str, Any]:
    """Raises ScenarioError (SubmissionError) for input a real submission would not queue."""
    with paused_collection():
        return _predict(listing, submissions, policy, until_admitted, assume_runtime_s)


def _predict(listing: ClusterListing, submissions: Sequence[JSON], policy: AdmissionPolicy,
             until_admitted: bool, assume_runtime_s: float) -> dict[str, Any]:
    scenario, submitted = what_if_scenario(listing, submissions, policy)
    _carry_job_deadlines(submissions, scenario.objects, submitted)
    sim = Simulation(scenario, start=listing.now, evaluate_each=True, live=True)
    ignored = apply_snapshot(sim, scenario.objects, submitted)
    core = sim.core
    ours = {key for sub in submitted for key in sub.workloads}
    records = core.all_workloads()
    uids = {records[k].wl.uid: k for k in ours if k in records}
    now_view = result(core)
    for key in ours:
        entry = now_view["workloads"].get(key)
        if entry is None:
            continue
        entry["submitted"] = True
        entry["preempts"] = sorted(
            k for k, r in records.items()
            if r.preemption is not None and uids.get(r.preemption.preemptor_uid) == key)
        place = core.queue_position(key)
        entry["position"] = place[0] if place else None
    if until_admitted:
        _run_until_admitted(sim, ours, assume_runtime_s, now_view)
    now_view["submitted"] = [{"object": s.ref, "owner": s.owner, "workloads": list(s.workloads)}
                             for s in submitted]
    now_view["time"] = _iso(listing.now)
    if ignored:
        now_view["ignored"] = ignored  # cluster objects the core could not read, as the manager ignores them
    return now_view


def _run_until_admitted(sim: Simulation, ours: set[str], assume_s: float, view: dict[str, Any]) -> None:
    """Finish workloads at their expected ends until every submitted one holds quota."""
    core = sim.core
    records = core.all_workloads()
    start = core.now
    ends: list[tuple[float, str, int]] = []  # (expected end, key, record generation) as a heap
    scheduled: dict[str, int] = {}  # key -> the generation its end was computed for
    finished_by: dict[str, int] = {}
    admitted_at: dict[str, tuple[float, dict[str, int]]] = {}
    for _ in range(MAX_STEPS):
        for key in ours:
            rec = records.get(key)
            if rec is not None and rec.holds_quota and key not in admitted_at:
                admitted_at[key] = (rec.reserved_at or core.now, dict(finished_by))
        waiting = [records[k] for k in ours if k in records and k not in admitted_at]
        if not waiting or all(rec.status == PENDING and record_tier(rec) in NOT_HELPED_BY_TIME
                              for rec in waiting):
            break
        for held in core.holders_by_queue().values():
            for key, rec in held.items():
                if scheduled.get(key) != rec.generation:
                    scheduled[key] = rec.generation
                    runtime = expected_runtime(rec, assume_s)
                    began = rec.reserved_at if rec.reserved_at is not None else core.now
                    heapq.heappush(ends, (max(core.now, began + runtime.seconds), key, rec.generation))
                    finished_by.setdefault(runtime.source, 0)
        while ends and not _current(core, ends[0]):
            heapq.heappop(ends)
        if not ends:
            break
        if ends[0][0] > core.now:
            sim.advance(ends[0][0] - core.now)
        while ends and ends[0][0] <= core.now:
            entry = heapq.heappop(ends)
            if not _current(core, entry):
                rec = records.get(entry[1])
                if rec is not None and list(rec.evictions[-1:]) == [MAX_EXECUTION_EXCEEDED]:
                    # The core stopped it at its maximum execution time: that estimate held.
                    finished_by[MAX_EXECUTION] = finished_by.get(MAX_EXECUTION, 0) + 1
                continue
            source = expected_runtime(records[entry[1]], assume_s).source
            finished_by[source] = finished_by.get(source, 0) + 1
            core.finish(entry[1])
        sim.settle()
    for key in ours:
        entry = view["workloads"].get(key)
        if entry is None:
            continue
        if key in admitted_at:
            t, basis = admitted_at[key]
            rec = records[key]
            entry["predictedAdmission"] = {
                "time": _iso(t), "inSeconds": round(max(0.0, t - start), 3),
                "clusterQueue": rec.cluster_queue or "",
                "flavors": {psa.name: dict(sorted(psa.flavors.items()))
                            for psa in (rec.assignment.podsets if rec.assignment else ())},
                # How many running workloads were finished first, by the estimate their end came from.
                "finishedBefore": {k: v for k, v in sorted(basis.items()) if v},
                "estimates": sorted(k for k, v in basis.items() if v),
            }
        else:
            entry["predictedAdmission"] = None


def submitted_keys(view: Mapping[str, Any]) -> list[str]:
    return [k for s in view.get("submitted") or () for k in s["workloads"]]


def table(view: Mapping[str, Any]) -> str:
    """The submitted workloads' predictions as a table."""
    rows: list[tuple[str, ...]] = [("WORKLOAD", "OWNER", "PREDICTION", "CLUSTERQUEUE", "DETAIL")]
    for key in submitted_keys(view):
        w = view["workloads"].get(key) or {}
        if w.get("status") == "Pending":
            position = f"position {w['position']}; " if w.get("position") else ""
            detail = f"{position}{w.get('tier', '')}: {w.get('reason', '')}"
        else:
            flavors = " ".join(f"{ps}[{','.join(sorted(set(p['flavors'].values())))}]"
                               for ps, p in (w.get("podSets") or {}).items())
            preempts = f"; preempts {', '.join(w['preempts'])}" if w.get("preempts") else ""
            detail = f"flavors {flavors}{preempts}"
        predicted = w.get("predictedAdmission", False)
        if predicted:
            detail += (f"; admitted in {predicted['inSeconds']:.0f}s ({predicted['time']}, estimates: "
                       f"{', '.join(predicted['estimates']) or 'none needed'})")
        elif predicted is None:
            detail += "; no admission predicted"
        rows.append((key, w.get("owner") or "-", str(w.get("status", "")), w.get("clusterQueue") or "-",
                     detail))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join([*(c.ljust(n) for c, n in zip(r, widths, strict=False)), r[-1]]).rstrip()
                     for r in rows)
