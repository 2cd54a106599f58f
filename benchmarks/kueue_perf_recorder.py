"""What Kueue's scheduler-performance recorder and checker measure, computed the same way.

Kueue's recorder timestamps every Workload and ClusterQueue event it observes (its own
clock, not the objects' second-resolution condition times) and its checker derives:

* time to admission of a workload = first event with ``Admitted=True`` minus the
  workload's first observed event (ours: or the manager's start, for a workload created
  before it, see ``Recorder.start_ms``); averaged per workload class (integer ms);
* ClusterQueue usage per queue class = sum over queues of the CPU in
  ``status.flavorsUsage[0].resources[0].total`` integrated between consecutive status
  events (mCPU x ms), divided by (sum of nominal quotas x (last - first event time of the
  class));
* the run is over once generation is done and no Active ClusterQueue reports pending or
  reserving workloads.

Beyond the checker, per workload class: the 50th and 90th percentiles of the time to
admission over the workloads admitted (the mean above counts a never-admitted workload as 0,
as Kueue's summary does; the percentiles leave them out and ``never_admitted`` counts them),
and admissions per minute (see :meth:`Recorder.admissions_per_min`).

Beside the checker's usage, which counts quota as each manager reports it in ClusterQueue
status (reservations still waiting for their admission write included, sampled only when
the manager writes the status), ``admitted_usage_pct`` is computed from what the recorder
sees itself: each workload's CPU requests integrated from its first observed ``Admitted``
to ``Finished`` (or to losing ``Admitted``), over the sum of nominal quotas and the span
from the first workload event to the last such end. The same for any manager.

Pure (times are passed in), so the arithmetic is unit-tested against hand-made event
sequences; the runner in ``kueue_perf`` feeds it watch events.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pykueue.api.quantity import Quantity
from pykueue.api.wire import JSON
from pykueue.manager.core.resources import pod_requests

from .kueue_perf_config import CLASS_LABEL
from .webhook_latency import percentile


def _true(obj: JSON, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or ())


def _millis(value: Any) -> int:
    try:
        return int(Quantity.parse(str(value)).milli_value())
    except (ValueError, TypeError, AttributeError):
        return 0


@dataclass
class WorkloadState:
    class_name: str
    first_ms: float
    admitted_ms: float | None = None
    finished_ms: float | None = None
    causes: list[str] = field(default_factory=list)  # per eviction: the Preempted reason, or Evicted's
    cpu_m: int = 0  # requests of all its pods
    queue: str = ""  # namespace/LocalQueue
    priority: int = 0
    held_since_ms: float | None = None  # observed Admitted and not yet Finished since then
    admitted: bool = False
    evicted: bool = False
    finished: bool = False


@dataclass
class QueueState:
    class_name: str
    first_ms: float
    last_ms: float
    quota_m: int
    usage_m: int
    pending: int
    reserving: int
    active: bool
    used_m_ms: int = 0
    max_usage_m: int = 0


@dataclass
class Recorder:
    workloads: dict[str, WorkloadState] = field(default_factory=dict)
    queues: dict[str, QueueState] = field(default_factory=dict)
    admitted_m_ms: float = 0.0  # CPU of observed admitted workloads, integrated over time
    last_release_ms: float | None = None
    # Where evictions come from (the same for any manager, from what the API shows):
    # admissions seen while a higher-priority workload of the same LocalQueue was pending,
    # and per preemption, how long its victim had been admitted and whether its preemptor
    # already existed when the victim was admitted.
    admitted_past_higher: int = 0
    preemptions: list[tuple[float, bool | None]] = field(default_factory=list)
    evicted_at_ms: list[float] = field(default_factory=list)  # when each eviction was seen
    # How long each of the runner's finish writes took (its request and any retries), the
    # part of a workload's time admitted past its runtime that the API's load adds.
    finish_writes_ms: list[float] = field(default_factory=list)
    # The rest of that lag, on the runner's side: how late its finish timers fire (an event
    # loop busy decoding watch events fires them late), and how long after a finish write
    # returned the watch delivers it (the API's watch lag plus the loop's).
    finish_late_ms: list[float] = field(default_factory=list)
    finish_echo_ms: list[float] = field(default_factory=list)
    _pending: dict[str, dict[int, int]] = field(default_factory=dict)  # queue -> priority -> count
    # Per eviction, where the runner's finish of its victim stood (set by the runner).
    victim_finish_phase: Counter[str] = field(default_factory=Counter)
    # When the manager was ready: a workload created before (a backlog) waits from then, so
    # that its wait and its class's drain rate are the manager's, not the harness's creates.
    start_ms: float = 0.0

    def _waits_from(self, w: WorkloadState) -> float:
        return max(w.first_ms, self.start_ms)

    def workload_event(self, now_ms: float, obj: JSON) -> WorkloadState:
        meta = obj.get("metadata") or {}
        key = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
        state = self.workloads.get(key)
        if state is None:
            spec = obj.get("spec") or {}
            state = WorkloadState(str((meta.get("labels") or {}).get(CLASS_LABEL, "")), now_ms,
                                  cpu_m=_cpu_m(obj), queue=f"{meta.get('namespace')}/{spec.get('queueName')}",
                                  priority=int(spec.get("priority") or 0))
            self.workloads[key] = state
            self._count_pending(state, 1)
        admitted, evicted, finished = _true(obj, "Admitted"), _true(obj, "Evicted"), _true(obj, "Finished")
        was_pending = not (state.admitted or state.finished)
        if (not (admitted or finished)) != was_pending:
            self._count_pending(state, -1 if was_pending else 1)
        if admitted and not state.admitted:
            if state.admitted_ms is None:
                state.admitted_ms = now_ms
            if any(n for p, n in self._pending.get(state.queue, {}).items() if p > state.priority):
                self.admitted_past_higher += 1
        if evicted and not state.evicted:
            state.causes.append(_cause(obj))
            self.evicted_at_ms.append(now_ms)
            since = state.held_since_ms
            if since is not None:
                self.preemptions.append((now_ms - since, self._preemptor_waited(obj, since)))
        if finished and not state.finished:
            state.finished_ms = now_ms
        state.admitted, state.evicted, state.finished = admitted, evicted, finished
        held = admitted and not finished
        if held and state.held_since_ms is None:
            state.held_since_ms = now_ms
        elif not held and state.held_since_ms is not None:
            self.admitted_m_ms += state.cpu_m * max(0.0, now_ms - state.held_since_ms)
            state.held_since_ms = None
            last = self.last_release_ms
            self.last_release_ms = now_ms if last is None else max(now_ms, last)
        return state

    def _count_pending(self, state: WorkloadState, delta: int) -> None:
        by_priority = self._pending.setdefault(state.queue, {})
        by_priority[state.priority] = by_priority.get(state.priority, 0) + delta

    def _preemptor_waited(self, obj: JSON, held_since_ms: float) -> bool | None:
        """Whether the workload named in the Preempted condition was seen before its victim's
        admission (``held_since_ms``); None when no preemptor is named or it was never seen."""
        for c in (obj.get("status") or {}).get("conditions") or ():
            if c.get("type") == "Preempted" and c.get("status") == "True":
                found = _PREEMPTOR_UID.search(str(c.get("message") or ""))
                preemptor = self.workloads.get(found.group(1)) if found else None
                if preemptor is not None:
                    return preemptor.first_ms < held_since_ms
        return None

    def queue_event(self, now_ms: float, obj: JSON) -> None:
        meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        usage = 0
        flavors = status.get("flavorsUsage") or []
        if flavors and (flavors[0].get("resources") or []):
            usage = _millis(flavors[0]["resources"][0].get("total"))
        quota = 0
        groups = spec.get("resourceGroups") or []
        if groups and groups[0].get("flavors") and groups[0]["flavors"][0].get("resources"):
            quota = _millis(groups[0]["flavors"][0]["resources"][0].get("nominalQuota"))
        name = str(meta.get("name"))
        pending = int(status.get("pendingWorkloads") or 0)
        reserving = int(status.get("reservingWorkloads") or 0)
        active = _true(obj, "Active")
        state = self.queues.get(name)
        if state is None:
            class_name = str((meta.get("labels") or {}).get(CLASS_LABEL, ""))
            self.queues[name] = QueueState(class_name, now_ms, now_ms, quota, usage, pending, reserving,
                                           active, 0, usage)
            return
        if state.usage_m > 0:
            state.used_m_ms += state.usage_m * int(now_ms - state.last_ms)
        state.last_ms, state.quota_m, state.usage_m = now_ms, quota, usage
        state.pending, state.reserving, state.active = pending, reserving, active
        state.max_usage_m = max(state.max_usage_m, usage)

    def expect_more(self) -> bool:
        """Some Active queue still reports pending or reserving workloads."""
        return any(q.active and (q.pending or q.reserving) for q in self.queues.values())

    # ------------------------------------------------------------------------- results

    def usage_pct(self) -> dict[str, float]:
        """Per ClusterQueue class, as Kueue's checker computes it."""
        groups: dict[str, list[QueueState]] = {}
        for q in self.queues.values():
            groups.setdefault(q.class_name, []).append(q)
        out = {}
        for name, qs in groups.items():
            span = max(q.last_ms for q in qs) - min(q.first_ms for q in qs)
            quota = sum(q.quota_m for q in qs)
            used = sum(q.used_m_ms for q in qs)
            out[name] = round(used * 100 / (quota * span), 2) if quota and span > 0 else 0.0
        return out

    def admitted_usage_pct(self) -> float:
        """CPU of workloads observed admitted (until observed finished), integrated, over the
        sum of nominal quotas times the span from the first workload event to the last end."""
        quota = sum(q.quota_m for q in self.queues.values())
        if not self.workloads or self.last_release_ms is None or not quota:
            return 0.0
        span = self.last_release_ms - min(w.first_ms for w in self.workloads.values())
        return round(self.admitted_m_ms * 100 / (quota * span), 2) if span > 0 else 0.0

    def time_to_admission_ms(self) -> dict[str, int]:
        """Average per workload class; a workload never admitted counts 0, as in Kueue's summary."""
        totals: dict[str, list[float]] = {}
        for w in self.workloads.values():
            tta = 0.0 if w.admitted_ms is None else w.admitted_ms - self._waits_from(w)
            totals.setdefault(w.class_name, []).append(tta)
        return {c: int(sum(v) / len(v)) for c, v in totals.items()}

    def _admission_waits(self) -> dict[str, list[float]]:
        """Per workload class, the time to admission of each workload admitted (the class is
        there, with no waits, when none of its workloads was)."""
        waits: dict[str, list[float]] = {}
        for w in self.workloads.values():
            waits.setdefault(w.class_name, [])
            if w.admitted_ms is not None:
                waits[w.class_name].append(w.admitted_ms - self._waits_from(w))
        return waits

    def time_to_admission_pct_ms(self, q: float) -> dict[str, int | None]:
        """The ``q`` percentile (nearest rank below) of the time to admission per workload class,
        over the workloads admitted: a workload never admitted is left out (see
        :meth:`never_admitted`), not counted 0 as the mean does; None for a class none of whose
        workloads was admitted."""
        return {c: int(percentile(v, q)) if v else None for c, v in self._admission_waits().items()}

    def never_admitted(self) -> dict[str, int]:
        """Per workload class, the workloads never seen admitted."""
        out: dict[str, int] = {}
        for w in self.workloads.values():
            out[w.class_name] = out.get(w.class_name, 0) + (w.admitted_ms is None)
        return out

    def admissions_per_min(self) -> dict[str, float | None]:
        """Per workload class, its workloads admitted over the span from the class's first
        creation (its first workload's first observed event, or the manager's start for a
        backlog created before it) to its last first admission (a readmission after an
        eviction does not count again), in minutes; None when none was admitted or that span
        is zero. A class admitted as fast as it is created shows its creation rate; one that
        queues, the rate its manager drains it at."""
        first: dict[str, float] = {}
        last: dict[str, float] = {}
        admitted: dict[str, int] = {}
        for w in self.workloads.values():
            c = w.class_name
            since = self._waits_from(w)
            first[c] = min(first.get(c, since), since)
            admitted.setdefault(c, 0)
            if w.admitted_ms is not None:
                admitted[c] += 1
                last[c] = max(last.get(c, w.admitted_ms), w.admitted_ms)
        out: dict[str, float | None] = {}
        for c, n in admitted.items():
            span_ms = last.get(c, first[c]) - first[c]
            out[c] = round(n * 60_000.0 / span_ms, 1) if n and span_ms > 0 else None
        return out

    def evictions(self) -> int:
        return sum(len(w.causes) for w in self.workloads.values())

    def evicted_workloads(self) -> tuple[int, int]:
        """(workloads evicted at least once, most evictions of one workload). A count far
        above the first means the same workloads lose their room again and again, as when
        every newly created higher-priority workload preempts the ones that filled the gap
        its predecessor left."""
        counts = [len(w.causes) for w in self.workloads.values() if w.causes]
        return len(counts), max(counts, default=0)

    def evictions_by_cause(self) -> dict[str, int]:
        """``<evicted class>/<reason>`` -> count; the reason is the Preempted condition's
        (InClusterQueue, InCohortReclamation, ...) or, for other evictions, Evicted's."""
        out: dict[str, int] = {}
        for w in self.workloads.values():
            for cause in w.causes:
                label = f"{w.class_name}/{cause}"
                out[label] = out.get(label, 0) + 1
        return dict(sorted(out.items()))

    def preemption_trace(self) -> dict[str, Any]:
        """What the evictions were: admissions past a waiting higher-priority workload of the
        same queue, victims' time admitted before their eviction (median, 90th percentile),
        other workloads' time admitted until finished and the runner's parts of it (how late
        its finish timers fired, how long its finish writes took, how long until the watch
        delivered them), how many preemptors were already there when their victim was
        admitted, and when the first admission and the evictions came."""
        held = [h for h, _ in self.preemptions]
        waited = [w for _, w in self.preemptions]
        # How long a workload stays admitted until seen finished (its runtime plus the
        # runner's and the API's lag): the window in which a newcomer may preempt it.
        ran = [w.finished_ms - w.admitted_ms for w in self.workloads.values()
               if not w.causes and w.finished_ms is not None and w.admitted_ms is not None]
        writes, late, echo = self.finish_writes_ms, self.finish_late_ms, self.finish_echo_ms

        def pct(values: list[float], q: float) -> int | None:
            return int(percentile(values, q)) if values else None
        # When, from the first creation, the first admission and the evictions were seen: a
        # manager that admits from the first second fills its queues with the first (small,
        # low-priority) arrivals, which the higher-priority ones created next then preempt.
        start = min((w.first_ms for w in self.workloads.values()), default=0.0)
        admitted = [w.admitted_ms for w in self.workloads.values() if w.admitted_ms is not None]
        evicted_at = [(t - start) / 1000.0 for t in self.evicted_at_ms]
        return {"admitted_past_higher": self.admitted_past_higher,
                "victim_admitted_ms_p50": pct(held, 0.5), "victim_admitted_ms_p90": pct(held, 0.9),
                "held_ms_p50": pct(ran, 0.5), "held_ms_p90": pct(ran, 0.9),
                "finish_write_ms_p50": pct(writes, 0.5), "finish_write_ms_p90": pct(writes, 0.9),
                "finish_late_ms_p50": pct(late, 0.5), "finish_late_ms_p90": pct(late, 0.9),
                "finish_echo_ms_p50": pct(echo, 0.5), "finish_echo_ms_p90": pct(echo, 0.9),
                "preemptor_there_before": waited.count(True), "preemptor_came_after": waited.count(False),
                "preemptor_unknown": waited.count(None),
                "first_admission_s": round((min(admitted) - start) / 1000.0, 2) if admitted else None,
                "evicted_at_s_p10": pct(evicted_at, 0.1), "evicted_at_s_p50": pct(evicted_at, 0.5),
                "evicted_at_s_p90": pct(evicted_at, 0.9),
                "victim_finish_phase": dict(sorted(self.victim_finish_phase.items()))}

    def counts(self) -> tuple[int, int, int]:
        """(pending, admitted and running, finished) right now, for the timeline plot."""
        pending = admitted = finished = 0
        for w in self.workloads.values():
            if w.finished:
                finished += 1
            elif w.admitted:
                admitted += 1
            else:
                pending += 1
        return pending, admitted, finished


def _cpu_m(obj: JSON) -> int:
    """CPU (millicores) requested by all pods of a Workload, per pod as the core counts it."""
    return sum(int(pod_set.get("count") or 1)
               * pod_requests((pod_set.get("template") or {}).get("spec") or {}).get("cpu", 0)
               for pod_set in (obj.get("spec") or {}).get("podSets") or ())


_PREEMPTOR_UID = re.compile(r"\(UID: ([^,)\s]+)")


def _cause(obj: JSON) -> str:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    reasons = {c.get("type"): str(c.get("reason") or "") for c in conditions if c.get("status") == "True"}
    return reasons.get("Preempted") or reasons.get("Evicted") or "unknown"
