"""Connections to the worker clusters of MultiKueueClusters, and what each worker holds.

One client per MultiKueueCluster, built from the kubeconfig in its Secret (in pykueue's own
namespace, key ``kubeconfig``), rebuilt when the Secret's content changes. Every pass of the
controller lists, on each worker, the Workloads and the jobs of every dispatchable kind that
carry this manager's origin label: that list is both the snapshot the decisions are made from
and the health probe. A worker whose list fails is inactive from that moment (the
MultiKueueCluster's ``Active`` condition turns False with ``ClientConnectionFailed``) and
``unreachable_since`` says since when, which is what the lost-worker clock reads. A kubeconfig
that cannot be used gives ``BadConfig``; neither ever raises out of :meth:`sync`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.api import keys
from pykueue.api.access import OWN_NAMESPACE, ApiAccess
from pykueue.api.wire import JSON, meta
from pykueue.kube import resources as res
from pykueue.kube.client import REQUEST_ERRORS, ApiError, KubeClient, connect_from_dict
from pykueue.kube.resources import ResourceRef
from pykueue.manager.jobs.multikueue.kubeconfig import BadKubeconfig, parse_kubeconfig
from pykueue.manager.jobs.prebuilt import prebuilt_workload_name

log = logging.getLogger(__name__)

SECRET_KEY = "kubeconfig"
REMOTE_TIMEOUT_S = 5.0
# The local calls below, as RBAC (``api.access``): each worker's kubeconfig Secret read by
# name (never listed: any name a MultiKueueCluster gives is read, in the Configuration's
# namespace, pykueue's own), and each MultiKueueCluster's Active condition patched. What a
# worker is asked goes with the worker's own credentials.
API_ACCESS: tuple[ApiAccess, ...] = (
    res.SECRETS.access("get", namespace=OWN_NAMESPACE),
    res.MULTIKUEUE_CLUSTERS.access("patch", subresource="status"),
)
ACTIVE, BAD_CONFIG, CONNECTION_FAILED = "Active", "BadConfig", "ClientConnectionFailed"
RemoteJob = tuple[ResourceRef, JSON]
"""A job in a worker, with the resource it was listed from."""


@dataclass
class Worker:
    """One MultiKueueCluster's connection and the last snapshot of what it holds."""

    name: str
    client: KubeClient | None = None
    fingerprint: str = ""
    active: bool = False
    reason: str = CONNECTION_FAILED
    message: str = "not connected yet"
    unreachable_since: float | None = None
    workloads: dict[str, JSON] = field(default_factory=dict)
    """Remote Workloads of this origin by ``ns/name``."""
    jobs: dict[str, RemoteJob] = field(default_factory=dict)
    """Remote jobs of this origin by their prebuilt Workload's ``ns/name``."""

    def fail(self, reason: str, message: str, now: float) -> None:
        if self.active or self.unreachable_since is None:
            self.unreachable_since = now
        self.active, self.reason, self.message = False, reason, message
        self.workloads, self.jobs = {}, {}


def kubeconfig_source(cluster: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = cluster.get("spec") or {}
    # v1beta2 nests it under clusterSource; a stored v1beta1 shape has it at the top.
    return (spec.get("clusterSource") or {}).get("kubeConfig") or spec.get("kubeConfig") or {}


class WorkerConnections:
    def __init__(self, local: KubeClient, namespace: str, origin: str,
                 job_resources: Iterable[ResourceRef], *, identifier_annotations: bool = True) -> None:
        """``identifier_annotations``: the WorkloadIdentifierAnnotations gate, which decides
        where a remote job's prebuilt Workload name is read from (jobs.prebuilt)."""
        self.local = local
        self.identifier_annotations = identifier_annotations
        self.namespace = namespace
        self.origin = origin
        self.job_resources = tuple(job_resources)
        self.workers: dict[str, Worker] = {}

    async def close(self) -> None:
        for worker in self.workers.values():
            if worker.client is not None:
                await worker.client.close()
        self.workers.clear()

    async def sync(self, clusters: list[JSON]) -> dict[str, Worker]:
        """Connect (or reconnect) every MultiKueueCluster, take each worker's snapshot, and
        write each one's ``Active`` condition when it changed."""
        wanted = {str(meta(c).get("name")): c for c in clusters if not meta(c).get("deletionTimestamp")}
        for name in [n for n in self.workers if n not in wanted]:
            gone = self.workers.pop(name)
            if gone.client is not None:
                await gone.client.close()
        await asyncio.gather(*(self._sync_one(name, cluster) for name, cluster in wanted.items()))
        for name, cluster in wanted.items():
            await self._write_status(cluster, self.workers[name])
        return self.workers

    async def _sync_one(self, name: str, cluster: JSON) -> None:
        worker = self.workers.setdefault(name, Worker(name))
        now = time.time()
        try:
            await self._ensure_client(worker, cluster)
        except BadKubeconfig as exc:
            await self._drop_client(worker)
            worker.fail(BAD_CONFIG, str(exc), now)
            return
        except REQUEST_ERRORS as exc:
            worker.fail(CONNECTION_FAILED, f"reading the kubeconfig: {exc}", now)
            return
        assert worker.client is not None
        try:
            workloads, jobs = await self._snapshot(worker.client)
        except REQUEST_ERRORS as exc:
            worker.fail(CONNECTION_FAILED, _short(exc), now)
            return
        worker.active, worker.reason, worker.message = True, ACTIVE, "Connected"
        worker.unreachable_since = None
        worker.workloads, worker.jobs = workloads, jobs

    async def _ensure_client(self, worker: Worker, cluster: JSON) -> None:
        source = kubeconfig_source(cluster)
        location = str(source.get("location") or "")
        if (source.get("locationType") or "Secret") != "Secret":
            raise BadKubeconfig("only kubeconfigs in Secrets (locationType Secret) are supported")
        try:
            secret = await self.local.get(res.SECRETS.object_path(location, self.namespace))
        except ApiError as exc:
            if exc.not_found:
                raise BadKubeconfig(f'Secret "{self.namespace}/{location}" not found') from exc
            raise
        encoded = (secret.get("data") or {}).get(SECRET_KEY)
        if not encoded:
            raise BadKubeconfig(f'key "{SECRET_KEY}" not found in secret "{location}"')
        try:
            raw = base64.b64decode(str(encoded), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise BadKubeconfig(f"key {SECRET_KEY!r} of secret {location!r} is not base64") from exc
        fingerprint = hashlib.sha256(raw).hexdigest()
        if worker.client is not None and worker.fingerprint == fingerprint:
            return
        await self._drop_client(worker)
        config = parse_kubeconfig(raw)
        try:
            worker.client = await connect_from_dict(config)
        except (ValueError, KeyError, TypeError, OSError) as exc:
            raise BadKubeconfig(f"cannot build a client: {exc}") from exc
        worker.fingerprint = fingerprint

    async def _drop_client(self, worker: Worker) -> None:
        if worker.client is not None:
            await worker.client.close()
        worker.client, worker.fingerprint = None, ""

    async def _snapshot(self, client: KubeClient) -> tuple[dict[str, JSON], dict[str, RemoteJob]]:
        query = {"labelSelector": f"{keys.MULTIKUEUE_ORIGIN}={self.origin}"}
        listed = await client.request("GET", res.WORKLOADS.collection_path(), query=query,
                                      timeout_s=REMOTE_TIMEOUT_S)
        workloads = {f"{meta(w).get('namespace')}/{meta(w).get('name')}": w
                     for w in listed.get("items") or ()}
        jobs: dict[str, RemoteJob] = {}
        for ref in self.job_resources:
            try:
                items = await client.request("GET", ref.collection_path(), query=query,
                                             timeout_s=REMOTE_TIMEOUT_S)
            except ApiError as exc:
                if exc.not_found:
                    continue  # the worker does not serve this kind
                raise
            for job in items.get("items") or ():
                job.setdefault("apiVersion", ref.api_version)
                job.setdefault("kind", ref.kind)
                prebuilt = prebuilt_workload_name(job, self.identifier_annotations)
                if prebuilt:
                    jobs[f"{meta(job).get('namespace')}/{prebuilt}"] = (ref, job)
        return workloads, jobs

    async def _write_status(self, cluster: JSON, worker: Worker) -> None:
        conditions = list((cluster.get("status") or {}).get("conditions") or ())
        current = next((c for c in conditions if c.get("type") == "Active"), None)
        status = "True" if worker.active else "False"
        if current is not None and (current.get("status"), current.get("reason"), current.get("message")) == \
                (status, worker.reason, worker.message):
            return
        condition = {"type": "Active", "status": status, "reason": worker.reason, "message": worker.message,
                     "observedGeneration": meta(cluster).get("generation") or 0,
                     "lastTransitionTime": current.get("lastTransitionTime")
                     if current is not None and current.get("status") == status else _now()}
        conditions = [c for c in conditions if c.get("type") != "Active"] + [condition]
        path = res.MULTIKUEUE_CLUSTERS.object_path(str(meta(cluster).get("name")), subresource="status")
        try:
            version = meta(cluster).get("resourceVersion")
            await self.local.patch(path, {"metadata": {"resourceVersion": version},
                                          "status": {"conditions": conditions}})
        except ApiError as exc:
            if not (exc.not_found or exc.conflict):
                raise
        log.info("MultiKueueCluster %s: Active=%s (%s: %s)", worker.name, status, worker.reason,
                 worker.message)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
