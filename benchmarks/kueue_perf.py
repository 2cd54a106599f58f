"""Kueue's scheduler scalability test, reproduced on the local control plane with pykueue.

Method (Kueue's ``test/performance/scheduler``, kept so the numbers compare): a manager
process under test with no webhooks, no job integrations at work and no leader election;
a runner that creates the queues, then Workloads directly (no Jobs, no pods) at each
workload set's ``creationIntervalMs``, sleeping before each create; a finisher that sets
``Finished`` ``runtimeMs`` after it saw a workload admitted and clears the quota
reservation of an evicted one; a recorder that timestamps watch events. The run ends when
generation is done and no Active ClusterQueue reports pending or reserving workloads;
then the manager is stopped and its wall time (process start to exit), CPU seconds and
peak RSS (``wait4`` rusage, like Kueue's ``minimalkueue.stats.yaml``) are taken. The
manager's API request count comes from its own client counter, logged on shutdown.

Manager modes: ``own`` (default) takes over a dev cluster: it stops the cluster's pykueue,
removes the dev webhook configurations (Kueue's harness runs none) and runs
``pykueue manager`` with ``clientConnection.qps/burst`` from ``--qps/--burst``; at the end
``pykueue dev up`` restores the cluster's own pykueue. ``external`` measures the manager
already running (the dev cluster's) from outside via ``/proc`` (for the shared CI cluster).

Without ``--qps`` both client settings run, Kueue's harness 50/100 and the production
default 300/500; the JSON line's top-level metrics are the 300/500 run, ``runs`` holds
both. ``--quick`` runs ``configs/kueue_perf/quick.yaml``. Results (with the
admitted/pending timeline) go to ``benchmarks/results/``; ``benchmarks.plot_kueue_perf``
renders the README table and the PNG from them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    workload_object,
)
from benchmarks.kueue_perf_recorder import Recorder
from kube import resources as res
from kube.client import JSON_PATCH, ApiError, KubeClient, connect
from kube.informer import EventType, Informer

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "configs" / "kueue_perf"
RESULTS = HERE / "results"
QPS_SETTINGS = ((50.0, 100), (300.0, 500))  # Kueue's harness; Kueue's production default
RUNNER_QPS, RUNNER_BURST = 1000.0, 2000  # the runner's own client, as envtest's in Kueue's runner
CHECK_PERIOD_S = 5.0
# Kueue's published means for the same configs (test/performance/scheduler/configs/*/rangespec.yaml).
REFERENCE: dict[str, dict[str, Any]] = {
    "baseline": {"wall_s": 351.116, "usage_pct": 55.9,
                 "tta_ms": {"small": 215468, "medium": 76768, "large": 16501}},
    "large-scale": {"wall_s": 1179.411, "usage_pct": 38.64,
                    "tta_ms": {"small": 700379, "medium": 256413, "large": 105604}},
    "tas": {"wall_s": 401.472, "usage_pct": 62.41, "tta_ms": {}},
}
TIMEOUT_S = {"large-scale": 1800.0, "tas": 1200.0, "quick": 150.0}
DEFAULT_TIMEOUT_S = 600.0
VISIBILITY_API_SERVICE = "/apis/apiregistration.k8s.io/v1/apiservices/v1beta2.visibility.kueue.x-k8s.io"
WEBHOOK_KINDS = ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
REQUESTS_LINE = re.compile(r"shutting down: (\d+) API requests (\{.*?\}), ([\d.]+)s throttled")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------- manager under test

@dataclass
class ManagerStats:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    api_requests: int | None = None
    api_requests_by_verb: dict[str, int] = field(default_factory=dict)
    throttled_s: float | None = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OwnManager:
    """``pykueue manager`` as a child process, so ``wait4`` gives its rusage."""

    def __init__(self, kubeconfig: Path, qps: float, burst: int, workdir: Path) -> None:
        self.kubeconfig, self.qps, self.burst, self.workdir = kubeconfig, qps, burst, workdir
        self.log_path = workdir / f"manager-qps{int(qps)}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0

    async def start(self) -> None:
        config = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                  "namespace": "kueue-system", "leaderElection": {"leaderElect": False},
                  "clientConnection": {"qps": self.qps, "burst": self.burst}}
        path = self.workdir / f"manager-qps{int(self.qps)}.yaml"
        path.write_text(json.dumps(config))
        health = _free_port()
        argv = [sys.executable, "-m", "pykueue", "manager", "--kubeconfig", str(self.kubeconfig),
                "--config", str(path), "--no-leader-elect", "--log-level", "INFO",
                "--metrics-bind-address", f"127.0.0.1:{_free_port()}",
                "--health-probe-bind-address", f"127.0.0.1:{health}"]
        self.started = time.monotonic()
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=HERE.parent)
        url = f"http://127.0.0.1:{health}/readyz"
        deadline = time.monotonic() + 60.0
        while not await asyncio.to_thread(_http_ok, url):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the manager did not become ready; see {self.log_path}")
            await asyncio.sleep(0.2)

    async def stop(self) -> ManagerStats:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        pid = self.proc.pid

        def reap() -> tuple[int, int, Any]:
            return os.wait4(pid, 0)

        try:
            _, _, usage = await asyncio.wait_for(asyncio.to_thread(reap), 30.0)
        except TimeoutError:
            self.proc.kill()
            _, _, usage = await asyncio.to_thread(reap)
        self.proc.returncode = 0
        wall = time.monotonic() - self.started
        stats = ManagerStats(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0)
        match = REQUESTS_LINE.search(self.log_path.read_text(errors="replace"))
        if match:
            stats.api_requests = int(match.group(1))
            stats.api_requests_by_verb = {str(k): int(v) for k, v in
                                          json.loads(match.group(2).replace("'", '"')).items()}
            stats.throttled_s = float(match.group(3))
        return stats


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds a live process has used (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ExternalManager:
    """A manager we did not start (the shared cluster's): CPU and RSS read from ``/proc``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.started = 0.0
        self.cpu0 = 0.0

    def _cpu(self) -> float:
        return process_cpu_s(self.pid)

    async def start(self) -> None:
        self.started, self.cpu0 = time.monotonic(), self._cpu()

    async def stop(self) -> ManagerStats:
        hwm = 0.0
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024.0  # over the process' whole life
        return ManagerStats(time.monotonic() - self.started, self._cpu() - self.cpu0, hwm)


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


# ---------------------------------------------------------------------------------- the runner

class Runner:
    """Generator, finisher and recorder in one event loop, sharing one client."""

    def __init__(self, client: KubeClient, config: GeneratorConfig, prefix: str, timeout_s: float) -> None:
        self.client, self.config, self.prefix, self.timeout_s = client, config, prefix, timeout_s
        self.recorder = Recorder()
        self.plans = queue_plans(config, prefix)
        self.created = 0
        self.generation_done = False
        self.done = asyncio.Event()
        self.timeline: list[tuple[float, int, int, int]] = []
        self.t0 = time.monotonic()
        self._finishing: dict[str, asyncio.Task[None]] = {}
        self._admitted_at: dict[str, float] = {}
        self._evicting: set[str] = set()
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
        if self.generation_done and not self.recorder.expect_more():
            self.done.set()

    def _on_workload(self, event: EventType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event == EventType.DELETED:
            return
        state = self.recorder.workload_event(self._now_ms(), obj)
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if state.evicted and _condition(obj, "QuotaReserved"):
            self._cancel(key)
            if key not in self._evicting:
                self._evicting.add(key)
                asyncio.get_running_loop().create_task(self._finish_eviction(key))
            return
        if state.admitted and not state.finished:
            self._admitted_at.setdefault(key, time.monotonic())
            if key not in self._finishing:
                runtime_s = int((meta.get("labels") or {}).get(RUNNING_TIME_LABEL) or 0) / 1000.0
                self._finishing[key] = asyncio.get_running_loop().create_task(self._finish(key, runtime_s))
        elif not state.admitted:
            self._admitted_at.pop(key, None)
            self._cancel(key)

    def _cancel(self, key: str) -> None:
        task = self._finishing.pop(key, None)
        if task is not None and not task.done():
            task.cancel()

    async def _finish(self, key: str, runtime_s: float) -> None:
        remaining = runtime_s - (time.monotonic() - self._admitted_at.get(key, time.monotonic()))
        if remaining > 0:
            await asyncio.sleep(remaining)
        ns, name = key.split("/", 1)
        condition = {"type": "Finished", "status": "True", "reason": "ByTest", "message": "By test runner",
                     "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        for _ in range(5):
            current = self.workloads.get(key)
            if current is None or not _condition(current, "Admitted") or _condition(current, "Finished"):
                return
            patch = [{"op": "test", "path": "/metadata/resourceVersion",
                      "value": current["metadata"]["resourceVersion"]},
                     {"op": "add", "path": "/status/conditions/-", "value": condition}]
            try:
                await self.client.patch(res.WORKLOADS.object_path(name, ns, "status"), patch, JSON_PATCH)
                return
            except ApiError as exc:
                if exc.not_found:
                    return
                await asyncio.sleep(0.05)  # a newer copy is on its way through the watch
        self.errors.append(f"could not finish {key}")

    async def _finish_eviction(self, key: str) -> None:
        """What a job controller does after an eviction: drop the quota reservation."""
        ns, name = key.split("/", 1)
        try:
            for _ in range(5):
                current = self.workloads.get(key)
                if current is None or not _condition(current, "QuotaReserved"):
                    return
                status = dict(current.get("status") or {})
                status.pop("admission", None)
                now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                status["conditions"] = [c for c in status.get("conditions") or ()
                                        if c.get("type") not in ("QuotaReserved", "Admitted")] + [
                    {"type": "QuotaReserved", "status": "False", "reason": "Pending",
                     "message": "Evicted by the test runner", "lastTransitionTime": now}]
                try:
                    await self.client.replace(res.WORKLOADS.object_path(name, ns, "status"),
                                              {**current, "status": status})
                    return
                except ApiError as exc:
                    if not exc.conflict:
                        return
                    await asyncio.sleep(0.05)
        finally:
            self._evicting.discard(key)

    # -- generator -----------------------------------------------------------------------

    async def _create(self, ref: res.ResourceRef, obj: dict[str, Any]) -> None:
        await self.client.create(ref.collection_path(obj["metadata"].get("namespace")), obj)

    async def _generate_queue(self, plan: QueuePlan) -> None:
        cq, ns, lq = plan.objects(self.config.flavor.name)
        await self._create(res.CLUSTER_QUEUES, cq)
        try:
            await self._create(res.NAMESPACES, ns)
        except ApiError as exc:
            if not exc.already_exists:  # kept from an earlier run (see ``cleanup``)
                raise
        await self._create(res.LOCAL_QUEUES, lq)
        await asyncio.gather(*(self._generate_set(plan, i) for i in range(len(plan.queues.workloads_sets))))

    async def _generate_set(self, plan: QueuePlan, set_idx: int) -> None:
        wset = plan.queues.workloads_sets[set_idx]
        for n in range(wset.count):
            for ti, template in enumerate(wset.workloads):
                await asyncio.sleep(wset.creation_interval_ms / 1000.0)
                await self._create_workload(template, f"{template.class_name}-{set_idx}-{n}-{ti}", plan.name)

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

    async def run(self) -> float:
        """Generate, record until Kueue's stop condition; return the generation time."""
        self.workloads.start()
        self.queues.start()
        await asyncio.gather(self.workloads.wait_synced(60.0), self.queues.wait_synced(60.0))
        self.t0 = time.monotonic()
        sampler = asyncio.get_running_loop().create_task(self._sample())
        try:
            await asyncio.gather(*(self._generate_queue(p) for p in self.plans))
            gen_s = time.monotonic() - self.t0
            self.generation_done = True
            _log(f"  generation done: {self.created} workloads in {gen_s:.1f}s")
            deadline = self.t0 + self.timeout_s
            while not self.done.is_set():
                self._check_done()
                if time.monotonic() > deadline:
                    raise TimeoutError(f"not finished after {self.timeout_s:.0f}s: "
                                       f"pending/admitted/finished {self.recorder.counts()}")
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
    """
    selector = {"labelSelector": CLEANUP_LABEL}
    listed = await client.get(res.NAMESPACES.collection_path(), selector)
    names = [str(ns["metadata"]["name"]) for ns in listed.get("items") or ()]
    for ns in names:
        for ref in (res.WORKLOADS, res.LOCAL_QUEUES):
            with contextlib.suppress(ApiError):
                await client.request("DELETE", ref.collection_path(ns))
    for ref in (res.CLUSTER_QUEUES, res.RESOURCE_FLAVORS, res.TOPOLOGIES, res.NODES):
        with contextlib.suppress(ApiError):
            await client.request("DELETE", ref.collection_path(), query=selector)
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        left = await client.get(res.WORKLOADS.collection_path(), {"labelSelector": CLASS_LABEL, "limit": 1})
        cqs = await client.get(res.CLUSTER_QUEUES.collection_path(), selector)
        namespaces = (await client.get(res.NAMESPACES.collection_path(), selector)).get("items") or ()
        terminating = [ns for ns in namespaces if (ns.get("status") or {}).get("phase") == "Terminating"]
        if not left.get("items") and not cqs.get("items") and not terminating:
            return
        await asyncio.sleep(1.0)
    raise TimeoutError("objects of an earlier run are still being deleted")


def _dev_state() -> tuple[Path, dict[str, Any] | None, int | None]:
    """Bring the dev cluster up (or reuse it) and return its kubeconfig, pykueue record and
    kube-apiserver pid."""
    from devcluster import cluster

    result = cluster.up(report=_log)
    raw = json.loads(cluster.layout().state_file.read_text())
    by_name = {p.get("name"): p for p in raw.get("processes") or ()}
    apiserver = by_name.get("kube-apiserver")
    return Path(result.kubeconfig), by_name.get("pykueue"), int(apiserver["pid"]) if apiserver else None


async def take_over(client: KubeClient, record: dict[str, Any] | None) -> None:
    """Stop the dev cluster's pykueue and unregister its webhooks: one manager, no webhooks."""
    from devcluster import processes

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
    with contextlib.suppress(ApiError):
        await client.delete(VISIBILITY_API_SERVICE)


def restore_dev_cluster() -> None:
    from devcluster import cluster

    _log("restoring the dev cluster's pykueue (pykueue dev up)")
    cluster.up(report=_log)


# ---------------------------------------------------------------------------------- one run

async def run_once(kubeconfig: Path, config: GeneratorConfig, name: str, qps: float | None, burst: int | None,
                   external_pid: int | None, prefix: str, workdir: Path,
                   apiserver_pid: int | None = None) -> dict[str, Any]:
    client = await connect(kubeconfig, qps=RUNNER_QPS, burst=RUNNER_BURST)
    try:
        await cleanup(client)
        runner = Runner(client, config, prefix, TIMEOUT_S.get(name, DEFAULT_TIMEOUT_S))
        await runner.setup_cluster_scoped()
        manager: OwnManager | ExternalManager
        if external_pid is None:
            assert qps is not None and burst is not None
            manager = OwnManager(kubeconfig, qps, burst, workdir)
        else:
            manager = ExternalManager(external_pid)
        api_cpu0 = process_cpu_s(apiserver_pid) if apiserver_pid else 0.0
        await manager.start()
        try:
            gen_s = await runner.run()
        finally:
            stats = await manager.stop()
        api_cpu_s = process_cpu_s(apiserver_pid) - api_cpu0 if apiserver_pid else None
        runner_requests = client.requests_issued
        await cleanup(client)
    finally:
        await client.close()
    rec = runner.recorder
    pending, admitted, finished = rec.counts()
    usage = rec.usage_pct()
    metrics: dict[str, Any] = {
        "config": name, "qps": qps, "burst": burst, "wall_s": round(stats.wall_s, 2),
        "usage_pct": usage.get("cq", next(iter(usage.values()), 0.0)), "usage_pct_by_class": usage,
        "tta_ms": rec.time_to_admission_ms(), "manager_cpu_s": round(stats.cpu_s, 2),
        "manager_mcpu": round(stats.cpu_s * 1000 / stats.wall_s) if stats.wall_s else None,
        "manager_peak_rss_mb": round(stats.peak_rss_mb, 1), "api_requests": stats.api_requests,
        "api_requests_by_verb": stats.api_requests_by_verb, "throttled_s": stats.throttled_s,
        "runner_requests": runner_requests, "generation_s": round(gen_s, 2),
        "workloads": runner.created, "admitted_ever": sum(1 for w in rec.workloads.values() if w.admitted_ms),
        "finished": finished, "still_pending": pending, "still_admitted": admitted,
        "evictions": rec.evictions(), "errors": runner.errors[:5],
        # kube-apiserver's CPU over the run (runner's requests included: same for every manager).
        "apiserver_cpu_s": None if api_cpu_s is None else round(api_cpu_s, 2),
        "manager": "own" if external_pid is None else "external",
    }
    if api_cpu_s is not None and metrics["admitted_ever"]:
        metrics["apiserver_cpu_ms_per_admission"] = round(api_cpu_s * 1000 / metrics["admitted_ever"], 2)
    ref = REFERENCE.get(name)
    if ref:
        metrics["reference"] = ref
        metrics["ratio"] = {
            "wall": round(metrics["wall_s"] / ref["wall_s"], 3),
            "usage": round(metrics["usage_pct"] / ref["usage_pct"], 3),
            "tta": {c: round(v / ref["tta_ms"][c], 3)
                    for c, v in metrics["tta_ms"].items() if c in ref["tta_ms"]},
        }
    return {"metrics": metrics, "timeline": runner.timeline}


def _env() -> dict[str, Any]:
    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "system": platform.system()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kueue_perf",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--config", default=None,
                        help="baseline | large-scale | tas | quick, or a Kueue generator YAML file")
    parser.add_argument("--quick", action="store_true",
                        help="the scaled-down CI run (configs/kueue_perf/quick.yaml)")
    parser.add_argument("--qps", type=float, default=None,
                        help="manager client QPS (default: run 50 and 300)")
    parser.add_argument("--burst", type=int, default=None, help="manager client burst (with --qps)")
    parser.add_argument("--manager", choices=("own", "external"), default="own",
                        help="own: run pykueue manager ourselves; external: measure the dev cluster's")
    parser.add_argument("--kubeconfig", default=None, help="default: the dev cluster's")
    parser.add_argument("--prefix", default="", help="prefix for cohort (and so queue) names")
    parser.add_argument("--output", default=None, help="result JSON file (default benchmarks/results/...)")
    args = parser.parse_args(argv)

    name = args.config or ("quick" if args.quick else "baseline")
    path = CONFIGS / f"{name}.yaml" if (CONFIGS / f"{name}.yaml").exists() else Path(name)
    if path != CONFIGS / f"{name}.yaml":
        name = path.stem
    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"kueue_perf: {exc}", file=sys.stderr)
        return 2
    if (args.qps is None) != (args.burst is None):
        print("kueue_perf: give --qps and --burst together", file=sys.stderr)
        return 2
    settings = [(args.qps, args.burst)] if args.qps is not None else list(QPS_SETTINGS)

    kubeconfig, record, apiserver_pid = _dev_state() if args.kubeconfig is None \
        else (Path(args.kubeconfig), None, None)
    external_pid: int | None = None
    if args.manager == "external":
        if record is None:
            print("kueue_perf: --manager external needs the dev cluster's pykueue process", file=sys.stderr)
            return 2
        external_pid = int(record["pid"])
        settings = [(None, None)]

    runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="kueue-perf-") as tmp:
        async def go() -> None:
            if external_pid is None:
                client = await connect(kubeconfig)
                try:
                    await take_over(client, record)
                finally:
                    await client.close()
            for qps, burst in settings:
                label = "external" if qps is None else f"{int(qps)}/{burst}"
                _log(f"kueue_perf {name}: {config.workload_count} workloads, manager {label}")
                runs[label] = await run_once(kubeconfig, config, name, qps, burst, external_pid,
                                             args.prefix, Path(tmp), apiserver_pid)
                m = runs[label]["metrics"]
                _log(f"  wall {m['wall_s']}s usage {m['usage_pct']}% tta {m['tta_ms']} "
                     f"cpu {m['manager_cpu_s']}s rss {m['manager_peak_rss_mb']}MB "
                     f"requests {m['api_requests']}")
        try:
            asyncio.run(go())
        finally:
            if external_pid is None and args.kubeconfig is None:
                restore_dev_cluster()

    last = runs[list(runs)[-1]]
    metrics = dict(last["metrics"])
    metrics["runs"] = {label: r["metrics"] for label, r in runs.items()}
    result = {"benchmark": "kueue_perf", "metrics": metrics, "env": _env()}
    out = Path(args.output) if args.output else RESULTS / f"kueue_perf-{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**result, "timelines": {label: r["timeline"] for label, r in runs.items()}},
                              indent=1) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
