"""Several pykueue replicas on the dev cluster behind one loopback "Service", for fault tests.

An install runs two replicas, leader election on, behind Services: kube-apiserver reaches
the admission webhooks and the visibility API of whichever replica is ready, so a replica
that restarts takes none of them down. The dev cluster registers one loopback address for
each instead, its single ``pykueue run``'s. (The extender is a process of its own, as in an
install: replacing pykueue leaves it and the TAS scheduler running.) With every webhook on
``failurePolicy: Fail``, that replica down would block pod creation and Workload status
writes cluster-wide, which is a property of the dev cluster, not of pykueue.

:class:`Replicas` therefore takes the dev cluster's pykueue over for a while: it stops it,
listens on its webhook and visibility addresses itself (:class:`LoopbackService`
forwards each connection to a ready replica, as a Service's endpoints would) and runs N
replicas with the same command line on ports of their own. Like a Deployment it starts a
replica again when it exits unasked (after a pause that grows while it keeps exiting) and
records the exit. :meth:`Replicas.restore` stops them and lets ``up`` start the cluster's own
pykueue again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykueue.devcluster import cluster, processes
from pykueue.devcluster.addons import PYKUEUE, PYKUEUE_NAMESPACE, REPO_ROOT
from pykueue.devcluster.components import apiserver_url
from pykueue.devcluster.health import StartupError, http_ok
from pykueue.devcluster.ports import LOOPBACK, free_ports

LEASE_NAME = "c1f6bfd2.kueue.x-k8s.io"
# Addresses kube-apiserver is configured with: served by the Service.
SERVICE_FLAGS = ("--webhook-bind-address", "--visibility-bind-address")
# Addresses only a client of one replica uses (probes, metrics, dashboard): one per replica.
OWN_FLAGS = ("--metrics-bind-address", "--health-probe-bind-address", "--dashboard-bind-address")
READY_DEADLINE_S = 120.0
_READINESS_POLL_S = 0.5
_SUPERVISE_POLL_S = 0.25
# A Deployment's pod that keeps exiting is started again after 1 s, 2 s, 4 s ... (kubelet's
# 10 s ... 5 min, scaled down so a test sees the restart), back to 1 s once it stayed up.
_RESTART_PAUSE_S = (1.0, 8.0)
_STAYED_UP_S = 30.0


@dataclass(frozen=True)
class ReplicaExit:
    """A replica that exited without being asked to (the supervisor started it again)."""

    replica: str
    code: int
    at: float  # time.time()
    log_tail: str


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


class Replica:
    """One ``pykueue run`` subprocess; :attr:`wanted` says whether it should be running."""

    def __init__(self, name: str, argv: Sequence[str], addresses: Mapping[str, str], log_path: Path,
                 env: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.addresses = dict(addresses)
        self.log_path = log_path
        self.env = dict(env or {})
        self.starts = 0
        self.wanted = False
        self.started_at = 0.0
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.RLock()

    @property
    def health_url(self) -> str:
        return f"http://{self.addresses['--health-probe-bind-address']}/readyz"

    @property
    def metrics_url(self) -> str:
        return f"http://{self.addresses['--metrics-bind-address']}/metrics"

    @property
    def pid(self) -> int | None:
        with self._lock:
            return None if self._proc is None else self._proc.pid

    def start(self) -> None:
        with self._lock:
            if self.running():
                return
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with self.log_path.open("ab") as log:
                log.write(f"--- {time.strftime('%H:%M:%S')} start #{self.starts + 1}\n".encode())
                log.flush()
                self._proc = subprocess.Popen(self.argv, cwd=REPO_ROOT, env={**os.environ, **self.env},
                                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            self.starts += 1
            self.wanted = True
            self.started_at = time.monotonic()

    def running(self) -> bool:
        with self._lock:
            return self._proc is not None and self._proc.poll() is None

    def ready(self) -> bool:
        return self.running() and http_ok(self.health_url, timeout_s=1.0)

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 30.0) -> int | None:
        """Send ``sig`` and wait for the exit (SIGKILL after ``timeout_s``); its exit code."""
        with self._lock:
            self.wanted = False
            proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def exited_unasked(self) -> int | None:
        """The exit code when the replica should run but its process has ended."""
        with self._lock:
            if self.wanted and self._proc is not None and self._proc.poll() is not None:
                return self._proc.returncode
            return None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])


class LoopbackService:
    """Listens on fixed loopback addresses (one per flag of :data:`SERVICE_FLAGS`) and pipes
    every connection to the same flag's address of a ready replica, taking them in turn
    (kube-proxy's spread); a replica that refuses is skipped for the next one. Runs an event
    loop of its own in a daemon thread."""

    def __init__(self, listen: Mapping[str, str], replicas: Sequence[Replica]) -> None:
        self.listen = dict(listen)
        self.replicas = list(replicas)
        self.connections: dict[str, int] = {r.name: 0 for r in replicas}
        self.refused = 0  # connections no replica took
        self._ready: set[str] = set()
        self._turn = itertools.count()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, name="loopback-service", daemon=True)
        self._thread.start()
        self._started.wait(30.0)
        if self._error is not None:
            raise StartupError(f"the loopback service could not listen: {self._error}")

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(10.0)

    def ready_replicas(self) -> set[str]:
        return set(self._ready)

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        servers: list[asyncio.Server] = []
        try:
            for flag, address in self.listen.items():
                host, port = split_address(address)
                servers.append(await asyncio.start_server(functools.partial(self._forward, flag), host, port,
                                                          reuse_address=True))
        except OSError as exc:
            self._error = exc
            self._started.set()
            for server in servers:
                server.close()
            return
        poller = asyncio.create_task(self._poll_readiness())
        self._started.set()
        await self._stopping.wait()
        poller.cancel()
        for server in servers:
            server.close()
        with contextlib.suppress(asyncio.CancelledError):
            await poller

    async def _poll_readiness(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            ready = await asyncio.gather(*(loop.run_in_executor(None, r.ready) for r in self.replicas))
            self._ready = {r.name for r, ok in zip(self.replicas, ready, strict=True) if ok}
            await asyncio.sleep(_READINESS_POLL_S)

    def _candidates(self) -> list[Replica]:
        """Ready replicas first, starting with the next in turn; then the others that run
        (a replica may serve before its probe says so, and no endpoint at all is worse)."""
        ready = [r for r in self.replicas if r.name in self._ready]
        if ready:
            shift = next(self._turn) % len(ready)
            ready = ready[shift:] + ready[:shift]
        return ready + [r for r in self.replicas if r not in ready and r.running()]

    async def _forward(self, flag: str, client_r: asyncio.StreamReader,
                       client_w: asyncio.StreamWriter) -> None:
        for replica in self._candidates():
            host, port = split_address(replica.addresses[flag])
            try:
                upstream_r, upstream_w = await asyncio.wait_for(asyncio.open_connection(host, port), 2.0)
            except (OSError, TimeoutError):
                continue
            self.connections[replica.name] += 1
            await asyncio.gather(_pipe(client_r, upstream_w), _pipe(upstream_r, client_w))
            return
        self.refused += 1
        client_w.close()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy until either side ends, then close the sink: TLS streams need no half-close."""
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        sink.close()


def admin_ssl_context() -> ssl.SSLContext:
    """TLS to the dev cluster's kube-apiserver as its admin (client certificate)."""
    lay = cluster.layout()
    context = ssl.create_default_context(cafile=str(lay.pem("ca")))
    context.load_cert_chain(str(lay.pem("admin")), str(lay.key("admin")))
    return context


def api_server() -> str:
    state = cluster.current_state()
    if state is None:
        raise StartupError("no dev cluster runs (`pykueue dev up` starts one)")
    return apiserver_url(state.ports)


def lease_holder(timeout_s: float = 2.0) -> str | None:
    """The holder of pykueue's Lease ("" when released), or None when the API does not answer."""
    url = f"{api_server()}/apis/coordination.k8s.io/v1/namespaces/{PYKUEUE_NAMESPACE}/leases/{LEASE_NAME}"
    try:
        with urllib.request.urlopen(url, context=admin_ssl_context(), timeout=timeout_s) as resp:
            lease: dict[str, Any] = json.loads(resp.read())
    except (OSError, ValueError):
        return None
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


class Replicas:
    """N replicas of the dev cluster's pykueue behind a :class:`LoopbackService`, supervised.

    ``env(i)`` adds environment variables for replica ``i`` (a fault hook's directory)."""

    def __init__(self, count: int, work_dir: Path, env: Callable[[int], Mapping[str, str]] | None = None,
                 report: Callable[[str], None] = print) -> None:
        self.count = count
        self.work_dir = work_dir
        self.env = env
        self.report = report
        self.replicas: list[Replica] = []
        self.exits: list[ReplicaExit] = []
        self.service: LoopbackService | None = None
        self._stop_supervising = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._held = contextlib.ExitStack()

    def take_over(self) -> None:
        """Stop the dev cluster's pykueue, serve its addresses and start the replicas; hold
        the cluster's lock until :meth:`restore`, so no ``up`` elsewhere starts its pykueue
        again meanwhile (nor runs against a cluster being faulted)."""
        self._held.enter_context(cluster.held())
        state = cluster.current_state()
        record = state.record(PYKUEUE) if state is not None else None
        if record is None or not processes.is_running(record):
            raise StartupError("the dev cluster runs no pykueue (`pykueue dev up` starts it)")
        flags = dict(itertools.pairwise(record.argv))
        argv = [sys.executable, *record.argv[1:]]
        listen = {flag: flags[flag] for flag in SERVICE_FLAGS if flag in flags}
        per_replica = [flag for flag in (*SERVICE_FLAGS, *OWN_FLAGS) if flag in flags]
        ports = iter(free_ports(len(per_replica) * self.count))
        for i in range(self.count):
            own = list(argv)
            addresses = {}
            for flag in per_replica:
                addresses[flag] = f"{LOOPBACK}:{next(ports)}"
                own[own.index(flag) + 1] = addresses[flag]
            name = f"replica-{i}"
            if "--webhook-cert-dir" in own:  # files each replica writes: not shared
                own[own.index("--webhook-cert-dir") + 1] = str(self.work_dir / name / "webhook-certs")
            env = dict(self.env(i)) if self.env is not None else {}
            self.replicas.append(Replica(name, own, addresses, self.work_dir / f"{name}.log", env))
        processes.stop(record)  # SIGTERM: it releases its Lease and frees the addresses
        self.service = LoopbackService(listen, self.replicas)
        self.service.start()
        for replica in self.replicas:
            replica.start()
        for replica in self.replicas:
            self.wait_ready(replica)
        self._supervisor = threading.Thread(target=self._supervise, name="replica-supervisor", daemon=True)
        self._supervisor.start()

    def wait_ready(self, replica: Replica, deadline_s: float = READY_DEADLINE_S) -> float:
        """Seconds until ``replica`` answers its readiness probe (the supervisor restarts it
        meanwhile if it exits)."""
        started = time.monotonic()
        while not replica.ready():
            if time.monotonic() - started > deadline_s:
                raise StartupError(f"{replica.name} not ready after {deadline_s:.0f}s:\n{replica.log_tail()}")
            time.sleep(0.2)
        return time.monotonic() - started

    def by_identity(self, identity: str | None) -> Replica | None:
        """The replica whose leader-election identity (``host_pid``) this is."""
        for replica in self.replicas:
            if identity and replica.pid is not None and identity.endswith(f"_{replica.pid}"):
                return replica
        return None

    def leader(self) -> Replica | None:
        return self.by_identity(lease_holder())

    def restart_control_plane(self) -> list[str]:
        """``cluster.restart_control_plane`` under the lock these replicas hold."""
        return cluster.restart_control_plane(report=self.report, lock=False)

    def intruder(self) -> processes.ProcessRecord | None:
        """The dev cluster's own pykueue when it runs again beside the replicas: a concurrent
        ``dev up`` restarts it, and it then competes for the Lease and takes the webhooks'
        registration to its own address."""
        state = cluster.current_state()
        record = state.record(PYKUEUE) if state is not None else None
        return record if record is not None and processes.is_running(record) else None

    def _supervise(self) -> None:
        quick_exits = {r.name: 0 for r in self.replicas}
        due: dict[str, float] = {}
        while not self._stop_supervising.wait(_SUPERVISE_POLL_S):
            for replica in self.replicas:
                if replica.name in due:
                    if time.monotonic() >= due[replica.name]:
                        del due[replica.name]
                        if replica.wanted:
                            replica.start()
                    continue
                code = replica.exited_unasked()
                if code is None:
                    continue
                stayed = time.monotonic() - replica.started_at
                quick_exits[replica.name] = 0 if stayed > _STAYED_UP_S else quick_exits[replica.name] + 1
                first, longest = _RESTART_PAUSE_S
                pause = min(first * 2 ** max(0, quick_exits[replica.name] - 1), longest)
                self.exits.append(ReplicaExit(replica.name, code, time.time(), replica.log_tail(15)))
                self.report(f"{replica.name} exited by itself ({code}) after {stayed:.0f}s; "
                            f"starting it again in {pause:.0f}s")
                due[replica.name] = time.monotonic() + pause

    def restore(self) -> None:
        """Stop supervising and the replicas (SIGTERM: the leader releases the Lease), close
        the service, and bring the dev cluster's own pykueue back."""
        self._stop_supervising.set()
        if self._supervisor is not None:
            self._supervisor.join(5.0)
        for replica in self.replicas:
            replica.stop()
        if self.service is not None:
            self.service.stop()
        self._held.close()
        cluster.up(report=self.report)
