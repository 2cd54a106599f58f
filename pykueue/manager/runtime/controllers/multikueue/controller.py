"""The MultiKueue admission check controller (``kueue.x-k8s.io/multikueue``) of a manager cluster.

It plugs into the admission checks the core already runs: a ClusterQueue lists an
AdmissionCheck of this controller; the core reserves quota and leaves the check Pending;
this controller dispatches the Workload to the workers of the check's MultiKueueConfig and
writes the check's verdict into the Workload's status (Ready once a worker reserved it, Retry
when that worker was lost), which the queue manager reads back like any check controller's.
It also keeps the AdmissionCheck's and each MultiKueueCluster's ``Active`` condition.

It works in passes (leader only), each from a fresh snapshot: the local Workloads and jobs
from the queue manager's informers, MultiKueueClusters and MultiKueueConfigs listed, and per
worker the Workloads and jobs of this manager's origin (``connections``). What to do with each
Workload is :func:`manager.jobs.multikueue.dispatch.decide`; this module only carries it out.
Polling rather than remote watches keeps one code path for a worker that comes and goes, and
a pass costs a few LISTs per worker. A pass after a change comes at once (informer events
poke it); otherwise every ``PASS_INTERVAL_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON, meta
from pykueue.kube import resources as res
from pykueue.kube.client import REQUEST_ERRORS, ApiError, KubeClient
from pykueue.kube.informer import EventType, Informer
from pykueue.kube.resources import ResourceRef, object_key
from pykueue.manager.core.config import parse_duration
from pykueue.manager.core.features import gate_enabled
from pykueue.manager.jobs.lifecycle import DispatchedByMultiKueue, WorkloadOwner
from pykueue.manager.jobs.multikueue.adapter import MultiKueueAdapter, remote_workload
from pykueue.manager.jobs.multikueue.dispatch import (
    INCREMENTAL,
    PENDING,
    READY,
    Decision,
    Remote,
    WorkloadView,
    condition_is_true,
    decide,
    dispatcher_settings,
    nomination_order,
    orphaned,
)
from pykueue.manager.jobs.registry import JobKind, Registry
from pykueue.manager.runtime.job_resources import resource_of
from pykueue.manager.runtime.metrics import KueueMetrics

from . import connections
from .connections import REMOTE_TIMEOUT_S, Worker, WorkerConnections

log = logging.getLogger(__name__)

PASS_INTERVAL_S = 1.0
DEFAULT_ORIGIN = "multikueue"
DEFAULT_WORKER_LOST_TIMEOUT_S = 15 * 60.0
_BACKGROUND = {"propagationPolicy": "Background"}
# Listed on every pass (no informer: never watched, nor read one by one): clusters, then configs.
LISTED: tuple[ResourceRef, ResourceRef] = (res.MULTIKUEUE_CLUSTERS, res.MULTIKUEUE_CONFIGS)


def api_access(job_kinds: Iterable[JobKind]) -> tuple[ApiAccess, ...]:
    """The controller's local calls for these kinds, as RBAC (``api.access``): its lists; the
    check states and Finished condition of Workloads and the Active condition of
    AdmissionChecks patched; the status of each local job a worker runs written back (PUT of
    the kind's status, for every kind MultiKueue dispatches); and ``connections``' calls."""
    rows = [*(ref.access("list") for ref in LISTED), res.WORKLOADS.access("patch", subresource="status"),
            res.ADMISSION_CHECKS.access("patch", subresource="status")]
    for kind in job_kinds:
        if isinstance(kind.lifecycle, DispatchedByMultiKueue):
            i = kind.integration
            rows.append(ApiAccess(i.group, f"{i.plural}/status", ("update",)))
    return (*rows, *connections.API_ACCESS)


def multikueue_settings(config: Mapping[str, Any]) -> tuple[str, float]:
    """(origin, workerLostTimeout seconds) from the Configuration's ``multiKueue``."""
    section = config.get("multiKueue") or {}
    origin = str(section.get("origin") or DEFAULT_ORIGIN)
    timeout = section.get("workerLostTimeout")
    return origin, DEFAULT_WORKER_LOST_TIMEOUT_S if timeout is None else parse_duration(timeout)


class MultiKueueController:
    def __init__(self, client: KubeClient, informers: Mapping[str, Informer], registry: Registry,
                 config: Mapping[str, Any], namespace: str,
                 verdict: Callable[[str, str, str], None] | None = None,
                 metrics: KueueMetrics | None = None) -> None:
        """``verdict(workload key, check, state)`` hands a written check state to the queueing
        core at once (it would also read it back from the Workload, a moment later).
        ``metrics`` counts the copies created in workers and the admissions they bring."""
        self.client = client
        self.verdict = verdict
        self.metrics = metrics
        self.informers = informers
        self.origin, self.worker_lost_timeout = multikueue_settings(config)
        self.dispatcher, self.step = dispatcher_settings(config)
        self.config = config
        # Where a worker copy carries its prebuilt Workload's name (jobs.prebuilt).
        self.identifier_annotations = gate_enabled(config.get("featureGates"),
                                                   "WorkloadIdentifierAnnotations")
        self.adapters: dict[str, tuple[ResourceRef, MultiKueueAdapter]] = {}
        for lc in registry:
            if isinstance(lc, DispatchedByMultiKueue):
                self.adapters[lc.integration.kind] = (resource_of(lc.integration), lc.multikueue)
        self.lifecycles: dict[str, WorkloadOwner] = {lc.integration.kind: lc for lc in registry}
        self.connections = WorkerConnections(client, namespace, self.origin,
                                             [ref for ref, _ in self.adapters.values()],
                                             identifier_annotations=self.identifier_annotations)
        # Per manager Workload uid: the worker that won it, and since when it is missing.
        self._winner: dict[str, str] = {}
        self._missing_since: dict[str, float] = {}
        # Per manager Workload uid: the workers nominated so far, when the round began (incremental).
        self._nominated: dict[str, tuple[str, ...]] = {}
        self._round_started: dict[str, float] = {}
        self._kick = asyncio.Event()
        for kind in ("Workload", "AdmissionCheck"):
            informer = informers.get(kind)
            if informer is not None:
                informer.add_handler(self._on_event)

    def _on_event(self, event: EventType, obj: JSON, old: JSON | None) -> None:
        self._kick.set()

    async def run(self) -> None:
        try:
            while True:
                self._kick.clear()
                try:
                    wait = await self.sync()
                except REQUEST_ERRORS as exc:
                    log.warning("MultiKueue pass failed: %s", exc)
                    wait = PASS_INTERVAL_S
                except Exception:
                    # Whatever a worker or an object of an unexpected shape throws at a pass, it
                    # must not stop the leader's other work: log it, try again next pass.
                    log.exception("MultiKueue pass failed")
                    wait = PASS_INTERVAL_S
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(0.05, min(wait, PASS_INTERVAL_S))):
                        await self._kick.wait()
                # Events come in bursts (a status write echoes): let a burst settle first.
                await asyncio.sleep(0.05)
        finally:
            await self.connections.close()

    # ------------------------------------------------------------------ one pass

    async def sync(self) -> float:
        """One pass; returns how long until the next one is due at the latest."""
        checks = {str(meta(ac).get("name")): ac for ac in self.informers["AdmissionCheck"].items()
                  if (ac.get("spec") or {}).get("controllerName") == keys.MULTIKUEUE_CONTROLLER}
        if not checks and not self.connections.workers:
            return PASS_INTERVAL_S
        clusters, config_list = [await self._list(ref) for ref in LISTED]
        configs = {str(meta(c).get("name")): c for c in config_list}
        workers = await self.connections.sync(clusters)
        for check in checks.values():
            await self._write_check_active(check, check_active(check, configs, workers))
        wait = PASS_INTERVAL_S
        local = self.informers["Workload"]
        for workload in local.items():
            for check_name in _mk_checks_of(workload, checks):
                members = _config_clusters(checks[check_name], configs)
                answering = tuple(c for c in members if c in workers and workers[c].active)
                order = nomination_order(members, self.config)
                decision = decide(self._view(workload, check_name, answering, workers, order))
                await self._apply(workload, check_name, decision, workers)
                if decision.wait_s is not None:
                    wait = min(wait, decision.wait_s)
        await self._collect_garbage(set(local.keys()), workers)
        return wait

    async def _list(self, ref: ResourceRef) -> list[JSON]:
        try:
            return list((await self.client.get(ref.collection_path())).get("items") or ())
        except ApiError as exc:
            if exc.not_found:
                return []  # the CRD is not installed
            raise

    def _view(self, workload: JSON, check: str, clusters: tuple[str, ...],
              workers: Mapping[str, Worker], configured: tuple[str, ...] = ()) -> WorkloadView:
        key = object_key(workload)
        uid = str(meta(workload).get("uid") or "")
        states = {str(c.get("name")): str(c.get("state") or PENDING)
                  for c in (workload.get("status") or {}).get("admissionChecks") or ()}
        remotes = {c: Remote(workers[c].workloads.get(key), (workers[c].jobs.get(key) or (None, None))[1])
                   for c in clusters}
        return WorkloadView(
            reserved=condition_is_true(workload, keys.WorkloadCondition.QUOTA_RESERVED),
            finished=condition_is_true(workload, keys.WorkloadCondition.FINISHED),
            check_state=states.get(check, PENDING),
            other_checks_ready=all(s == READY for n, s in states.items() if n != check),
            clusters=clusters, remotes=remotes, now=time.time(),
            worker_lost_timeout=self.worker_lost_timeout,
            winner=self._winner.get(uid), missing_since=self._missing_since.get(uid),
            dispatcher=self.dispatcher, configured=configured, step=self.step,
            nominated=self._nominated.get(uid, ()) if self.dispatcher == INCREMENTAL else tuple(
                str(c) for c in (workload.get("status") or {}).get("nominatedClusterNames") or ()),
            round_started=self._round_started.get(uid))

    # ------------------------------------------------------------------ carrying it out

    async def _apply(self, workload: JSON, check: str, decision: Decision,
                     workers: Mapping[str, Worker]) -> None:
        key = object_key(workload)
        uid = str(meta(workload).get("uid") or "")
        _remember(self._winner, uid, decision.winner)
        _remember(self._missing_since, uid, decision.missing_since)
        _remember(self._nominated, uid, decision.nominated or None)
        _remember(self._round_started, uid, decision.round_started)
        for cluster in decision.delete_in:
            await self._delete_remote(workers[cluster], key)
        # Kueue labels both counters with the ClusterQueue holding the Workload's quota here.
        cq = str(((workload.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")
        for cluster in decision.create_workload_in:
            copy_wl = remote_workload(workload, self.origin)
            if await self._remote_create(workers[cluster], res.WORKLOADS, copy_wl):
                log.info("Workload %s: copy created in worker %s", key, cluster)
                if self.metrics is not None:
                    self.metrics.multikueue_dispatched(cq, cluster)
        owner = self._local_job(workload)
        if decision.create_job_in is not None and owner is not None:
            ref, adapter, job = owner
            copy_ = adapter.remote_copy(job, str(meta(workload).get("name")), self.origin,
                                        identifier_annotations=self.identifier_annotations)
            await self._remote_create(workers[decision.create_job_in], ref, copy_)
            log.info("%s %s: created in worker %s", ref.kind, object_key(job), decision.create_job_in)
        in_step = True
        if decision.mirror_from is not None and owner is not None:
            ref, adapter, job = owner
            remote = workers[decision.mirror_from].jobs.get(key)
            mirrored = None if remote is None else adapter.with_remote_status(job, remote[1])
            if mirrored is not None:
                in_step = await self._write(ref.object_path(str(meta(job).get("name")),
                                                            str(meta(job).get("namespace")), "status"),
                                            mirrored, replace=True)
        if decision.check is not None:
            written = await self._write_check_state(workload, check, *decision.check)
            # Ready now (never before): the winner reserved the copy. Counted once per admission.
            if written and decision.check[0] == READY and decision.winner is not None \
                    and self.metrics is not None:
                self.metrics.multikueue_admitted(cq, decision.winner)
        if decision.finish is not None and in_step:
            # Only once the job's final status is in the manager: finishing lets the copies go.
            await self._write_finished(workload, *decision.finish)

    def _local_job(self, workload: JSON) -> tuple[ResourceRef, MultiKueueAdapter, JSON] | None:
        m = meta(workload)
        for ref_ in m.get("ownerReferences") or ():
            found = self.adapters.get(str(ref_.get("kind")))
            informer = self.informers.get(str(ref_.get("kind")))
            if found is None or informer is None:
                continue
            job = informer.get(f"{m.get('namespace')}/{ref_.get('name')}")
            if job is not None:
                return found[0], found[1], job
        return None

    async def _remote_create(self, worker: Worker, ref: ResourceRef, obj: JSON) -> bool:
        """Create ``obj`` in the worker; True if this call created it."""
        if worker.client is None:
            return False
        try:
            await worker.client.request("POST", ref.collection_path(str(meta(obj).get("namespace"))),
                                        body=obj, timeout_s=REMOTE_TIMEOUT_S)
        except REQUEST_ERRORS as exc:
            if not (isinstance(exc, ApiError) and exc.already_exists):
                log.warning("worker %s: creating %s %s failed: %s", worker.name, ref.kind, object_key(obj),
                            exc)
            return False
        return True

    async def _delete_remote(self, worker: Worker, key: str) -> None:
        """The job first (its pods with it), then the Workload copy."""
        if worker.client is None:
            return
        ns, name = key.split("/", 1)
        targets: list[tuple[ResourceRef, str]] = []
        job = worker.jobs.get(key)
        if job is not None:
            targets.append((job[0], str(meta(job[1]).get("name"))))
        targets.append((res.WORKLOADS, name))
        for ref, obj_name in targets:
            try:
                await worker.client.request("DELETE", ref.object_path(obj_name, ns), body=_BACKGROUND,
                                            timeout_s=REMOTE_TIMEOUT_S)
                log.info("worker %s: deleted %s %s/%s", worker.name, ref.kind, ns, obj_name)
            except REQUEST_ERRORS as exc:
                if not (isinstance(exc, ApiError) and exc.not_found):
                    log.warning("worker %s: deleting %s %s/%s failed: %s", worker.name, ref.kind, ns,
                                obj_name, exc)
        worker.jobs.pop(key, None)
        worker.workloads.pop(key, None)

    async def _collect_garbage(self, local_keys: set[str], workers: Mapping[str, Worker]) -> None:
        """Copies whose manager Workload is gone (deleted with its job) go too."""
        for worker in workers.values():
            if not worker.active:
                continue
            stale = {k for k, w in worker.workloads.items() if orphaned(w, local_keys)}
            stale |= {k for k in worker.jobs if k not in local_keys}
            for key in sorted(stale):
                await self._delete_remote(worker, key)

    async def _write(self, path: str, body: JSON, replace: bool = False) -> bool:
        try:
            if replace:
                await self.client.replace(path, body)
            else:
                await self.client.patch(path, body)
        except ApiError as exc:
            if not (exc.not_found or exc.conflict):
                log.warning("writing %s failed: %s", path, exc)
            return False  # the next pass tries again, from a fresh snapshot
        return True

    async def _write_check_state(self, workload: JSON, check: str, state: str, message: str) -> bool:
        m = meta(workload)
        entries = []
        for entry in (workload.get("status") or {}).get("admissionChecks") or ():
            if entry.get("name") == check:
                entry = {**entry, "state": state, "message": message, "lastTransitionTime": _now()}
            entries.append(entry)
        log.info("Workload %s: check %s -> %s (%s)", object_key(workload), check, state, message)
        written = await self._write(res.WORKLOADS.object_path(str(m.get("name")), str(m.get("namespace")),
                                                              "status"),
                                    {"metadata": {"resourceVersion": m.get("resourceVersion")},
                                     "status": {"admissionChecks": entries}})
        if written and self.verdict is not None:
            self.verdict(object_key(workload), check, state)
        return written

    async def _write_finished(self, workload: JSON, reason: str, message: str) -> None:
        m = meta(workload)
        conditions = [c for c in (workload.get("status") or {}).get("conditions") or ()
                      if c.get("type") != keys.WorkloadCondition.FINISHED]
        conditions.append({"type": keys.WorkloadCondition.FINISHED, "status": "True", "reason": reason,
                           "message": message, "lastTransitionTime": _now(),
                           "observedGeneration": m.get("generation") or 0})
        await self._write(res.WORKLOADS.object_path(str(m.get("name")), str(m.get("namespace")), "status"),
                          {"metadata": {"resourceVersion": m.get("resourceVersion")},
                           "status": {"conditions": conditions}})

    async def _write_check_active(self, check: JSON, wanted: tuple[bool, str, str]) -> None:
        active, reason, message = wanted
        status = "True" if active else "False"
        conditions = list((check.get("status") or {}).get("conditions") or ())
        current = next((c for c in conditions if c.get("type") == "Active"), None)
        if current is not None and (current.get("status"), current.get("reason"), current.get("message")) == \
                (status, reason, message):
            return
        condition = {"type": "Active", "status": status, "reason": reason, "message": message,
                     "observedGeneration": meta(check).get("generation") or 0,
                     "lastTransitionTime": current.get("lastTransitionTime")
                     if current is not None and current.get("status") == status else _now()}
        conditions = [c for c in conditions if c.get("type") != "Active"] + [condition]
        path = res.ADMISSION_CHECKS.object_path(str(meta(check).get("name")), subresource="status")
        await self._write(path,
                          {"metadata": {"resourceVersion": meta(check).get("resourceVersion")},
                           "status": {"conditions": conditions}})


def _remember(store: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        store.pop(key, None)
    else:
        store[key] = value


def _mk_checks_of(workload: JSON, checks: Mapping[str, JSON]) -> list[str]:
    return [str(c.get("name")) for c in (workload.get("status") or {}).get("admissionChecks") or ()
            if c.get("name") in checks]


def _config_name(check: JSON) -> str | None:
    params = (check.get("spec") or {}).get("parameters") or {}
    if params.get("kind") != "MultiKueueConfig" or params.get("apiGroup") not in (None, "", keys.GROUP):
        return None
    return str(params.get("name") or "") or None


def _config_clusters(check: JSON, configs: Mapping[str, JSON]) -> list[str]:
    config = configs.get(_config_name(check) or "")
    return [str(c) for c in ((config or {}).get("spec") or {}).get("clusters") or ()]


def check_active(check: JSON, configs: Mapping[str, JSON],
                  workers: Mapping[str, Worker]) -> tuple[bool, str, str]:
    """Kueue's AdmissionCheck ``Active`` condition for a MultiKueue check."""
    name = _config_name(check)
    if name is None:
        return False, "BadConfig", "Cannot load the AdmissionChecks parameters: parameters must reference " \
                                   "a MultiKueueConfig"
    if name not in configs:
        return False, "BadConfig", ("Cannot load the AdmissionChecks parameters: "
                                    f'MultiKueueConfig "{name}" not found')
    members = _config_clusters(check, configs)
    missing = [c for c in members if c not in workers]
    inactive = [c for c in members if c in workers and not workers[c].active]
    if not missing and not inactive:
        return True, "Active", "The admission check is active"
    parts = []
    if missing:
        parts.append(f"Missing clusters: [{' '.join(missing)}]")
    if inactive:
        parts.append(f"Inactive clusters: [{' '.join(inactive)}]")
    if len(missing) + len(inactive) < len(members):
        return True, "SomeActiveClusters", ", ".join(parts)
    return False, "NoUsableClusters", ", ".join(parts)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
