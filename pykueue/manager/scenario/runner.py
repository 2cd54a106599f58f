"""Run a scenario over the queueing core on simulated time.

Jobs become Workloads as Kueue's reconcilers would build them. Simulated pods become
ready as soon as their workload is admitted, unless the workload (or its job) carries
the annotation ``pykueue.dev/pods-ready-after`` (a duration, or ``never``): that is how
a scenario exercises waitForPodsReady. ``runUntilIdle`` schedules until nothing changes
at the current time; only ``advance`` moves the clock, firing timers (backoff ends,
PodsReady timeouts) in time order on the way.

Objects a job kind's rules read besides the job (``manager.jobs.related``: the training
runtime a TrainJob names) are kept as given, for the jobs applied after them.

Topology, Node and Pod objects (and ProvisioningRequest AdmissionChecks) feed the TAS
placer; ``failNode`` deletes a node and the pods bound to it, after which admitted
workloads with pods there get a replacement node or are evicted (``NodeFailures``).
"""

from __future__ import annotations

import heapq
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from pykueue.manager.core.config import ConfigError, config_from, parse_duration
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.objects import ObjectError
from pykueue.manager.core.tas_hook import TasPlacer
from pykueue.manager.core.workload_state import ADMITTED
from pykueue.manager.jobs.registry import is_job, is_job_kind, kind_of, related_kinds, workloads_for
from pykueue.manager.jobs.related import RelatedKey, RelatedKind, resolve

from .loader import Scenario, ScenarioError

PODS_READY_AFTER = "pykueue.dev/pods-ready-after"
START = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
# Kept as read; Topology, Node and Pod also feed topology-aware placement.
_RECORDED_KINDS = ("Topology", "Node", "Pod", "ProvisioningRequestConfig", "PriorityClass")


def _related_kind(api_version: str, kind: str) -> RelatedKind | None:
    """The related kind (of some job kind's rules) an object is of, if any."""
    return next((rk for rk in related_kinds() if (rk.api_version, rk.kind) == (api_version, kind)), None)


class Simulation:
    def __init__(self, scenario: Scenario, start: float = START, evaluate_each: bool = False,
                 live: bool = False) -> None:
        """``start``: the simulated clock's origin (a live snapshot starts at the time it was read).
        ``evaluate_each``: no equivalence hashing, so every pending workload gets a verdict of its
        own (admissions are the same; a live snapshot's workloads were each evaluated already).
        ``live``: the objects were read from a cluster and mean what they mean to Kueue (an
        AdmissionCheck without an Active condition is inactive, not assumed served)."""
        try:
            config = config_from(scenario.config)
        except (ConfigError, ValueError, TypeError) as exc:
            raise ScenarioError(f"invalid config: {exc}") from exc
        if evaluate_each:
            config = replace(config, equivalence_hashing=False)
        if live:
            config = replace(config, unreported_checks_active=False)
        self.scenario = scenario
        self.tas = TasPlacer(overlapping_flavors=config.tas_overlapping_flavors,
                             balanced_placement=config.tas_balanced_placement)
        self.core = QueueingCore(config, now=start, topology=self.tas)
        self.job_workloads: dict[str, list[str]] = {}  # job ns/name -> workload keys
        self.ready_after: dict[str, float | None] = {}  # workload key -> delay (None = never)
        self.recorded: list[dict[str, Any]] = []
        self.related: dict[RelatedKey, dict[str, Any]] = {}  # objects jobs' rules read, by key
        self.failed_nodes: list[str] = []
        self._ready_events: list[tuple[float, str, int]] = []
        self._ready_scheduled: dict[str, int] = {}
        self._generated = 0

    # -- objects ---------------------------------------------------------------------------

    def apply(self, obj: dict[str, Any]) -> None:
        if not isinstance(obj, dict):
            raise ScenarioError("an object to apply is not a mapping")
        meta = obj.get("metadata") or {}
        if not meta.get("name") and meta.get("generateName"):
            # The API server would add five random characters; ours are a counter, for determinism.
            self._generated += 1
            obj = {**obj, "metadata": {**meta, "name": f"{meta['generateName']}{self._generated:05d}"}}
        kind = obj.get("kind")
        try:
            if kind in _RECORDED_KINDS:
                self.recorded.append(obj)
                if self.tas.apply(obj):
                    self.core.requeue_inadmissible()
            elif (related_kind := _related_kind(str(obj.get("apiVersion") or ""), str(kind))) is not None:
                self.related[related_kind.key_of(obj)] = obj
            elif is_job(obj):
                meta = obj.get("metadata") or {}
                job_key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
                delay = self._delay(obj)
                keys = []
                job_kind = kind_of(obj)
                related = resolve(job_kind.lifecycle if job_kind else None, obj, self.related)
                for wl in workloads_for(obj, related):
                    rec = self.core.apply_workload(wl)
                    keys.append(rec.key)
                    self.ready_after[rec.key] = delay
                self.job_workloads[job_key] = keys
            else:
                if kind == "AdmissionCheck":
                    self.tas.apply(obj)
                self.core.apply(obj)
                if kind == "Workload":
                    meta = obj.get("metadata") or {}
                    self.ready_after[f"{meta.get('namespace') or 'default'}/{meta.get('name')}"] = \
                        self._delay(obj)
        except ObjectError as exc:
            raise ScenarioError(str(exc)) from exc

    @staticmethod
    def _delay(obj: dict[str, Any]) -> float | None:
        value = ((obj.get("metadata") or {}).get("annotations") or {}).get(PODS_READY_AFTER)
        if value is None:
            return 0.0
        if str(value) == "never":
            return None
        try:
            return parse_duration(value)
        except ConfigError as exc:
            raise ScenarioError(f"invalid {PODS_READY_AFTER}: {value!r}") from exc

    def _workload_keys(self, ref: str) -> list[str]:
        if self.core.workload(ref) is not None:
            return [ref]
        if ref in self.job_workloads:
            return self.job_workloads[ref]
        raise ScenarioError(f"no workload or job {ref}")

    # -- time ------------------------------------------------------------------------------

    def settle(self) -> None:
        """Schedule until idle at the current time, with pods getting ready as they should."""
        for _ in range(10_000):
            self.core.run_until_idle()
            self._schedule_ready()
            if not self._fire_ready(self.core.now):
                return

    def _schedule_ready(self) -> None:
        for key, rec in self.core.all_workloads().items():
            if rec.status != ADMITTED or rec.pods_ready or self._ready_scheduled.get(key) == rec.generation:
                continue
            self._ready_scheduled[key] = rec.generation
            delay = self.ready_after.get(key, 0.0)
            if delay is not None and rec.admitted_at is not None:
                heapq.heappush(self._ready_events, (rec.admitted_at + delay, key, rec.generation))

    def _fire_ready(self, now: float) -> bool:
        changed = False
        while self._ready_events and self._ready_events[0][0] <= now:
            _, key, gen = heapq.heappop(self._ready_events)
            rec = self.core.workload(key)
            if rec is not None and rec.generation == gen:
                changed |= self.core.set_pods_ready(key)
        return changed

    def advance(self, seconds: float) -> None:
        target = self.core.now + seconds
        while True:
            candidates = [t for t in (self.core.next_deadline(),
                                      self._ready_events[0][0] if self._ready_events else None)
                          if t is not None and t <= target]
            if not candidates:
                break
            t = min(candidates)
            self.core.advance_clock(t)
            self._fire_ready(t)  # pods that got ready by t beat a timeout at t
            self.core.fire_timers(t)
            self.settle()
        self.core.fire_timers(target)
        self.settle()

    # -- steps -----------------------------------------------------------------------------

    def run(self) -> None:
        for obj in self.scenario.objects:
            self.apply(obj)
        self.settle()
        for step in self.scenario.steps:
            self.step(step)
        self.settle()

    def step(self, step: dict[str, Any]) -> None:
        (kind, arg), = step.items()
        if kind == "apply":
            for obj in arg if isinstance(arg, list) else [arg]:
                self.apply(obj)
        elif kind == "advance":
            try:
                self.advance(parse_duration(arg))
            except ConfigError as exc:
                raise ScenarioError(f"invalid advance {arg!r}") from exc
            return
        elif kind == "finish":
            for key in self._workload_keys(str(arg)):
                self.core.finish(key)
        elif kind == "delete":
            self._delete(arg)
        elif kind == "failNode":
            self._fail_node(str(arg))
        elif kind == "checkState":
            self._check_state(arg)
        self.settle()

    def _fail_node(self, name: str) -> None:
        """The node is lost as if deleted: it and the pods bound to it are gone."""
        self.failed_nodes.append(name)
        self.recorded = [o for o in self.recorded if not (
            (o.get("kind") == "Node" and (o.get("metadata") or {}).get("name") == name)
            or (o.get("kind") == "Pod" and (o.get("spec") or {}).get("nodeName") == name))]
        mark = self.core.config.tas_node_failure.replacement
        for key in self.tas.fail_node(name, mark=mark):
            self.core.evict(key, "NodeFailures", self.tas.failure_note(key, name))

    def _delete(self, arg: Any) -> None:
        if not isinstance(arg, dict) or not arg.get("kind") or not arg.get("name"):
            raise ScenarioError(f"invalid delete step {arg!r}")
        kind, ns, name = str(arg["kind"]), arg.get("namespace"), str(arg["name"])
        job_key = f"{ns or 'default'}/{name}"
        if job_key in self.job_workloads and is_job_kind(kind):
            for key in self.job_workloads.pop(job_key):
                self.core.delete("Workload", *key.split("/", 1))
            return
        related_kind = next((rk for rk in related_kinds() if rk.kind == kind), None)
        if related_kind is not None:
            if self.related.pop(related_kind.key(name, str(ns or "")), None) is None:
                raise ScenarioError(f"delete: no {kind} {job_key if ns else name}")
            return
        if kind in _RECORDED_KINDS:
            before = len(self.recorded)
            self.recorded = [o for o in self.recorded if not (
                o.get("kind") == kind and (o.get("metadata") or {}).get("name") == name)]
            if len(self.recorded) == before:
                raise ScenarioError(f"delete: no {kind} {name}")
            if self.tas.delete(kind, ns, name):
                self.core.requeue_inadmissible()
            return
        if not self.core.delete(kind, ns, name):
            raise ScenarioError(f"delete: no {kind} {job_key if ns else name}")

    def _check_state(self, arg: Any) -> None:
        if not isinstance(arg, dict) or not {"workload", "check", "state"} <= set(arg):
            raise ScenarioError(f"invalid checkState step {arg!r}")
        state = str(arg["state"])
        if state not in ("Pending", "Ready", "Retry", "Rejected"):
            raise ScenarioError(f"checkState: invalid state {state!r}")
        for key in self._workload_keys(str(arg["workload"])):
            if not self.core.set_check_state(key, str(arg["check"]), state):
                raise ScenarioError(f"checkState: workload {key} has no admission check {arg['check']}")
