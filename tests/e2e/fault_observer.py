"""An outside view of the API for the fault suite: what every state of it showed.

:class:`ApiObserver` follows one namespace's Jobs, pods and Workloads and the ClusterQueues
with list+watch of its own, as the cluster admin, over plain HTTP (not pykueue's informers:
the code under test must not be its own witness). Each watch stream delivers the states of
its objects in the order etcd stored them, so a check run on every event sees every state
the API went through, not a sample of them:

* quota: the CPU of Workloads holding quota (``status.admission`` with ``QuotaReserved``,
  not ``Finished``) per ClusterQueue, and the ClusterQueues' own ``flavorsReservation`` and
  ``flavorsUsage``, never above the nominal quota;
* a Job that ran (``spec.suspend`` false) is never suspended again before it finished;
* a pod is never deleted before it finished (nothing here deletes pods but a suspension);
* per Job: its Workloads, how often one of them got quota, the pods that ran.

While the API is down nothing can be read; once it answers again every stream lists anew
and each object is compared with the last state seen of it, so what changed meanwhile is
still checked, as one step. A one-second tick counts the seconds in which every stream was
connected (the sampled seconds of the report) and checks the quota totals again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

import aiohttp

from pykueue.api.quantity import parse_quantity, resource_value
from pykueue.devcluster.replicas import admin_ssl_context, api_server

JSON = dict[str, Any]
FINISHED_PHASES = ("Succeeded", "Failed")


def condition(obj: JSON, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or ())


def job_finished(job: JSON) -> bool:
    return condition(job, "Complete") or condition(job, "Failed")


def holds_quota(workload: JSON) -> bool:
    return bool((workload.get("status") or {}).get("admission")) and condition(workload, "QuotaReserved") \
        and not condition(workload, "Finished")


def admitted_cpu_m(workload: JSON) -> int:
    admission = (workload.get("status") or {}).get("admission") or {}
    return sum(resource_value("cpu", parse_quantity((psa.get("resourceUsage") or {}).get("cpu", "0")))
               for psa in admission.get("podSetAssignments") or ())


def owner_uid(obj: JSON) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref["uid"])
    return None


def _cq_cpu_m(status: JSON, field: str) -> int:
    return sum(resource_value("cpu", parse_quantity(res.get("total", "0")))
               for flavor in status.get(field) or () for res in flavor.get("resources") or ()
               if res.get("name") == "cpu")


def _stamp() -> str:
    return time.strftime("%H:%M:%S")


class _Relist(Exception):
    """The watch cannot go on from where it was: list again."""


class ApiObserver:
    """See the module docstring. ``quotas``: ClusterQueue name -> nominal CPU in milli-cores."""

    KINDS = ("jobs", "pods", "workloads", "clusterqueues")

    def __init__(self, namespace: str, quotas: Mapping[str, int]) -> None:
        self.namespace = namespace
        self.quotas = dict(quotas)
        self.over_quota: list[str] = []
        self.suspended_running: list[str] = []
        self.deleted_pods: list[str] = []
        self.lost_jobs: list[str] = []
        self.quota_checks = 0
        self.sampled_seconds = 0
        self.reconnects = 0
        self.admissions: Counter[str] = Counter()  # Job uid -> QuotaReserved transitions
        self.workloads_of: defaultdict[str, set[str]] = defaultdict(set)  # Job uid -> Workload uids
        self.pods_ran: defaultdict[str, set[str]] = defaultdict(set)  # Job uid -> pods that ran
        self._stores: dict[str, dict[str, JSON]] = {kind: {} for kind in self.KINDS}
        self._usage: dict[str, tuple[str, int]] = {}  # Workload uid -> (ClusterQueue, CPU m) held
        self._connected: set[str] = set()
        self._lock = threading.Lock()
        self._listed = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    # -- reading, from the test's thread ------------------------------------------------------
    def items(self, kind: str) -> list[JSON]:
        with self._lock:
            return list(self._stores[kind].values())

    def connected(self) -> bool:
        return len(self._connected) == len(self.KINDS)

    def doubly_admitted(self) -> list[str]:
        """Jobs whose Workloads got quota more than once, or that have more than one Workload."""
        with self._lock:
            names = {uid: j["metadata"]["name"] for uid, j in self._stores["jobs"].items()}
            return sorted(names.get(uid, uid) for uid in set(self.admissions) | set(self.workloads_of)
                          if self.admissions[uid] > 1 or len(self.workloads_of[uid]) > 1)

    def ran_more_than_once(self) -> list[str]:
        with self._lock:
            names = {uid: j["metadata"]["name"] for uid, j in self._stores["jobs"].items()}
            return sorted(names.get(uid, uid) for uid, pods in self.pods_ran.items() if len(pods) > 1)

    # -- life cycle ---------------------------------------------------------------------------
    def start(self, deadline_s: float = 60.0) -> None:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), name="api-observer",
                                        daemon=True)
        self._thread.start()
        if not self._listed.wait(deadline_s):
            raise TimeoutError("the observer's first lists did not complete")

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(15.0)

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        ns = self.namespace
        paths = {"jobs": f"/apis/batch/v1/namespaces/{ns}/jobs",
                 "pods": f"/api/v1/namespaces/{ns}/pods",
                 "workloads": f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{ns}/workloads",
                 "clusterqueues": "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"}
        connector = aiohttp.TCPConnector(ssl=admin_ssl_context())
        async with aiohttp.ClientSession(api_server(), connector=connector) as session:
            tasks = [asyncio.create_task(self._follow(session, kind, path)) for kind, path in paths.items()]
            tasks.append(asyncio.create_task(self._tick()))
            await self._stop.wait()
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            if self.connected():
                with self._lock:
                    self.sampled_seconds += 1
                    for cq in {cq for cq, _ in self._usage.values()}:
                        self._check_total(cq, "tick")

    async def _follow(self, session: aiohttp.ClientSession, kind: str, path: str) -> None:
        while True:
            try:
                async with session.get(path, timeout=aiohttp.ClientTimeout(total=60)) as resp:
                    if resp.status != 200:
                        raise _Relist(f"list {resp.status}")
                    listing = await resp.json()
                self.observe_list(kind, listing.get("items") or [])
                self._connected.add(kind)
                if self.connected():
                    self._listed.set()
                params = {"watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": "600",
                          "resourceVersion": listing["metadata"]["resourceVersion"]}
                async with session.get(path, params=params,
                                       timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as resp:
                    if resp.status != 200:
                        raise _Relist(f"watch {resp.status}")
                    await self._stream(kind, resp)
            except (aiohttp.ClientError, OSError, TimeoutError, ValueError, KeyError, _Relist):
                pass
            self._connected.discard(kind)
            self.reconnects += 1
            await asyncio.sleep(0.5)

    async def _stream(self, kind: str, resp: aiohttp.ClientResponse) -> None:
        buffer = b""
        async for chunk in resp.content.iter_any():
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    self.observe_event(kind, json.loads(line))

    # -- what the streams deliver -------------------------------------------------------------
    def observe_event(self, kind: str, event: JSON) -> None:
        """One watch event: every ADDED, MODIFIED or DELETED object is a state to check."""
        if event.get("type") == "ERROR":
            raise _Relist(str(event.get("object")))
        if event.get("type") == "BOOKMARK":
            return
        obj: JSON = event["object"]
        uid = obj["metadata"]["uid"]
        with self._lock:
            store = self._stores[kind]
            old = store.get(uid)
            if event["type"] == "DELETED":
                store.pop(uid, None)
                self._changed(kind, old or obj, None)
            else:
                store[uid] = obj
                self._changed(kind, old, obj)

    def observe_list(self, kind: str, items: list[JSON]) -> None:
        """A new list: every difference from the last seen states is one change."""
        fresh = {item["metadata"]["uid"]: item for item in items}
        with self._lock:
            store = self._stores[kind]
            for uid, obj in fresh.items():
                self._changed(kind, store.get(uid), obj)
            for uid in set(store) - set(fresh):
                self._changed(kind, store[uid], None)
            store.clear()
            store.update(fresh)

    # -- the checks (under the lock) ----------------------------------------------------------
    def _changed(self, kind: str, old: JSON | None, new: JSON | None) -> None:
        if kind == "jobs":
            self._job_changed(old, new)
        elif kind == "pods":
            self._pod_changed(old, new)
        elif kind == "workloads":
            self._workload_changed(old, new)
        else:
            self._cq_changed(new)

    def _job_changed(self, old: JSON | None, new: JSON | None) -> None:
        if new is None:
            if old is not None:
                self.lost_jobs.append(f"{_stamp()} Job {old['metadata']['name']} deleted")
            return
        if old is not None and not old["spec"].get("suspend") and new["spec"].get("suspend") \
                and not job_finished(new):
            self.suspended_running.append(f"{_stamp()} Job {new['metadata']['name']} suspended while running")

    def _pod_changed(self, old: JSON | None, new: JSON | None) -> None:
        latest = new if new is not None else old
        if latest is None:
            return
        job = owner_uid(latest)
        if job is not None and (latest.get("status") or {}).get("phase") in ("Running", *FINISHED_PHASES):
            self.pods_ran[job].add(latest["metadata"]["uid"])
        if old is None or old["metadata"].get("deletionTimestamp"):
            return  # never seen alive, or its deletion was already counted
        if new is None or new["metadata"].get("deletionTimestamp"):
            phase = (old.get("status") or {}).get("phase")
            if phase not in FINISHED_PHASES:
                self.deleted_pods.append(f"{_stamp()} pod {old['metadata']['name']} ({phase}) deleted")

    def _workload_changed(self, old: JSON | None, new: JSON | None) -> None:
        latest = new if new is not None else old
        if latest is None:
            return
        uid = latest["metadata"]["uid"]
        job = owner_uid(latest)
        if job is not None:
            self.workloads_of[job].add(uid)
            if new is not None and condition(new, "QuotaReserved") and \
                    (old is None or not condition(old, "QuotaReserved")):
                self.admissions[job] += 1
        self._usage.pop(uid, None)
        if new is not None and holds_quota(new):
            cq = str(new["status"]["admission"].get("clusterQueue", ""))
            self._usage[uid] = (cq, admitted_cpu_m(new))
            self._check_total(cq, f"Workload {new['metadata']['name']}")
        self.quota_checks += 1

    def _check_total(self, cq: str, after: str) -> None:
        quota = self.quotas.get(cq)
        held = sum(m for q, m in self._usage.values() if q == cq)
        if quota is not None and held > quota:
            self.over_quota.append(f"{_stamp()} Workloads hold {held}m CPU of ClusterQueue {cq} "
                                   f"(quota {quota}m), after {after}")

    def _cq_changed(self, new: JSON | None) -> None:
        if new is None or new["metadata"]["name"] not in self.quotas:
            return
        name = new["metadata"]["name"]
        status = new.get("status") or {}
        for field in ("flavorsReservation", "flavorsUsage"):
            held = _cq_cpu_m(status, field)
            if held > self.quotas[name]:
                self.over_quota.append(f"{_stamp()} ClusterQueue {name} status.{field} {held}m CPU "
                                       f"(quota {self.quotas[name]}m)")
        self.quota_checks += 1
