"""The managers ``kueue_perf`` measures: pykueue's, Kueue's ``minimalkueue``, the floor, or a running one.

The ones it starts are child processes, so their CPU seconds come from ``wait4`` (as Kueue's
runner takes ``minimalkueue.stats.yaml``), and their wall time runs from the start of the
process to its exit. Peak RSS is the process' ``VmHWM`` read just before the stop signal:
``wait4``'s ``ru_maxrss`` is not used because Linux carries the spawning process' own
peak over ``exec`` into it (a benchmark holding 15,000 Workloads would floor every
manager's figure at its own size). All are started the same way: with the cluster's
kubeconfig, waited for until they work, and stopped by a signal at the end of the run.

* pykueue: ``pykueue manager`` without webhooks or leader election, ``clientConnection``
  from the run's QPS/burst (and ``fairSharing`` when the generator config asks for it);
  ready when ``/readyz`` answers; API requests from the count it logs on shutdown; its
  ``/metrics`` (status-write timings, scheduling cycles) read with a bearer token that may
  ``get /metrics``, which it asks kube-apiserver about.
* the floor (``kueue_perf_floor``): admits every workload on sight; ready when it logs so;
  API requests from the same shutdown line as pykueue's.
* Kueue: ``minimalkueue`` (client limits compiled in, see ``devcluster.kueue_minimal``);
  it serves no health probe, so it counts as ready once its metrics server answers and its
  ResourceFlavor controller has put Kueue's finalizer on the run's flavor (its caches are
  synced and its controllers run); stopped with SIGINT like Kueue's runner does; API
  requests from client-go's ``rest_client_requests_total`` and scheduling cycles from
  ``kueue_admission_attempts_total`` on its metrics port (``--metricsPort``), read just
  before the stop.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchmarks.kueue_perf_floor import READY_LINE
from pykueue.kube.workqueue import URGENT_SUFFIX

HERE = Path(__file__).resolve().parent
READY_DEADLINE_S = 60.0
STOP_DEADLINE_S = 30.0
# The last metrics page of a run: at large scale pykueue renders 1,000 queues' series (about
# 22 MB) on a busy machine, and a read with the probes' 5 s timeout failed there.
SCRAPE_TIMEOUT_S = 120.0
REQUESTS_LINE = re.compile(r"shutting down: (\d+) API requests (\{.*?\}), ([\d.]+)s throttled")
# The Event recorder's tally, logged by pykueue on its way out (kube.events.EventRecorder.summary).
EVENTS_LINE = re.compile(r"events: (\d+) events recorded, (\d+) created, (\d+) series updates, "
                         r"(\d+) rate-limited, (\d+) dropped on a full queue, (\d+) failed")
EVENT_COUNTS = ("recorded", "created", "series_updates", "rate_limited", "dropped", "failed")
_CLIENT_REQUESTS = re.compile(r"^rest_client_requests_total\{([^}]*)\}\s+(\S+)", re.MULTILINE)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
STATUS_QUEUE = "workload-status"  # the name of pykueue's status-write work queue
# Kueue's default fairSharing.preemptionStrategies (the v1beta2 Configuration requires the list).
FAIR_SHARING_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


@dataclass
class ManagerStats:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    api_requests: int | None = None
    api_requests_by_verb: dict[str, int] = field(default_factory=dict)
    throttled_s: float | None = None
    stop_s: float | None = None  # from the stop signal to the exit (part of wall_s)
    # pykueue's Workload status writes: count, mean write and mean wait for a writer per lane, ms.
    status_writes: dict[str, float | None] | None = None
    # Victims its scheduler chose: Kueue's kueue_preempted_workloads_total, plus for pykueue
    # the reservations it took back unpublished (which that counter does not see).
    preemptions_decided: int | None = None
    # pykueue's Events: recorded, created, series updates, rate-limited, dropped, failed.
    events: dict[str, int] | None = None
    withdrawn_reservations: int | None = None
    # Scheduling cycles: Kueue's kueue_admission_attempts_total, read at the stop (see
    # ``scheduling_cycles``); None when the page was not read.
    scheduling_cycles: int | None = None


class Manager(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> ManagerStats: ...


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str, token: str | None = None, timeout_s: float = 5.0) -> str | None:
    """The body of a 200 answer (with ``Authorization: Bearer token`` when given), else None."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            return resp.read().decode(errors="replace") if resp.status == 200 else None
    except OSError:
        return None


def peak_rss_mb(pid: int) -> float | None:
    """The high-water mark of a live process' own memory (``VmHWM``), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds a live process has used (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _sum_and_count(metrics_text: str, stat: str, queue: str) -> tuple[float, float] | None:
    values = []
    for part in ("sum", "count"):
        series = rf'^workqueue_{stat}_duration_seconds_{part}\{{name="{re.escape(queue)}"\}}'
        match = re.search(series + r"\s+(\S+)", metrics_text, re.MULTILINE)
        if match is None:
            return None
        values.append(float(match.group(1)))
    return values[0], values[1]


def _mean_ms(pair: tuple[float, float] | None) -> float | None:
    return round(pair[0] * 1000 / pair[1], 1) if pair is not None and pair[1] else None


def status_write_timings(metrics_text: str, queue: str = STATUS_QUEUE) -> dict[str, float | None] | None:
    """A work queue's ``count`` of keys processed, ``mean_write_ms``, and the mean wait for a
    worker of its urgent lane (admissions, evictions, finishes: ``urgent_mean_wait_ms``)
    and of the other (pending notices: ``other_mean_wait_ms``), from the
    ``workqueue_*_duration_seconds`` histograms' sums and counts."""
    work = _sum_and_count(metrics_text, "work", queue)
    if work is None or not work[1]:
        return None
    return {"count": work[1], "mean_write_ms": _mean_ms(work),
            "urgent_mean_wait_ms": _mean_ms(_sum_and_count(metrics_text, "queue", queue + URGENT_SUFFIX)),
            "other_mean_wait_ms": _mean_ms(_sum_and_count(metrics_text, "queue", queue))}


def machine_cpu_times() -> tuple[int, int]:
    """(busy, total) clock ticks of all the machine's CPUs so far (``/proc/stat``)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is counted inside user already
    return total - idle, total


def busy_pct(before: tuple[int, int], after: tuple[int, int]) -> float | None:
    """How busy the machine's CPUs were between two ``machine_cpu_times`` readings, in %."""
    total = after[1] - before[1]
    return round((after[0] - before[0]) * 100 / total, 1) if total > 0 else None


def counter_total(metrics_text: str, name: str) -> int | None:
    """The sum of a counter's series on a metrics page (None: the page has none)."""
    values = re.findall(rf"^{re.escape(name)}(?:\{{[^}}]*\}})?\s+(\S+)", metrics_text, re.MULTILINE)
    return round(sum(float(v) for v in values)) if values else None


def preemption_counts(metrics_text: str, withdrawals: bool) -> tuple[int, int | None]:
    """(victims the scheduler chose, of which taken back unpublished) from a manager's page;
    the second only for a manager that withdraws (pykueue)."""
    preempted = counter_total(metrics_text, "kueue_preempted_workloads_total") or 0
    if not withdrawals:
        return preempted, None
    withdrawn = counter_total(metrics_text, "pykueue_withdrawn_reservations_total") or 0
    return preempted + withdrawn, withdrawn


ADMISSION_ATTEMPTS = "kueue_admission_attempts_total"


def scheduling_cycles(metrics_text: str) -> int:
    """Scheduling cycles a manager ran, from its ``kueue_admission_attempts_total`` (all
    ``result`` series; 0 when it has none yet). Kueue's scheduler adds one per cycle that
    got heads (a cycle whose cache snapshot failed is not counted); pykueue's manager adds
    one per cycle whose heads it decided on (every head gets a decision, so: every cycle
    with heads). Admissions of followers, which pykueue takes after a queue's admitted head
    in the same cycle, are part of that one cycle. The two counts so mean the same."""
    return counter_total(metrics_text, ADMISSION_ATTEMPTS) or 0


def client_requests(metrics_text: str) -> tuple[int, dict[str, int]]:
    """Total and per-method (lower case) of client-go's ``rest_client_requests_total``."""
    by_method: dict[str, int] = {}
    for labels, value in _CLIENT_REQUESTS.findall(metrics_text):
        method = dict(_LABEL.findall(labels)).get("method", "").lower() or "unknown"
        by_method[method] = by_method.get(method, 0) + int(float(value))
    return sum(by_method.values()), dict(sorted(by_method.items()))


class _ChildProcess:
    """A manager we start: spawned with its output in a log, reaped with ``wait4``."""

    def __init__(self, name: str, log_path: Path) -> None:
        self.name, self.log_path = name, log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0

    def spawn(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.started = time.monotonic()
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=HERE.parent, env=env)

    async def wait_ready(self, ready: Callable[[], Awaitable[bool]]) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + READY_DEADLINE_S
        while not await ready():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}) before it was ready; "
                                   f"see {self.log_path}")
            if time.monotonic() > deadline:
                await self.reap(signal.SIGKILL)
                raise RuntimeError(f"{self.name} was not ready after {READY_DEADLINE_S:.0f}s; "
                                   f"see {self.log_path}")
            await asyncio.sleep(0.2)

    async def scrape_and_reap(self, metrics_port: int, sig: int,
                              token: str | None = None) -> tuple[ManagerStats, str | None]:
        """Its metrics page (read with ``token`` when given), then :meth:`reap`. The peak RSS
        is read before the scrape and the wall leaves the scrape out: rendering a page of
        thousands of series is a peak and a wait of its own that the run did not need (Kueue's
        harness reads no page)."""
        assert self.proc is not None
        hwm = peak_rss_mb(self.proc.pid)
        began = time.monotonic()
        text = await asyncio.to_thread(http_get, f"http://127.0.0.1:{metrics_port}/metrics", token,
                                       SCRAPE_TIMEOUT_S)
        return await self.reap(sig, hwm, time.monotonic() - began), text

    async def reap(self, sig: int, hwm: float | None = None, left_out_s: float = 0.0) -> ManagerStats:
        """Signal the process and wait for its exit (killing it after a deadline); ``hwm``:
        its peak RSS as read before (else read now); ``left_out_s``: time not to count in
        its wall."""
        assert self.proc is not None
        pid = self.proc.pid
        # Peak RSS from the process' own memory map, read before it exits: rusage's ru_maxrss
        # also counts the memory of this (forking) process at exec time, which would floor it.
        if hwm is None:
            hwm = peak_rss_mb(pid)
        signalled = time.monotonic()
        self.proc.send_signal(sig)

        def wait() -> tuple[int, int, Any]:
            return os.wait4(pid, 0)

        try:
            _, _, usage = await asyncio.wait_for(asyncio.to_thread(wait), STOP_DEADLINE_S)
        except TimeoutError:
            self.proc.kill()
            _, _, usage = await asyncio.to_thread(wait)
        self.proc.returncode = 0  # reaped here: Popen must not wait for it again
        now = time.monotonic()
        rss = hwm if hwm is not None else usage.ru_maxrss / 1024.0
        return ManagerStats(now - self.started - left_out_s, usage.ru_utime + usage.ru_stime, rss,
                            stop_s=now - signalled)


class OwnManager:
    """``pykueue manager`` as a child process; ``metrics_token`` reads its ``/metrics``."""

    def __init__(self, kubeconfig: Path, qps: float, burst: int, workdir: Path, tag: str = "",
                 metrics_token: str | None = None, *, fair_sharing: bool = False) -> None:
        self.kubeconfig, self.qps, self.burst, self.workdir = kubeconfig, qps, burst, workdir
        self.metrics_token = metrics_token
        self.fair_sharing = fair_sharing
        self.child = _ChildProcess("pykueue manager", workdir / f"pykueue-qps{int(qps)}{tag}.log")
        self.metrics_port = 0

    def configuration(self) -> dict[str, Any]:
        """The Kueue Configuration it runs with: no leader election, the run's client limits,
        and with ``fair_sharing`` Kueue's fair sharing with its default preemption strategies
        (in v1beta2 the section's presence turns it on)."""
        config: dict[str, Any] = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                                  "namespace": "kueue-system", "leaderElection": {"leaderElect": False},
                                  "clientConnection": {"qps": self.qps, "burst": self.burst}}
        if self.fair_sharing:
            config["fairSharing"] = {"preemptionStrategies": list(FAIR_SHARING_STRATEGIES)}
        return config

    async def start(self) -> None:
        path = self.child.log_path.with_suffix(".yaml")
        path.write_text(json.dumps(self.configuration()))
        health = free_port()
        self.metrics_port = free_port()
        self.child.spawn([sys.executable, "-m", "pykueue", "manager", "--kubeconfig", str(self.kubeconfig),
                          "--config", str(path), "--no-leader-elect", "--log-level", "INFO",
                          "--metrics-bind-address", f"127.0.0.1:{self.metrics_port}",
                          "--health-probe-bind-address", f"127.0.0.1:{health}"])
        url = f"http://127.0.0.1:{health}/readyz"

        async def ready() -> bool:
            return await asyncio.to_thread(http_get, url) is not None

        await self.child.wait_ready(ready)

    async def stop(self) -> ManagerStats:
        stats, text = await self.child.scrape_and_reap(self.metrics_port, signal.SIGTERM, self.metrics_token)
        stats = _with_logged_requests(stats, self.child.log_path)
        if text is None:  # say so: a refused scrape would otherwise only show as missing timings
            print(f"kueue_perf: pykueue's /metrics could not be read; no status-write timings "
                  f"(see {self.child.log_path})", file=sys.stderr)
        if text is not None:
            stats.status_writes = status_write_timings(text)
            stats.preemptions_decided, stats.withdrawn_reservations = preemption_counts(text, True)
            stats.scheduling_cycles = scheduling_cycles(text)
        return stats


def _with_logged_requests(stats: ManagerStats, log_path: Path) -> ManagerStats:
    """Add the API requests (and Events) a pykueue-client process logged on its way out."""
    text = log_path.read_text(errors="replace")
    events = EVENTS_LINE.search(text)
    if events:
        stats.events = dict(zip(EVENT_COUNTS, (int(g) for g in events.groups()), strict=True))
    match = REQUESTS_LINE.search(text)
    if match:
        stats.api_requests = int(match.group(1))
        stats.api_requests_by_verb = {str(k): int(v) for k, v in
                                      json.loads(match.group(2).replace("'", '"')).items()}
        stats.throttled_s = float(match.group(3))
    return stats


class FloorManager:
    """``benchmarks.kueue_perf_floor`` as a child process: admits on sight, no quota."""

    def __init__(self, kubeconfig: Path, flavor: str, qps: float, burst: int, workdir: Path,
                 tag: str = "") -> None:
        self.kubeconfig, self.flavor, self.qps, self.burst = kubeconfig, flavor, qps, burst
        self.child = _ChildProcess("floor", workdir / f"floor{tag}.log")

    async def start(self) -> None:
        self.child.spawn([sys.executable, "-m", "benchmarks.kueue_perf_floor", "--kubeconfig",
                          str(self.kubeconfig), "--flavor", self.flavor, "--qps", str(self.qps),
                          "--burst", str(self.burst)])

        async def ready() -> bool:
            return READY_LINE in self.child.log_path.read_text(errors="replace")

        await self.child.wait_ready(ready)

    async def stop(self) -> ManagerStats:
        return _with_logged_requests(await self.child.reap(signal.SIGTERM), self.child.log_path)


class KueueManager:
    """Kueue's ``minimalkueue`` as a child process; ``ready`` says when its controllers work."""

    def __init__(self, binary: Path, kubeconfig: Path, ready: Callable[[], Awaitable[bool]], workdir: Path,
                 *, enable_tas: bool = False, tag: str = "", log_level: int | None = None) -> None:
        self.binary, self.kubeconfig, self.ready, self.enable_tas = binary, kubeconfig, ready, enable_tas
        self.log_level = log_level
        self.child = _ChildProcess("minimalkueue", workdir / f"minimalkueue{tag}.log")
        self.metrics_port = 0

    async def start(self) -> None:
        self.metrics_port = free_port()
        argv = [str(self.binary), "--kubeconfig", str(self.kubeconfig),
                "--metricsPort", str(self.metrics_port)]
        if self.enable_tas:
            argv.append("--enableTAS")
        if self.log_level is not None:  # minimalkueue logs errors only unless told (zap's flag)
            argv.append(f"--zap-log-level={self.log_level}")
        self.child.spawn(argv, env={**os.environ, "KUBECONFIG": str(self.kubeconfig)})
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"

        async def ready() -> bool:  # its own metrics server too: the finalizer alone could be old
            return await self.ready() and await asyncio.to_thread(http_get, url) is not None

        await self.child.wait_ready(ready)

    async def stop(self) -> ManagerStats:
        stats, text = await self.child.scrape_and_reap(self.metrics_port, signal.SIGINT)
        if text is not None:
            stats.api_requests, stats.api_requests_by_verb = client_requests(text)
            stats.preemptions_decided, _ = preemption_counts(text, False)
            stats.scheduling_cycles = scheduling_cycles(text)
        return stats


class ExternalManager:
    """A manager we did not start (the shared cluster's): CPU and RSS read from ``/proc``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.started = 0.0
        self.cpu0 = 0.0

    async def start(self) -> None:
        self.started, self.cpu0 = time.monotonic(), process_cpu_s(self.pid)

    async def stop(self) -> ManagerStats:
        hwm = peak_rss_mb(self.pid) or 0.0  # over the process' whole life
        return ManagerStats(time.monotonic() - self.started, process_cpu_s(self.pid) - self.cpu0, hwm)
