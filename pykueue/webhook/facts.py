"""Resolving the cluster facts a job admission needs, fast and bounded.

The decisions in ``manager.jobs.framework`` are pure; they read :class:`ClusterFacts`.
This module fills those in through a :class:`ClusterLookup`:

* :class:`StaticLookup` holds the facts in dicts (tests, benchmarks, ``pykueue webhook``
  without a cluster);
* :class:`ApiLookup` reads the manager's informer stores when they have synced (no request
  at all: admission stays well inside the apiserver's 10 s budget) and falls back to a GET
  bounded by a short timeout when a store is missing or not yet synced.

The whole resolution is bounded too (:data:`RESOLVE_TIMEOUT_S`); running out of time is
reported as a lookup failure, which the webhook turns into a denial, never a hang.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pykueue.api import keys
from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionDenied, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.integrations import (
    KNOWN_ELSEWHERE,
    MAX_OWNER_HOPS,
    REPLICA_SET,
    OwnerKey,
    OwnerLookupNeeded,
)
from pykueue.manager.jobs.ownership import find_managed_ancestor, may_be_managed
from pykueue.manager.jobs.registry import integration_for, kind_of, kinds, related_kinds
from pykueue.manager.jobs.related import ReadsRelated, Related, RelatedKey
from pykueue.manager.jobs.tas_routing import kueue_pod_queue, needs_queue_lookup, queue_is_tas_only

GET_TIMEOUT_S = 2.0
RESOLVE_TIMEOUT_S = 4.0


class LookupFailed(Exception):
    """A fact could not be read (API error or timeout): the admission is denied with this text."""


class ClusterLookup(Protocol):
    async def namespace_labels(self, namespace: str) -> Mapping[str, str] | None: ...
    async def local_queue_exists(self, namespace: str, name: str) -> bool: ...
    async def priority_class_exists(self, name: str) -> bool: ...
    async def queue_uses_multikueue(self, namespace: str, queue: str) -> bool: ...
    async def get_object(self, key: OwnerKey) -> JSON | None: ...
    async def queue_tas_only(self, namespace: str, queue: str) -> bool: ...


@dataclass
class StaticLookup:
    """Facts held in memory; namespaces absent from ``namespaces`` get just their name label."""

    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    local_queues: set[tuple[str, str]] = field(default_factory=set)
    priority_classes: set[str] = field(default_factory=set)
    multikueue_queues: set[tuple[str, str]] = field(default_factory=set)
    objects: dict[OwnerKey, JSON] = field(default_factory=dict)
    unreadable_namespaces: set[str] = field(default_factory=set)
    tas_only_queues: set[tuple[str, str]] = field(default_factory=set)

    async def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        if namespace in self.unreadable_namespaces:
            return None
        return self.namespaces.get(namespace, {keys.NAMESPACE_NAME_LABEL: namespace})

    async def local_queue_exists(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self.local_queues

    async def priority_class_exists(self, name: str) -> bool:
        return name in self.priority_classes

    async def queue_uses_multikueue(self, namespace: str, queue: str) -> bool:
        return (namespace, queue) in self.multikueue_queues

    async def get_object(self, key: OwnerKey) -> JSON | None:
        return self.objects.get(key)

    async def queue_tas_only(self, namespace: str, queue: str) -> bool:
        return (namespace, queue) in self.tas_only_queues


def owner_access() -> tuple[ApiAccess, ...]:
    """The owners :class:`ApiLookup` may GET, as RBAC (``api.access``). The ancestor walk
    (``manager.jobs.ownership``) reads the controller owner of an object when its kind is one
    Kueue integrates, run here or not (:func:`integration_for`: the registered kinds and
    ``KNOWN_ELSEWHERE``), or the ReplicaSet between a Deployment and its pods, in the owned
    object's namespace. Owners of kinds named only in the Configuration's
    ``externalFrameworks`` are read too; the install cannot know those (as with Kueue, their
    RBAC is the installer's)."""
    walked = [*(k.integration for k in kinds()), *KNOWN_ELSEWHERE, REPLICA_SET]
    return tuple(ApiAccess(i.group, i.plural, ("get",)) for i in walked)


def related_access() -> tuple[ApiAccess, ...]:
    """The objects besides the job a kind's validation reads (``manager.jobs.related``: a
    TrainJob's training runtime), which :class:`ApiLookup` GETs, as RBAC."""
    return tuple(ApiAccess(rk.group, rk.plural, ("get",)) for rk in related_kinds())


def _object_path(key: OwnerKey) -> str:
    api_version, kind, namespace, name = key
    related = next((rk for rk in related_kinds() if (rk.api_version, rk.kind) == (api_version, kind)), None)
    if related is not None:
        prefix = f"/apis/{api_version}" if related.group else f"/api/{api_version}"
        where = f"/namespaces/{namespace}" if related.namespaced else ""
        return f"{prefix}{where}/{related.plural}/{name}"
    group = api_version.rpartition("/")[0]
    integration = integration_for(group, kind)
    if (group, kind) == (REPLICA_SET.group, REPLICA_SET.kind):
        integration = REPLICA_SET
    plural = integration.plural if integration else kind.lower() + "s"
    prefix = f"/apis/{api_version}" if group else f"/api/{api_version}"
    return f"{prefix}/namespaces/{namespace}/{plural}/{name}"


class ApiLookup:
    """Informer stores first, then a bounded GET. ``stores`` maps a kind to an informer."""

    def __init__(
        self, client: Any, stores: Mapping[str, Any] | None = None, get_timeout_s: float = GET_TIMEOUT_S
    ) -> None:
        self.client = client
        self.stores = dict(stores or {})
        self.get_timeout_s = get_timeout_s

    def _store(self, kind: str) -> Any:
        store = self.stores.get(kind)
        return store if store is not None and getattr(store, "has_synced", False) else None

    async def _get(self, path: str) -> JSON | None:
        from pykueue.kube.client import ApiError

        try:
            async with asyncio.timeout(self.get_timeout_s):
                result: JSON = await self.client.get(path)
                return result
        except ApiError as exc:
            if exc.not_found:
                return None
            raise LookupFailed(f"GET {path}: {exc}") from exc
        except TimeoutError as exc:
            raise LookupFailed(f"GET {path}: timed out after {self.get_timeout_s}s") from exc
        except OSError as exc:
            raise LookupFailed(f"GET {path}: {exc}") from exc

    async def _find(self, kind: str, path: str, name: str, namespace: str | None = None) -> JSON | None:
        store = self._store(kind)
        if store is not None:
            found: JSON | None = store.get_by_name(name, namespace)
            return found
        return await self._get(path)

    async def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        ns = await self._find("Namespace", f"/api/v1/namespaces/{namespace}", namespace)
        if ns is None:
            return None
        labels = (ns.get("metadata") or {}).get("labels") or {}
        return {str(k): str(v) for k, v in labels.items()}

    async def local_queue_exists(self, namespace: str, name: str) -> bool:
        path = f"/apis/{keys.API_VERSION}/namespaces/{namespace}/localqueues/{name}"
        return await self._find("LocalQueue", path, name, namespace) is not None

    async def priority_class_exists(self, name: str) -> bool:
        path = f"/apis/{keys.API_VERSION}/workloadpriorityclasses/{name}"
        return await self._find("WorkloadPriorityClass", path, name) is not None

    async def _cluster_queue_of(self, namespace: str, queue: str) -> JSON | None:
        lq = await self._find(
            "LocalQueue",
            f"/apis/{keys.API_VERSION}/namespaces/{namespace}/localqueues/{queue}",
            queue,
            namespace,
        )
        cq_name = str(((lq or {}).get("spec") or {}).get("clusterQueue") or "")
        if not cq_name:
            return None
        return await self._find("ClusterQueue", f"/apis/{keys.API_VERSION}/clusterqueues/{cq_name}", cq_name)

    async def queue_tas_only(self, namespace: str, queue: str) -> bool:
        cq = await self._cluster_queue_of(namespace, queue)
        if cq is None:
            return False
        flavors: dict[str, JSON] = {}
        for group in (cq.get("spec") or {}).get("resourceGroups") or ():
            for flavor in (group or {}).get("flavors") or ():
                name = str((flavor or {}).get("name") or "")
                path = f"/apis/{keys.API_VERSION}/resourceflavors/{name}"
                found = await self._find("ResourceFlavor", path, name)
                if found is not None:
                    flavors[name] = found
        return queue_is_tas_only(cq, flavors)

    async def queue_uses_multikueue(self, namespace: str, queue: str) -> bool:
        cq = await self._cluster_queue_of(namespace, queue)
        spec = (cq or {}).get("spec") or {}
        checks = [
            c.get("name")
            for c in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or ()
            if isinstance(c, dict)
        ] + list(spec.get("admissionChecks") or ())
        for check in checks:
            if not isinstance(check, str):
                continue
            ac = await self._find(
                "AdmissionCheck", f"/apis/{keys.API_VERSION}/admissionchecks/{check}", check
            )
            if ((ac or {}).get("spec") or {}).get("controllerName") == keys.MULTIKUEUE_CONTROLLER:
                return True
        return False

    async def get_object(self, key: OwnerKey) -> JSON | None:
        return await self._find(key[1], _object_path(key), key[3], key[2] or None)


async def resolve_facts(
    obj: JSON,
    namespace: str,
    policy: AdmissionPolicy,
    lookup: ClusterLookup,
    timeout_s: float = RESOLVE_TIMEOUT_S,
    related: bool = False,
) -> ClusterFacts:
    """Every fact the job decisions may read for ``obj``; raises :class:`LookupFailed`.
    ``related``: also the objects besides the job its kind's rules read (validation needs
    them, defaulting does not)."""
    try:
        async with asyncio.timeout(timeout_s):
            facts = await _resolve(obj, namespace, policy, lookup)
            if related:
                facts = replace(facts, related=await _related(obj, lookup))
            return facts
    except TimeoutError as exc:
        raise LookupFailed(f"cluster lookups took longer than {timeout_s}s") from exc


async def _related(obj: JSON, lookup: ClusterLookup) -> Related:
    kind = kind_of(obj)
    lc = None if kind is None else kind.lifecycle
    needs: tuple[RelatedKey, ...] = lc.needs(obj) if isinstance(lc, ReadsRelated) else ()
    return {key: await lookup.get_object(key) for key in needs}


async def _resolve(obj: JSON, namespace: str, policy: AdmissionPolicy, lookup: ClusterLookup) -> ClusterFacts:
    labels = await lookup.namespace_labels(namespace)
    default_lq = await lookup.local_queue_exists(namespace, keys.DEFAULT_LOCAL_QUEUE)
    default_wpc = policy.gates.enabled(
        "WorkloadPriorityClassDefaulting"
    ) and await lookup.priority_class_exists(keys.DEFAULT_PRIORITY_CLASS)
    # The queue Kueue's managedBy defaulting reads: the label only, after the default one.
    label = str(((obj.get("metadata") or {}).get("labels") or {}).get(keys.QUEUE_NAME) or "")
    queue = label or (keys.DEFAULT_LOCAL_QUEUE if default_lq else "")
    multikueue = (
        bool(queue)
        and policy.gates.enabled("MultiKueue")
        and await lookup.queue_uses_multikueue(namespace, queue)
    )
    tas_only = needs_queue_lookup(obj) and await lookup.queue_tas_only(namespace, str(kueue_pod_queue(obj)))
    owners: dict[OwnerKey, JSON | None] = {}
    if not may_be_managed(obj, policy, default_lq):
        return ClusterFacts(labels, default_lq, default_wpc, multikueue, owners, tas_only)
    for _ in range(MAX_OWNER_HOPS + 2):
        facts = ClusterFacts(labels, default_lq, default_wpc, multikueue, owners, tas_only)
        try:
            find_managed_ancestor(obj, AdmissionContext(policy, facts))
        except OwnerLookupNeeded as need:
            owners[need.key] = await lookup.get_object(need.key)
            continue
        except AdmissionDenied:
            pass  # the decision reports this denial itself, with the same text
        return facts
    return ClusterFacts(labels, default_lq, default_wpc, multikueue, owners, tas_only)
