"""Kueue's scheduler scalability test, reproduced on the local control plane.

Method (Kueue's ``test/performance/scheduler``, kept so the numbers compare): a manager
process under test with no webhooks, no job integrations at work and no leader election;
a runner that creates the queues, then Workloads directly (no Jobs, no pods) at each
workload set's ``creationIntervalMs``, sleeping before each create; a finisher that sets
``Finished`` ``runtimeMs`` after it saw a workload admitted and clears the quota
reservation of an evicted one; a recorder that timestamps watch events. The run ends when
generation is done and no Active ClusterQueue reports pending or reserving workloads;
then the manager is stopped and its wall time (process start to exit), CPU seconds and
peak RSS (``wait4`` rusage, like Kueue's ``minimalkueue.stats.yaml``) are taken.

Manager modes: ``own`` (default) takes over a dev cluster: it stops the cluster's pykueue,
removes the dev webhook configurations (Kueue's harness runs none) and runs
``pykueue manager`` with ``clientConnection.qps/burst`` from ``--qps/--burst``; at the end
``pykueue dev up`` restores the cluster's own pykueue. ``kueue`` does the same with
Kueue's benchmark manager ``minimalkueue`` (``--kueue-version``, default the pinned one;
built with the run's client limits, see ``devcluster.kueue_minimal``). ``--compare`` runs
both, alternating (pykueue, then Kueue, per setting and round; ``--rounds N``).
``--kueue-limiter``: ``shared`` (default) gives minimalkueue one token bucket for all its
requests, as Kueue's own manager and pykueue have, so both managers get the same budget;
``per-resource`` runs it as Kueue's harness does, a bucket per API kind (about four times
the budget on this generator).
``external`` measures the manager already running (the dev cluster's) from outside via
``/proc`` (for the shared CI cluster). The managers are in ``kueue_perf_managers``.

Measures beyond Kueue's checker (``kueue_perf_recorder``): per workload class the p50/p90
time to admission (``tta_p50_ms``, ``tta_p90_ms``; never-admitted workloads left out and
counted in ``never_admitted``) and ``admissions_per_min``; per run ``scheduling_cycles``
(each manager's ``kueue_admission_attempts_total``, one per scheduling cycle in both) and
``cycles_per_min`` over the manager's wall. A generator config with ``fairSharing: true``
(our extension, see ``kueue_perf_config``) runs both managers with Kueue's fair sharing.

Without ``--qps`` both client settings run, Kueue's harness 50/100 and the production
default 300/500. The JSON line's top-level metrics are the last pykueue run (or the last
run), ``runs`` lists every run, ``compare`` the pykueue/Kueue ratios (``kueue_perf_results``).
``--quick`` runs ``configs/kueue_perf/quick.yaml``. Results (with the admitted/pending
timelines) go to ``benchmarks/results/``; ``benchmarks.plot_kueue_perf`` renders the README
table and the PNG from them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.dev_lock import DevClusterUnavailable, holding_dev_cluster
from benchmarks.kueue_perf_config import (
    CLASS_LABEL,
    CLEANUP_LABEL,
    RUNNING_TIME_LABEL,
    ConfigError,
    GeneratorConfig,
    QueuePlan,
    WorkloadTemplate,
    flavor_object,
    load_config,
    queue_plans,
    topology_objects,
    workload_name,
    workload_object,
)
from benchmarks.kueue_perf_managers import (
    ExternalManager,
    FloorManager,
    KueueManager,
    Manager,
    ManagerStats,
    OwnManager,
    busy_pct,
    machine_cpu_times,
    process_cpu_s,
)
from benchmarks.kueue_perf_recorder import Recorder
from benchmarks.kueue_perf_results import (
    FLOOR,
    KUEUE,
    PYKUEUE,
    ratio_to_reference,
    run_entry,
    run_label,
    summary,
    top_index,
)
from pykueue.devcluster import kueue_build, kueue_minimal
from pykueue.devcluster.build import BuildError
from pykueue.devcluster.kueue_minimal import LIMITERS, PER_RESOURCE, SHARED
from pykueue.kube import resources as res
from pykueue.kube.client import JSON_PATCH, ApiError, KubeClient, connect
from pykueue.kube.informer import EventType, Informer

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "configs" / "kueue_perf"
RESULTS = HERE / "results"
QPS_SETTINGS = ((50.0, 100), (300.0, 500))  # Kueue's harness; Kueue's production default
RUNNER_QPS, RUNNER_BURST = 1000.0, 2000  # the runner's own client, as envtest's in Kueue's runner
CHECK_PERIOD_S = 5.0
WRITE_ATTEMPTS = 12  # the runner's status writes, with backoff up to 1 s and a fresh read each
# Kueue's published means for the same configs (test/performance/scheduler/configs/*/rangespec.yaml).
REFERENCE: dict[str, dict[str, Any]] = {
    "baseline": {"wall_s": 351.116, "usage_pct": 55.9,
                 "tta_ms": {"small": 215468, "medium": 76768, "large": 16501}},
    "large-scale": {"wall_s": 1179.411, "usage_pct": 38.64,
                    "tta_ms": {"small": 700379, "medium": 256413, "large": 105604}},
    "tas": {"wall_s": 401.472, "usage_pct": 62.41, "tta_ms": {}},
}
TIMEOUT_S = {"large-scale": 1800.0, "tas": 1200.0, "quick": 150.0}
DEFAULT_TIMEOUT_S = 1800.0  # Kueue on one shared 50/100 budget took 1,119 s on the baseline
VISIBILITY_API_SERVICES = tuple(f"/apis/apiregistration.k8s.io/v1/apiservices/{v}.visibility.kueue.x-k8s.io"
                                for v in ("v1beta2", "v1beta1"))
WEBHOOK_KINDS = ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
RESOURCE_IN_USE = "kueue.x-k8s.io/resource-in-use"  # Kueue's controllers put it on queues and flavors


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------- the runner

class Runner:
    """Generator, finisher and recorder in one event loop, sharing one client."""

    def __init__(self, client: KubeClient, config: GeneratorConfig, prefix: str, timeout_s: float,
                 *, until_finished: bool = False) -> None:
        self.client, self.config, self.prefix, self.timeout_s = client, config, prefix, timeout_s
        # The floor writes no queue status: its run ends when every workload is seen finished.
        self.until_finished = until_finished
        self._finished: set[str] = set()
        self.recorder = Recorder()
        self.plans = queue_plans(config, prefix)
        self.created = 0
        self.generation_done = False
        self.done = asyncio.Event()
        self.timeline: list[tuple[float, int, int, int]] = []
        self.t0 = time.monotonic()
        self.started = self.t0  # when the manager was ready (see ``manager_started``)
        self._finishing: dict[str, asyncio.Task[None]] = {}
        self._admitted_at: dict[str, float] = {}
        self._finish_written_at: dict[str, float] = {}  # until the watch shows the finish
        self._evicting: set[str] = set()
        self._finish_phase: dict[str, str] = {}  # key -> where its latest finish stands
        self.workloads = Informer(client, res.WORKLOADS, label_selector=CLASS_LABEL)
        self.queues = Informer(client, res.CLUSTER_QUEUES, label_selector=CLASS_LABEL)
        self.workloads.add_handler(self._on_workload)
        self.queues.add_handler(self._on_queue)
        self.errors: list[str] = []

    def _now_ms(self) -> float:
        return (time.monotonic() - self.t0) * 1000.0

    # -- recorder + finisher --------------------------------------------------------------

    def _on_queue(self, event: EventType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event == EventType.DELETED:
            return
        self.recorder.queue_event(self._now_ms(), obj)
        self._check_done()

    def _check_done(self) -> None:
        if not self.generation_done:
            return
        if len(self._finished) >= self.created if self.until_finished else not self.recorder.expect_more():
            self.done.set()

    def _on_workload(self, event: EventType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event == EventType.DELETED:
            return
        evictions = len(self.recorder.evicted_at_ms)
        state = self.recorder.workload_event(self._now_ms(), obj)
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if len(self.recorder.evicted_at_ms) > evictions:
            # Where this runner's finish of the victim stood: a victim held past its run
            # time is one whose finish had not got through.
            self.recorder.victim_finish_phase[self._finish_phase.get(key, "not admitted")] += 1
        if state.finished and key in self._finish_written_at:
            written = self._finish_written_at.pop(key)
            self.recorder.finish_echo_ms.append((time.monotonic() - written) * 1000.0)
        if self.until_finished and state.finished and key not in self._finished:
            self._finished.add(key)
            self._check_done()
        if state.evicted and _condition(obj, "QuotaReserved"):
            self._cancel(key)
            if key not in self._evicting:
                self._evicting.add(key)
                asyncio.get_running_loop().create_task(self._finish_eviction(key))
            return
        if state.admitted and not state.finished:
            self._admitted_at.setdefault(key, time.monotonic())
            task = self._finishing.get(key)
            if task is None or task.done():  # a finish skipped before may be due again
                runtime_s = int((meta.get("labels") or {}).get(RUNNING_TIME_LABEL) or 0) / 1000.0
                self._finishing[key] = asyncio.get_running_loop().create_task(self._finish(key, runtime_s))
        elif not state.admitted:
            self._admitted_at.pop(key, None)
            self._finish_phase.pop(key, None)
            self._cancel(key)

    def _cancel(self, key: str) -> None:
        task = self._finishing.pop(key, None)
        if task is not None and not task.done():
            task.cancel()

    async def _finish(self, key: str, runtime_s: float) -> None:
        due = self._admitted_at.get(key, time.monotonic()) + runtime_s
        self._finish_phase[key] = "running"
        if due > time.monotonic():
            await asyncio.sleep(due - time.monotonic())
            self.recorder.finish_late_ms.append((time.monotonic() - due) * 1000.0)
        condition = {"type": "Finished", "status": "True", "reason": "ByTest", "message": "By test runner",
                     "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

        def change(current: dict[str, Any]) -> list[dict[str, Any]] | None:
            if not _condition(current, "Admitted") or _condition(current, "Finished"):
                return None
            return [{"op": "test", "path": "/metadata/resourceVersion",
                     "value": current["metadata"]["resourceVersion"]},
                    {"op": "add", "path": "/status/conditions/-", "value": condition}]
        started = time.monotonic()
        if await self._write_status(key, change, "finish"):
            done = time.monotonic()
            self.recorder.finish_writes_ms.append((done - started) * 1000.0)
            if _condition(self.workloads.get(key) or {}, "Finished"):
                self.recorder.finish_echo_ms.append(0.0)  # the watch was faster than the reply
            else:
                self._finish_written_at[key] = done

    async def _finish_eviction(self, key: str) -> None:
        """What a job controller does after an eviction: drop the quota reservation."""
        def change(current: dict[str, Any]) -> list[dict[str, Any]] | None:
            if not (_condition(current, "QuotaReserved") and _condition(current, "Evicted")):
                return None  # released already, or admitted again since
            status = dict(current.get("status") or {})
            status.pop("admission", None)
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            status["conditions"] = [c for c in status.get("conditions") or ()
                                    if c.get("type") not in ("QuotaReserved", "Admitted")] + [
                {"type": "QuotaReserved", "status": "False", "reason": "Pending",
                 "message": "Evicted by the test runner", "lastTransitionTime": now}]
            return [{"op": "test", "path": "/metadata/resourceVersion",
                     "value": current["metadata"]["resourceVersion"]},
                    {"op": "replace", "path": "/status", "value": status}]
        try:
            await self._write_status(key, change, "release")
        finally:
            self._evicting.discard(key)

    async def _write_status(self, key: str, change: Callable[[dict[str, Any]], list[dict[str, Any]] | None],
                            what: str) -> bool:
        """Patch a Workload's status, guarded by its resourceVersion; returns whether the
        patch was stored. The cached copy goes first; after a lost race the object is read
        back from the API, because on a loaded machine the watch can trail the writes of the
        manager by seconds, and a workload the runner gives up on holds its quota for the
        rest of the run."""
        ns, name = key.split("/", 1)
        current = self.workloads.get(key)
        for attempt in range(WRITE_ATTEMPTS):
            patch = None if current is None else change(current)
            if patch is None:
                self._phase(key, what, "not needed")
                return False
            self._phase(key, what, "writing" if attempt == 0 else "retrying")
            try:
                await self.client.patch(res.WORKLOADS.object_path(name, ns, "status"), patch, JSON_PATCH)
                self._phase(key, what, "written")
                return True
            except ApiError as exc:
                if exc.not_found:
                    return False  # a failed resourceVersion test is a 4xx too: read again below
            await asyncio.sleep(min(0.05 * 2 ** attempt, 1.0))
            try:
                current = await self.client.get(res.WORKLOADS.object_path(name, ns))
            except ApiError as exc:
                if exc.not_found:
                    return False
                current = self.workloads.get(key)
        self.errors.append(f"could not {what} {key} in {WRITE_ATTEMPTS} attempts")
        self._phase(key, what, "given up")
        return False

    def _phase(self, key: str, what: str, phase: str) -> None:
        if what == "finish":
            self._finish_phase[key] = f"finish {phase}"

    def stuck(self) -> str:
        """What keeps a run from ending: admitted and pending workloads by class, with the
        runner's own errors, so a timeout says whether the manager or the runner stalled."""
        admitted: Counter[str] = Counter()
        pending: Counter[str] = Counter()
        for obj in self.workloads.items():
            if _condition(obj, "Finished"):
                continue
            cls = str((obj["metadata"].get("labels") or {}).get(CLASS_LABEL, ""))
            (admitted if _condition(obj, "Admitted") else pending)[cls] += 1
        unfinished = sum(1 for k, t in self._finishing.items() if not t.done())
        return (f"admitted by class {dict(admitted)}, pending by class {dict(pending)}, "
                f"finish timers running {unfinished}, runner errors {self.errors[:5]}")

    # -- generator -----------------------------------------------------------------------

    async def _create(self, ref: res.ResourceRef, obj: dict[str, Any]) -> None:
        await self.client.create(ref.collection_path(obj["metadata"].get("namespace")), obj)

    async def _create_queue_objects(self, plan: QueuePlan) -> None:
        cq, ns, lq = plan.objects(self.config.flavor.name)
        await self._create(res.CLUSTER_QUEUES, cq)
        try:
            await self._create(res.NAMESPACES, ns)
        except ApiError as exc:
            if not exc.already_exists:  # kept from an earlier run (see ``cleanup``)
                raise
        await self._create(res.LOCAL_QUEUES, lq)

    async def _generate_queue(self, plan: QueuePlan) -> None:
        if not plan.has_backlog:  # a backlog's queue was made with it
            await self._create_queue_objects(plan)
        await self._generate_sets(plan, before_start=False)

    async def _generate_sets(self, plan: QueuePlan, *, before_start: bool) -> None:
        """The queue's workload sets created before the manager starts, or the others."""
        sets = plan.queues.workloads_sets
        await asyncio.gather(*(self._generate_set(plan, i) for i, s in enumerate(sets)
                               if s.before_start == before_start))

    async def create_backlog(self) -> None:
        """Create the ``createBeforeStart`` sets with their queues; call before the manager starts.

        Their workloads' waits and drain rate count from :meth:`manager_started`, so a
        manager's own start-up is not charged to them twice (see ``Recorder.start_ms``)."""
        async def backlog(plan: QueuePlan) -> None:
            await self._create_queue_objects(plan)
            await self._generate_sets(plan, before_start=True)
        plans = [p for p in self.plans if p.has_backlog]
        if plans:
            await asyncio.gather(*(backlog(p) for p in plans))
            _log(f"  backlog created: {self.created} workloads")

    def manager_started(self) -> None:
        self.started = time.monotonic()
        self.recorder.start_ms = self._now_ms()

    async def _generate_set(self, plan: QueuePlan, set_idx: int) -> None:
        wset = plan.queues.workloads_sets[set_idx]
        for n in range(wset.count):
            for ti, template in enumerate(wset.workloads):
                await asyncio.sleep(wset.creation_interval_ms / 1000.0)
                await self._create_workload(template, workload_name(template, set_idx, n, ti), plan.name)

    async def _create_workload(self, template: WorkloadTemplate, name: str, namespace: str) -> None:
        await self._create(res.WORKLOADS, workload_object(template, name, namespace, namespace))
        self.created += 1

    async def setup_cluster_scoped(self) -> None:
        if self.config.topology is not None:
            topology, nodes = topology_objects(self.config)
            for node in nodes:
                status = node.pop("status")
                await self._create(res.NODES, node)
                await self.client.patch(res.NODES.object_path(node["metadata"]["name"], None, "status"),
                                        {"status": status})
            await self._create(res.TOPOLOGIES, topology)
        await self._create(res.RESOURCE_FLAVORS, flavor_object(self.config))

    async def watch(self) -> None:
        """Start recording: the clock of every figure starts here."""
        self.workloads.start()
        self.queues.start()
        await asyncio.gather(self.workloads.wait_synced(60.0), self.queues.wait_synced(60.0))
        self.t0 = time.monotonic()

    async def run(self) -> float:
        """Generate, record until Kueue's stop condition; return the generation time (from
        the manager's start). :meth:`watch` must have been called."""
        sampler = asyncio.get_running_loop().create_task(self._sample())
        try:
            await asyncio.gather(*(self._generate_queue(p) for p in self.plans))
            gen_s = time.monotonic() - self.started
            self.generation_done = True
            _log(f"  generation done: {self.created} workloads in {gen_s:.1f}s")
            deadline = self.started + self.timeout_s
            while not self.done.is_set():
                self._check_done()
                if time.monotonic() > deadline:
                    raise TimeoutError(f"not finished after {self.timeout_s:.0f}s: "
                                       f"pending/admitted/finished {self.recorder.counts()}; {self.stuck()}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.done.wait(), CHECK_PERIOD_S)
            # The last Finished events may trail the queue status by a moment.
            grace = time.monotonic() + 5.0
            while self.recorder.counts()[2] < self.created and time.monotonic() < grace:
                await asyncio.sleep(0.1)
            return gen_s
        finally:
            sampler.cancel()
            for task in self._finishing.values():
                task.cancel()
            await self.stop_watching()

    async def stop_watching(self) -> None:
        await self.workloads.stop()
        await self.queues.stop()

    async def _sample(self) -> None:
        while True:
            self.timeline.append((round(time.monotonic() - self.t0, 2), *self.recorder.counts()))
            await asyncio.sleep(1.0)


def _condition(obj: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or ())


# ---------------------------------------------------------------------------------- cluster handling

async def cleanup(client: KubeClient, deadline_s: float = 180.0) -> None:
    """Delete what a run created (found by its cleanup label), except the Namespaces.

    Namespaces stay for the next run: deleting one waits for API discovery to be complete,
    and with the dev cluster's pykueue stopped its aggregated visibility API is not, so the
    namespaces would hang in Terminating. Their Workloads and LocalQueues are deleted.
    Kueue's controllers put their ``resource-in-use`` finalizer on the queues and the flavor;
    no manager runs now to take it off, so the deleted ones are released here.
    """
    selector = {"labelSelector": CLEANUP_LABEL}
    listed = await client.get(res.NAMESPACES.collection_path(), selector)
    names = [str(ns["metadata"]["name"]) for ns in listed.get("items") or ()]
    for ns in names:
        for ref in (res.WORKLOADS, res.LOCAL_QUEUES):
            with contextlib.suppress(ApiError):
                await client.request("DELETE", ref.collection_path(ns))
    cluster_scoped = (res.CLUSTER_QUEUES, res.RESOURCE_FLAVORS, res.TOPOLOGIES, res.NODES)
    for ref in cluster_scoped:
        with contextlib.suppress(ApiError):
            await client.request("DELETE", ref.collection_path(), query=selector)
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        left = await client.get(res.WORKLOADS.collection_path(), {"labelSelector": CLASS_LABEL, "limit": 1})
        remaining = [await _release_finalizers(client, ref, selector) for ref in cluster_scoped[:3]]
        namespaces = (await client.get(res.NAMESPACES.collection_path(), selector)).get("items") or ()
        terminating = [ns for ns in namespaces if (ns.get("status") or {}).get("phase") == "Terminating"]
        if not left.get("items") and not any(remaining) and not terminating:
            return
        await asyncio.sleep(1.0)
    raise TimeoutError("objects of an earlier run are still being deleted")


async def _release_finalizers(client: KubeClient, ref: res.ResourceRef, selector: dict[str, str]) -> int:
    """Take Kueue's finalizer off the deleted ``ref`` objects of a run; how many are left."""
    items = (await client.get(ref.collection_path(), selector)).get("items") or ()
    for item in items:
        meta = item["metadata"]
        finalizers = meta.get("finalizers") or []
        if meta.get("deletionTimestamp") and RESOURCE_IN_USE in finalizers:
            patch = {"metadata": {"resourceVersion": meta["resourceVersion"],
                                  "finalizers": [f for f in finalizers if f != RESOURCE_IN_USE]}}
            with contextlib.suppress(ApiError):  # a conflict is retried on the next pass
                await client.patch(ref.object_path(meta["name"], None), patch)
    return len(items)


async def resource_in_use(client: KubeClient, flavor: str) -> bool:
    """Kueue's ResourceFlavor controller has put its finalizer on ``flavor``."""
    try:
        obj = await client.get(res.RESOURCE_FLAVORS.object_path(flavor, None))
    except ApiError:
        return False
    return RESOURCE_IN_USE in ((obj.get("metadata") or {}).get("finalizers") or ())


def dev_cluster() -> tuple[Path, dict[str, dict[str, Any]]]:
    """Bring the dev cluster up (or reuse it) and return its kubeconfig and the records of
    its processes by name (``pid`` among them)."""
    from pykueue.devcluster import cluster

    result = cluster.up(report=_log)
    raw = json.loads(cluster.layout().state_file.read_text())
    return Path(result.kubeconfig), {str(p.get("name")): p for p in raw.get("processes") or ()}


def _dev_state() -> tuple[Path, dict[str, Any] | None, int | None]:
    """The dev cluster's kubeconfig, pykueue record and kube-apiserver pid."""
    kubeconfig, by_name = dev_cluster()
    apiserver = by_name.get("kube-apiserver")
    return kubeconfig, by_name.get("pykueue"), int(apiserver["pid"]) if apiserver else None


async def take_over(client: KubeClient, record: dict[str, Any] | None) -> None:
    """Stop the dev cluster's pykueue and unregister its webhooks: one manager, no webhooks."""
    from pykueue.devcluster import processes

    if record is not None:
        processes.stop(processes.ProcessRecord.from_json(record))
    for kind in WEBHOOK_KINDS:
        path = f"/apis/admissionregistration.k8s.io/v1/{kind}"
        for item in (await client.get(path)).get("items") or ():
            name = item["metadata"]["name"]
            if name.endswith("-dev"):
                await client.delete(f"{path}/{name}")
    # Nor an aggregated visibility API: with nobody serving it, discovery stays incomplete and
    # namespace deletion (the namespace controller needs full discovery) would hang.
    for api_service in VISIBILITY_API_SERVICES:
        with contextlib.suppress(ApiError):
            await client.delete(api_service)


def restore_dev_cluster() -> None:
    from pykueue.devcluster import cluster

    _log("restoring the dev cluster's pykueue (pykueue dev up)")
    cluster.up(report=_log)


# ---------------------------------------------------------------------------------- one run

@dataclass(frozen=True)
class RunSpec:
    """One measured run: which manager (``own``, ``kueue`` or ``external``), its client
    limits (none for ``external``) and the round it belongs to."""

    mode: str
    qps: float | None
    burst: int | None
    round_no: int = 1

    @property
    def manager(self) -> str:
        return {"kueue": KUEUE, "floor": FLOOR}.get(self.mode, PYKUEUE)

    @property
    def label(self) -> str:
        return run_label(self.manager, self.qps, self.burst, self.round_no)

    @property
    def tag(self) -> str:
        return f"-{self.label.replace(' ', '-').replace('/', '-').replace('#', '')}"


Setting = tuple[float | None, int | None]


def plan_runs(modes: list[str], settings: list[Setting], rounds: int) -> list[RunSpec]:
    """Per round, per setting, each manager in turn (pykueue first when comparing)."""
    return [RunSpec(mode, qps, burst, r) for r in range(1, rounds + 1) for qps, burst in settings
            for mode in modes]


ManagerFactory = Callable[[KubeClient, RunSpec], Manager]


async def run_once(kubeconfig: Path, config: GeneratorConfig, name: str, spec: RunSpec, make: ManagerFactory,
                   prefix: str, apiserver_pid: int | None = None) -> dict[str, Any]:
    client = await connect(kubeconfig, qps=RUNNER_QPS, burst=RUNNER_BURST)
    try:
        await cleanup(client)
        runner = Runner(client, config, prefix, TIMEOUT_S.get(name, DEFAULT_TIMEOUT_S),
                        until_finished=spec.mode == "floor")
        await runner.setup_cluster_scoped()
        manager = make(client, spec)
        await runner.watch()
        try:
            await runner.create_backlog()
            api_cpu0 = process_cpu_s(apiserver_pid) if apiserver_pid else 0.0
            machine0 = machine_cpu_times()
            runner_cpu0 = time.process_time()
            await manager.start()
            runner.manager_started()
        except BaseException:
            await runner.stop_watching()
            raise
        try:
            gen_s = await runner.run()
        finally:
            stats = await manager.stop()
        runner_cpu_s = time.process_time() - runner_cpu0
        api_cpu_s = process_cpu_s(apiserver_pid) - api_cpu0 if apiserver_pid else None
        machine_busy = busy_pct(machine0, machine_cpu_times())
        runner_requests = client.requests_issued
        await cleanup(client)
    finally:
        await client.close()
    rec = runner.recorder
    pending, admitted, finished = rec.counts()
    usage = rec.usage_pct()
    evicted_workloads, most_evictions = rec.evicted_workloads()
    metrics: dict[str, Any] = {
        "config": name, "qps": spec.qps, "burst": spec.burst, "wall_s": round(stats.wall_s, 2),
        # The checker's usage reads queue statuses, which the floor does not write.
        "usage_pct": None if spec.mode == "floor" else usage.get("cq", next(iter(usage.values()), 0.0)),
        "usage_pct_by_class": usage,
        "admitted_usage_pct": rec.admitted_usage_pct(),
        "tta_ms": rec.time_to_admission_ms(),
        # Percentiles over the workloads admitted; those never admitted are counted apart.
        "tta_p50_ms": rec.time_to_admission_pct_ms(0.5), "tta_p90_ms": rec.time_to_admission_pct_ms(0.9),
        "never_admitted": rec.never_admitted(), "admissions_per_min": rec.admissions_per_min(),
        # Kueue's kueue_admission_attempts_total (one per cycle), over the manager's wall.
        "scheduling_cycles": stats.scheduling_cycles,
        "cycles_per_min": None if stats.scheduling_cycles is None or not stats.wall_s
        else round(stats.scheduling_cycles * 60.0 / stats.wall_s, 1),
        # The config's fairSharing as the manager ran it (None: not a manager we configure).
        "fair_sharing": config.fair_sharing if spec.mode in ("own", "kueue") else None,
        "manager_cpu_s": round(stats.cpu_s, 2),
        "manager_mcpu": round(stats.cpu_s * 1000 / stats.wall_s) if stats.wall_s else None,
        "manager_peak_rss_mb": round(stats.peak_rss_mb, 1), "api_requests": stats.api_requests,
        "api_requests_by_verb": stats.api_requests_by_verb, "throttled_s": stats.throttled_s,
        "manager_stop_s": None if stats.stop_s is None else round(stats.stop_s, 2),
        "status_writes": stats.status_writes,
        "events": stats.events, "events_api_share": events_api_share(stats),
        "runner_requests": runner_requests, "generation_s": round(gen_s, 2),
        # This process (generator, finisher, recorder) over the run: a runner short of CPU
        # holds every workload admitted longer, whichever manager it measures.
        "runner_cpu_s": round(runner_cpu_s, 2),
        "workloads": runner.created, "admitted_ever": sum(1 for w in rec.workloads.values() if w.admitted_ms),
        "finished": finished, "still_pending": pending, "still_admitted": admitted,
        "evictions": rec.evictions(),
        "evicted_workloads": evicted_workloads, "most_evictions_of_one": most_evictions,
        "evictions_by_cause": rec.evictions_by_cause(), "preemption_trace": rec.preemption_trace(),
        # Every victim the scheduler chose, published or not (see ManagerStats).
        "preemptions_decided": stats.preemptions_decided,
        "withdrawn_reservations": stats.withdrawn_reservations,
        "errors": runner.errors[:5],
        # kube-apiserver's CPU over the run (runner's requests included: same for every manager).
        "apiserver_cpu_s": None if api_cpu_s is None else round(api_cpu_s, 2),
        # All of the machine's CPUs (everything on it, this benchmark included) over the run.
        "machine_busy_pct": machine_busy,
        "manager": spec.mode,
    }
    if api_cpu_s is not None and metrics["admitted_ever"]:
        metrics["apiserver_cpu_ms_per_admission"] = round(api_cpu_s * 1000 / metrics["admitted_ever"], 2)
    ref = REFERENCE.get(name)
    if ref:
        metrics["reference"] = ref
        metrics["ratio"] = ratio_to_reference(metrics, ref)
    return {"metrics": metrics, "timeline": runner.timeline}


def events_api_share(stats: ManagerStats) -> float | None:
    """The Events' part of the manager's API requests: the Events created and series updates
    sent (on a client of their own) over those plus the manager client's requests."""
    if stats.events is None or stats.api_requests is None:
        return None
    sent = stats.events["created"] + stats.events["series_updates"] + stats.events["failed"]
    total = sent + stats.api_requests
    return round(sent / total, 4) if total else None


def _env() -> dict[str, Any]:
    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "system": platform.system()}


@dataclass
class Bench:
    """What every run of one invocation shares: the cluster, the config, the Kueue builds."""

    kubeconfig: Path
    config: GeneratorConfig
    name: str
    prefix: str
    workdir: Path
    apiserver_pid: int | None
    external_pid: int | None
    kueue_version: str
    binaries: dict[tuple[float, int], Path]
    kueue_limiter: str
    kueue_log_level: int | None = None
    # A bearer token for pykueue's /metrics, minted when a run starts pykueue's manager.
    metrics_token: str | None = None

    def manager(self, client: KubeClient, spec: RunSpec) -> Manager:
        if spec.mode == "external":
            assert self.external_pid is not None
            return ExternalManager(self.external_pid)
        assert spec.qps is not None and spec.burst is not None
        if spec.mode == "own":
            return OwnManager(self.kubeconfig, spec.qps, spec.burst, self.workdir, spec.tag,
                              metrics_token=self.metrics_token, fair_sharing=self.config.fair_sharing)
        if spec.mode == "floor":
            return FloorManager(self.kubeconfig, self.config.flavor.name, spec.qps, spec.burst, self.workdir,
                                spec.tag)
        flavor = self.config.flavor.name

        async def ready() -> bool:
            return await resource_in_use(client, flavor)

        return KueueManager(self.binaries[(spec.qps, spec.burst)], self.kubeconfig, ready, self.workdir,
                            enable_tas=self.config.topology is not None, tag=spec.tag,
                            log_level=self.kueue_log_level)

    async def measure(self, specs: list[RunSpec], record: dict[str, Any] | None
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
        """Take the cluster over (unless measuring its own manager), then run ``specs`` in
        order; the run entries (the floor's among them), each manager run's own metrics,
        and the timelines by label."""
        import pykueue
        from pykueue.devcluster import cluster

        if any(spec.mode == "own" for spec in specs) and self.metrics_token is None:
            # The dev metrics reader's (it may only get /metrics), minted with the run's identity.
            self.metrics_token = await asyncio.to_thread(cluster.metrics_token, self.kubeconfig)
        if self.external_pid is None:
            client = await connect(self.kubeconfig)
            try:
                await take_over(client, record)
            finally:
                await client.close()
        entries: list[dict[str, Any]] = []
        tops: list[dict[str, Any]] = []
        timelines: dict[str, Any] = {}
        for spec in specs:
            _log(f"kueue_perf {self.name}: {self.config.workload_count} workloads, {spec.label}")
            result = await run_once(self.kubeconfig, self.config, self.name, spec, self.manager, self.prefix,
                                    self.apiserver_pid)
            m = result["metrics"]
            # pykueue's client (the floor's too) has one token bucket for all its requests.
            m["client_limiter"] = self.kueue_limiter if spec.manager == KUEUE else SHARED
            if spec.manager == KUEUE and self.kueue_log_level is not None:
                m["kueue_log_level"] = self.kueue_log_level  # its logging costs it CPU
            version = self.kueue_version if spec.manager == KUEUE else pykueue.__version__
            entries.append(run_entry(spec.manager, version, m, spec.label))
            if spec.manager != FLOOR:
                tops.append(m)
            timelines[spec.label] = result["timeline"]
            _log(f"  wall {m['wall_s']}s usage {m['usage_pct']}% (admitted {m['admitted_usage_pct']}%) "
                 f"tta {m['tta_ms']} p90 {m['tta_p90_ms']} cycles/min {m['cycles_per_min']} "
                 f"cpu {m['manager_cpu_s']}s rss {m['manager_peak_rss_mb']}MB "
                 f"requests {m['api_requests']} evictions {m['evictions']} "
                 f"(victims chosen {m['preemptions_decided']})")
        return entries, tops, timelines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kueue_perf",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--config", default=None,
                        help="baseline | large-scale | tas | quick, or a Kueue generator YAML file")
    parser.add_argument("--quick", action="store_true",
                        help="the scaled-down CI run (configs/kueue_perf/quick.yaml)")
    parser.add_argument("--qps", type=float, default=None,
                        help="manager client QPS (default: run 50 and 300)")
    parser.add_argument("--burst", type=int, default=None, help="manager client burst (with --qps)")
    parser.add_argument("--manager", choices=("own", "kueue", "external"), default="own",
                        help="own: run pykueue manager ourselves; kueue: run Kueue's minimalkueue; "
                             "external: measure the dev cluster's pykueue")
    parser.add_argument("--compare", action="store_true",
                        help="run pykueue's manager and Kueue's minimalkueue, alternating")
    parser.add_argument("--rounds", type=int, default=1, help="with --compare: rounds of both (default 1)")
    parser.add_argument("--floor", action="store_true",
                        help="also run the floor first in each setting and round: a stand-in that admits "
                             "every workload on sight (one status patch, no quota), the least time any "
                             "manager needs on this cluster (not with the TAS config)")
    parser.add_argument("--kueue-version", default=None,
                        help="Kueue release of minimalkueue, e.g. v0.19.2 (default: the pinned one)")
    parser.add_argument("--kueue-limiter", choices=LIMITERS, default=None,
                        help="minimalkueue's client budget: shared (default; one token bucket, as "
                             "Kueue's manager and pykueue have) or per-resource (Kueue's harness: "
                             "one per API kind)")
    parser.add_argument("--kueue-log-level", type=int, default=None, metavar="N",
                        help="minimalkueue's log verbosity (its scheduler logs each cycle and decision "
                             "at 2-3; it logs errors only by default); implies --keep-logs")
    parser.add_argument("--kubeconfig", default=None, help="default: the dev cluster's")
    parser.add_argument("--prefix", default="", help="prefix for cohort (and so queue) names")
    parser.add_argument("--output", default=None, help="result JSON file (default benchmarks/results/...)")
    parser.add_argument("--keep-logs", action="store_true",
                        help="keep the managers' logs after a successful run (their directory is printed)")
    return parser


def _usage_error(args: argparse.Namespace) -> str | None:
    if (args.qps is None) != (args.burst is None):
        return "give --qps and --burst together"
    if args.qps is not None and (args.qps <= 0 or args.burst < 1):
        return "--qps and --burst must be positive"
    if args.compare and args.manager != "own":
        return "--compare runs pykueue's manager and Kueue's; leave out --manager"
    if args.rounds < 1 or (args.rounds > 1 and not args.compare):
        return "--rounds N (N >= 1) goes with --compare"
    if args.floor and args.manager == "external":
        return "--floor sets the client budget; it does not go with --manager external"
    if args.kueue_log_level is not None and args.kueue_log_level < 1:
        return "--kueue-log-level N takes N >= 1 (higher logs more)"
    for flag, value in (("--kueue-version", args.kueue_version), ("--kueue-limiter", args.kueue_limiter),
                        ("--kueue-log-level", args.kueue_log_level)):
        if value and not (args.compare or args.manager == "kueue"):
            return f"{flag} goes with --manager kueue or --compare"
    return None


def _output_path(args: argparse.Namespace, name: str) -> Path:
    if args.output:
        return Path(args.output)
    if args.compare or args.manager == "kueue":
        kind = "compare" if args.compare else "kueue"
        if args.kueue_limiter == PER_RESOURCE:
            kind += f"-{PER_RESOURCE}"
        if args.kueue_log_level is not None:
            kind += f"-log{args.kueue_log_level}"
        limits = "" if args.qps is None else f"-{args.qps:g}-{args.burst}"
        return RESULTS / f"kueue_perf-{name}-{kind}{limits}.json"
    return RESULTS / f"kueue_perf-{name}.json"


def _kueue_binaries(version: str, specs: list[RunSpec], limiter: str,
                    fair_sharing: bool = False) -> dict[tuple[float, int], Path]:
    """minimalkueue of Kueue ``version`` for each client setting of the Kueue runs (built now),
    with fair sharing when the config asks for it."""
    binaries: dict[tuple[float, int], Path] = {}
    for spec in specs:
        if spec.mode == "kueue" and spec.qps is not None and spec.burst is not None:
            key = (spec.qps, spec.burst)
            if key not in binaries:
                binaries[key] = kueue_minimal.binary(version, spec.qps, spec.burst, limiter=limiter,
                                                     fair_sharing=fair_sharing, report=_log)
    return binaries


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    name = args.config or ("quick" if args.quick else "baseline")
    path = CONFIGS / f"{name}.yaml" if (CONFIGS / f"{name}.yaml").exists() else Path(name)
    if path != CONFIGS / f"{name}.yaml":
        name = path.stem
    problem = _usage_error(args)
    if problem is not None:
        print(f"kueue_perf: {problem}", file=sys.stderr)
        return 2
    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"kueue_perf: {exc}", file=sys.stderr)
        return 2
    settings: list[Setting] = [(args.qps, args.burst)] if args.qps is not None else list(QPS_SETTINGS)
    modes = ["own", "kueue"] if args.compare else [args.manager]
    if args.floor:
        if config.topology is not None:
            print("kueue_perf: --floor places no topology; it does not go with a TAS config", file=sys.stderr)
            return 2
        modes.insert(0, "floor")
    if args.manager == "external":
        settings = [(None, None)]
    specs = plan_runs(modes, settings, args.rounds)

    try:
        kueue_version = kueue_build.check_version(args.kueue_version) if args.kueue_version \
            else kueue_build.pinned()
    except BuildError as exc:
        print(f"kueue_perf: {exc}", file=sys.stderr)
        return 2
    limiter = args.kueue_limiter or SHARED
    try:
        binaries = _kueue_binaries(kueue_version, specs, limiter, config.fair_sharing) \
            if "kueue" in modes else {}
    except BuildError as exc:
        print(f"kueue_perf: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1

    with contextlib.ExitStack() as held:
        if args.kubeconfig is None:
            try:
                held.enter_context(holding_dev_cluster("kueue_perf"))
            except DevClusterUnavailable as exc:
                print(f"kueue_perf: {exc} (or give --kubeconfig)", file=sys.stderr)
                return 1
        return _run(args, config, name, specs, (kueue_version, binaries, limiter))


def _run(args: argparse.Namespace, config: GeneratorConfig, name: str, specs: list[RunSpec],
         builds: tuple[str, dict[tuple[float, int], Path], str]) -> int:
    """Measure ``specs`` on the cluster and write the result (the dev cluster held if ours)."""
    kueue_version, binaries, limiter = builds
    kubeconfig, record, apiserver_pid = _dev_state() if args.kubeconfig is None \
        else (Path(args.kubeconfig), None, None)
    external_pid: int | None = None
    if args.manager == "external":
        if record is None:
            print("kueue_perf: --manager external needs the dev cluster's pykueue process", file=sys.stderr)
            return 2
        external_pid = int(record["pid"])

    # The managers' logs; kept when a run fails (the error names them), removed otherwise.
    workdir = Path(tempfile.mkdtemp(prefix="kueue-perf-"))
    bench = Bench(kubeconfig, config, name, args.prefix, workdir, apiserver_pid, external_pid,
                  kueue_version, binaries, limiter, args.kueue_log_level)
    try:
        entries, tops, timelines = asyncio.run(bench.measure(specs, record))
    except (ApiError, RuntimeError, TimeoutError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        print(f"kueue_perf: {type(exc).__name__}: {first} (manager logs in {workdir})", file=sys.stderr)
        return 1
    finally:
        if external_pid is None and args.kubeconfig is None:
            restore_dev_cluster()
    if args.keep_logs or args.kueue_log_level is not None:
        print(f"kueue_perf: manager logs kept in {workdir}", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)

    metrics = summary(entries, tops[top_index([e for e in entries if e["manager"] != FLOOR])])
    result = {"benchmark": "kueue_perf", "metrics": metrics, "env": _env()}
    out = _output_path(args, name)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**result, "timelines": timelines}, indent=1) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
