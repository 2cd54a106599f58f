"""Bringing the dev cluster up, down, and reporting on it.

State lives in one directory (``<cache>/dev``): certificates, kubeconfigs, configs, the
etcd data, one log per component and ``state.json`` with the ports and the pid records
of everything started. Rules that keep it safe to call from scripts and tests:

* ``up`` is idempotent: with a cluster already running it only restarts components that
  died (same argv, same ports, same data) and re-applies the nodes and CRDs;
* a failed fresh start stops everything it started and leaves no state behind;
* ``down`` only signals pids recorded in the state file, and only if the recorded process
  start time still matches (``processes.is_running``);
* a file lock serialises concurrent ``up``/``down`` calls on one state directory.

Worker clusters (``up(workers=N)``, for MultiKueue) are more dev clusters of the same
shape, each in ``workers/worker-<i>/`` of the state directory with its own ports, state
file and processes, brought up by the same code under the manager's lock (``workers.py``
says what differs). Once started they are part of the dev cluster: a later ``up`` keeps
and repairs them, ``down`` stops them, ``status`` lists them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pykueue.devcluster import addons, autoscaler, identity, nodes, operators, workers
from pykueue.devcluster.build import binary_path, binary_paths, build, missing_binaries
from pykueue.devcluster.components import (
    Component,
    Extender,
    Layout,
    Ports,
    apiserver_url,
    components,
    write_pki_and_configs,
)
from pykueue.devcluster.health import StartupError, http_ok, wait_for
from pykueue.devcluster.paths import state_dir
from pykueue.devcluster.processes import ProcessRecord, is_running, spawn, stop
from pykueue.devcluster.versions import BINARIES
from pykueue.kube.blocking import BlockingClient
from pykueue.kube.client import connect

Report = Callable[[str], None]

STATE_VERSION = 2
COMPONENT_DEADLINE_S = 90.0
NODES_DEADLINE_S = 60.0


@dataclass
class ClusterState:
    binaries: dict[str, str]
    """Binary name -> the cached executable this cluster was started from."""
    ports: Ports
    extender: str | None
    processes: list[ProcessRecord] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"stateVersion": STATE_VERSION, "binaries": self.binaries,
                "ports": self.ports.to_json(), "extender": self.extender,
                "processes": [p.to_json() for p in self.processes]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClusterState:
        return cls({str(k): str(v) for k, v in data["binaries"].items()}, Ports.from_json(data["ports"]),
                   data.get("extender"), [ProcessRecord.from_json(p) for p in data["processes"]])

    def binary_paths(self) -> dict[str, Path]:
        return {name: Path(path) for name, path in self.binaries.items()}

    def record(self, name: str) -> ProcessRecord | None:
        return next((p for p in self.processes if p.name == name), None)


@dataclass(frozen=True)
class UpResult:
    kubeconfig: Path
    server: str
    reused: bool
    restarted: tuple[str, ...]
    recreated_nodes: tuple[str, ...]
    endpoints: addons.PykueueEndpoints
    seconds: float
    operators: tuple[operators.OperatorEndpoints, ...] = ()
    workers: tuple[workers.WorkerEndpoints, ...] = ()


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    pid: int
    running: bool
    log: str


@dataclass(frozen=True)
class StatusReport:
    up: bool
    kubeconfig: Path | None
    server: str | None
    components: tuple[ComponentStatus, ...]
    workers: tuple[StatusReport, ...] = ()
    name: str = "dev cluster"


def layout() -> Layout:
    return Layout(state_dir())


@contextlib.contextmanager
def _locked(lay: Layout) -> Iterator[None]:
    lay.root.mkdir(parents=True, exist_ok=True)
    lock_path = lay.root.parent / f".{lay.root.name}.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _load(lay: Layout) -> ClusterState | None:
    try:
        data = json.loads(lay.state_file.read_text())
    except FileNotFoundError:
        return None
    except ValueError:
        return None
    return ClusterState.from_json(data)


def _save(lay: Layout, state: ClusterState) -> None:
    tmp = lay.state_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(state.to_json(), indent=2))
    tmp.replace(lay.state_file)


# The name the dev cluster's own writes (nodes, CRDs, registrations) are applied under.
FIELD_MANAGER = "pykueue-dev"


def admin_client(lay: Layout, ports: Ports) -> BlockingClient:
    return BlockingClient.with_certificate(apiserver_url(ports), ca_file=lay.pem("ca"),
                                           cert_file=lay.pem("admin"), key_file=lay.key("admin"),
                                           field_manager=FIELD_MANAGER)


def metrics_token(kubeconfig: Path | None = None) -> str:
    """A fresh bearer token for pykueue's ``/metrics``: the dev metrics reader's
    (``identity.metrics_token``), minted with ``kubeconfig``'s identity (default: the dev
    cluster's admin). What tests and benchmarks that scrape pykueue send."""
    client = BlockingClient(connect(kubeconfig or layout().admin_kubeconfig), field_manager=FIELD_MANAGER)
    try:
        return identity.metrics_token(client)
    finally:
        client.close()


def health_check(component: Component, lay: Layout) -> Callable[[], bool]:
    if not component.health_url.startswith("https://"):
        return lambda: http_ok(component.health_url)
    if component.health_needs_client_cert:
        context = ssl.create_default_context(cafile=str(lay.pem("ca")))
        context.load_cert_chain(str(lay.pem("admin")), str(lay.key("admin")))
    else:
        context = ssl.create_default_context(cafile=str(lay.pem("ca")))
    return lambda: http_ok(component.health_url, context)


def _start(component: Component, lay: Layout) -> ProcessRecord:
    return spawn(component.name, component.argv, lay.logs / f"{component.name}.log", env=component.env)


def _start_all(comps: list[Component], lay: Layout, state: ClusterState, report: Report) -> None:
    """etcd and the API server one after the other; their clients together."""
    by_name = {c.name: c for c in comps}
    for name in ("etcd", "kube-apiserver"):
        record = _start(by_name[name], lay)
        state.processes.append(record)
        _save(lay, state)
        took = wait_for(f"{name} health", health_check(by_name[name], lay), COMPONENT_DEADLINE_S, record)
        report(f"  {name} ready in {took:.1f}s (pid {record.pid})")
    rest = [c for c in comps if c.name not in ("etcd", "kube-apiserver")]
    records = []
    for component in rest:
        record = _start(component, lay)
        state.processes.append(record)
        records.append(record)
    _save(lay, state)
    for component, record in zip(rest, records, strict=True):
        took = wait_for(f"{component.name} health", health_check(component, lay),
                        COMPONENT_DEADLINE_S, record)
        report(f"  {component.name} ready in {took:.1f}s (pid {record.pid})")


def _stop_all(state: ClusterState, report: Report) -> list[str]:
    stopped = []
    for record in reversed(state.processes):
        if stop(record):
            stopped.append(record.name)
            report(f"  stopped {record.name} (pid {record.pid})")
    return stopped


def _restart_dead(state: ClusterState, lay: Layout, report: Report) -> list[str]:
    comps = components(state.binary_paths(), lay, state.ports)
    restarted = []
    for component in comps:
        old = state.record(component.name)
        if old is not None and is_running(old):
            continue
        report(f"  {component.name} is not running; restarting it")
        record = _start(component, lay)
        state.processes = [p for p in state.processes if p.name != component.name] + [record]
        _save(lay, state)
        wait_for(f"{component.name} health", health_check(component, lay), COMPONENT_DEADLINE_S, record)
        restarted.append(component.name)
    return restarted


def _fresh_up(lay: Layout, extender: Extender | None, report: Report) -> ClusterState:
    missing = missing_binaries()
    if missing:
        # A first run on a fresh machine: build what is missing, with the build's progress.
        report(f"building the dev-cluster binaries once ({', '.join(missing)}); later runs reuse them")
        build(only=tuple(missing), report=report)
    binaries = binary_paths()
    # Leftovers of a cluster that is gone (no state file) are useless; start clean.
    for leftover in (lay.pki, lay.etcd_data, lay.kwok_home):
        shutil.rmtree(leftover, ignore_errors=True)
    ports = Ports.pick()
    write_pki_and_configs(lay, ports, extender)
    state = ClusterState({name: str(path) for name, path in binaries.items()}, ports,
                         None if extender is None else extender.url)
    _save(lay, state)
    report(f"starting control plane ({', '.join(sorted({p.parent.name for p in binaries.values()}))})")
    try:
        _start_all(components(binaries, lay, ports), lay, state, report)
    except BaseException:
        report("start-up failed; stopping what was started")
        _stop_all(state, report)
        lay.state_file.unlink(missing_ok=True)
        raise
    return state


def up(extender: Extender | None = None, report: Report = print,
       workers_wanted: int | None = None, with_autoscaler: bool = False) -> UpResult:
    """Start (or repair) the dev cluster; with ``workers_wanted``, that many worker clusters
    too (more are started, none is removed: ``down`` stops them all); ``with_autoscaler``:
    the cluster autoscaler too (kept from then on, see ``devcluster.autoscaler``)."""
    started = time.monotonic()
    lay = layout()
    with _locked(lay):
        result = _up_one(lay, extender, report, workers.MANAGER)
        if with_autoscaler or autoscaler.record(lay) is not None:
            client = admin_client(lay, _state_or_fail(lay).ports)
            autoscaler.ensure(client, lay, _tool("cluster-autoscaler", report), report)
        worker_results = []
        count = max(workers_wanted or 0, len(workers.existing(lay.root)))
        if count:
            client = admin_client(lay, _state_or_fail(lay).ports)
            for index in range(1, count + 1):
                wlay = Layout(workers.worker_root(lay.root, index))
                report(f"worker {index}: {'reusing' if wlay.state_file.exists() else 'starting'} {wlay.root}")
                wresult = _up_one(wlay, None, report, workers.WORKER)
                worker_results.append(workers.publish(client, index, wresult.kubeconfig, wresult.server))
    return replace(result, seconds=time.monotonic() - started, workers=tuple(worker_results))


def _state_or_fail(lay: Layout) -> ClusterState:
    state = _load(lay)
    if state is None:
        raise StartupError(f"no dev cluster state in {lay.root}")
    return state


def _up_one(lay: Layout, extender: Extender | None, report: Report, role: workers.Role) -> UpResult:
    started = time.monotonic()
    state = _load(lay)
    reused = state is not None
    restarted: list[str] = []
    if state is None:
        state = _fresh_up(lay, extender, report)
    else:
        report(f"reusing the running dev cluster in {lay.root}")
        if extender is not None and extender.url != state.extender:
            raise StartupError("the running dev cluster has a different scheduler extender "
                               f"({state.extender or 'none'}); run `pykueue dev down` first")
        restarted = _restart_dead(state, lay, report)
    client = admin_client(lay, state.ports)
    try:
        recreated = nodes.ensure_nodes(client)
        wait_for("8 kwok nodes to be Ready", lambda: nodes.all_nodes_ready(client), NODES_DEADLINE_S)
        crds = addons.install_crds(client)
        if crds:
            report(f"  CRDs installed: {len(crds)}")
        addons.wait_default_service_account(client)
        operator_endpoints = operators.start_operators(client, lay, _operator_binaries(state, report),
                                                       report, only=role.operators)
        endpoints = addons.start_pykueue(client, lay, config=role.config,
                                         with_tas_scheduler=role.tas_scheduler)
    except BaseException:
        if not reused:
            report("set-up failed; stopping what was started")
            _stop_all(state, report)
            lay.state_file.unlink(missing_ok=True)
        raise
    if recreated and reused:
        report(f"  restored nodes: {', '.join(recreated)}")
    return UpResult(lay.admin_kubeconfig, apiserver_url(state.ports), reused, tuple(restarted),
                    tuple(recreated), endpoints, time.monotonic() - started, tuple(operator_endpoints))


def _tool(name: str, report: Report) -> Path:
    """A binary ``dev up`` runs only on request, built now when missing."""
    path = binary_path(next(b for b in BINARIES if b.name == name))
    if not path.is_file():
        report(f"building {name} once; later runs reuse it")
        build(only=(name,), report=report)
    return path


def _operator_binaries(state: ClusterState, report: Report) -> dict[str, Path]:
    """The operators' executables: the ones the cluster was started from, or, for a cluster
    started before it ran operators, this checkout's (built now when missing)."""
    recorded = state.binary_paths()
    missing = [name for name in operators.BINARY_NAMES
               if name not in recorded and name in missing_binaries()]
    if missing:
        report(f"building the operators once ({', '.join(missing)}); later runs reuse them")
        build(only=tuple(missing), report=report)
    current = binary_paths()
    return {name: recorded.get(name, current[name]) for name in operators.BINARY_NAMES}


def down(report: Report = print) -> list[str]:
    lay = layout()
    with _locked(lay):
        stopped = []
        for root in workers.existing(lay.root):
            state = _load(Layout(root))
            if state is not None:
                stopped += [f"{root.name}/{name}" for name in _stop_all(state, report)]
        state = _load(lay)
        stopped += [] if state is None else _stop_all(state, report)
        shutil.rmtree(lay.root, ignore_errors=True)
    return stopped


def down_workers(report: Report = print) -> list[str]:
    """Stop the worker clusters only (and forget them), leaving the manager cluster running;
    their Secrets stay in the manager cluster."""
    lay = layout()
    stopped = []
    with _locked(lay):
        for root in reversed(workers.existing(lay.root)):
            state = _load(Layout(root))
            if state is not None:
                stopped += [f"{root.name}/{name}" for name in _stop_all(state, report)]
            shutil.rmtree(root, ignore_errors=True)
    return stopped


def current_state() -> ClusterState | None:
    """The recorded state of the dev cluster, or ``None`` when none was started."""
    return _load(layout())


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold the dev cluster's lock: ``up`` and ``down`` elsewhere wait until it is released.

    For a test that replaces part of the cluster for a while (pykueue by replicas of its own,
    see ``devcluster.replicas``): a concurrent ``up`` would start the replaced part again
    beside it, a ``down`` would stop the cluster under it.
    """
    with _locked(layout()):
        yield


def restart_control_plane(report: Report = print, *, lock: bool = True) -> list[str]:
    """Start again, with the same argv and data, the control-plane components (etcd,
    kube-apiserver, ...) that are not running, each once healthy; the names restarted.

    Only those: unlike ``up`` it leaves pykueue and the operators alone, so a fault test that
    stopped etcd or kube-apiserver while it runs pykueue replicas of its own can end the
    outage without a third pykueue being started beside them. ``lock=False`` when the caller
    already holds the lock (:func:`held`).
    """
    lay = layout()
    with _locked(lay) if lock else contextlib.nullcontext():
        return _restart_dead(_state_or_fail(lay), lay, report)


def status() -> StatusReport:
    lay = layout()
    report = _status_of(lay, "dev cluster")
    if report.server is None:
        return report
    worker_reports = tuple(_status_of(Layout(root), root.name) for root in workers.existing(lay.root))
    return replace(report, up=report.up and all(w.up for w in worker_reports), workers=worker_reports)


def _status_of(lay: Layout, name: str) -> StatusReport:
    state = _load(lay)
    if state is None:
        return StatusReport(False, None, None, (), name=name)
    comps = tuple(ComponentStatus(p.name, p.pid, is_running(p), p.log) for p in state.processes)
    all_up = bool(comps) and all(c.running for c in comps)
    return StatusReport(all_up, lay.admin_kubeconfig, apiserver_url(state.ports), comps, name=name)
