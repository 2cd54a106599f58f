"""Release of the ``kueue.x-k8s.io/resource-in-use`` finalizer of deleted queues and flavors.

The admission webhook adds the finalizer to every ClusterQueue and ResourceFlavor on
CREATE; as in Kueue, the manager takes it off once the object is being deleted and is no
longer in use:

* a ClusterQueue once no Workload reserves quota in it (Kueue's ``ClusterQueueEmpty``:
  admitted and quota-reserved workloads both count; pending ones do not). Until then it
  is inactive with reason ``Terminating``: it admits nothing new, and what it admitted
  runs to the end;
* a ResourceFlavor once no ClusterQueue (a terminating one included) names it in its
  resource groups (Kueue's ``ClusterQueuesUsingFlavor``).

The rule is pure (:func:`release_due`, :func:`cluster_queues_using_flavor`); the loop
is thin and leader-only: on any change of the ClusterQueues, ResourceFlavors or
Workloads it looks at the objects being deleted and removes the finalizer with a
resourceVersion precondition (a 409 is left to the next pass, which reads the fresh
object from the informer).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.kube import resources as res
from pykueue.kube.client import REQUEST_ERRORS, ApiError, KubeClient
from pykueue.kube.informer import EventType, Informer
from pykueue.kube.resources import ResourceRef

log = logging.getLogger(__name__)

RETRY_S = 5.0  # after a failed write other than a conflict (a conflict brings its own event)
FINALIZER = keys.RESOURCE_IN_USE_FINALIZER
# Its calls, as RBAC (``api.access``): the finalizer taken off by a merge patch of the object
# itself (not of a subresource); the objects come from the queue manager's informers.
API_ACCESS: tuple[ApiAccess, ...] = (res.CLUSTER_QUEUES.access("patch"), res.RESOURCE_FLAVORS.access("patch"))


def terminating(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def release_due(obj: Mapping[str, Any], in_use: bool) -> bool:
    """The finalizer comes off a deleted object that holds it and is no longer in use."""
    finalizers = (obj.get("metadata") or {}).get("finalizers") or ()
    return terminating(obj) and FINALIZER in finalizers and not in_use


def cluster_queues_using_flavor(flavor: str, cluster_queues: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names of the ClusterQueues whose resource groups list ``flavor``."""
    users = []
    for cq in cluster_queues:
        groups = (cq.get("spec") or {}).get("resourceGroups") or ()
        if any(isinstance(f, Mapping) and f.get("name") == flavor
               for g in groups if isinstance(g, Mapping) for f in g.get("flavors") or ()):
            users.append(str((cq.get("metadata") or {}).get("name")))
    return sorted(users)


class FinalizerRelease:
    """Leader-only loop releasing the finalizer; ``reserving(cq)`` counts the workloads
    holding quota in a ClusterQueue (the core's view, which includes decisions not yet
    written back).

    Workloads change hundreds of times a second under load, and only matter here while a
    queue or flavor holding our finalizer is being deleted: the names of those are kept
    from their own events, so a pass looks at them alone and a Workload change wakes the
    loop only while there are any."""

    def __init__(self, client: KubeClient, informers: Mapping[str, Informer],
                 reserving: Callable[[str], int]) -> None:
        self.client, self.reserving = client, reserving
        self.cluster_queues = informers["ClusterQueue"]
        self.flavors = informers["ResourceFlavor"]
        self._changed = asyncio.Event()
        self._held: dict[str, set[str]] = {"ClusterQueue": set(), "ResourceFlavor": set()}
        for kind, names in self._held.items():
            for obj in informers[kind].items():
                self._track(names, obj, gone=False)
            informers[kind].add_handler(functools.partial(self._on_object, names))
        informers["Workload"].add_handler(self._on_workload)

    @staticmethod
    def _track(names: set[str], obj: JSON, gone: bool) -> None:
        name = str((obj.get("metadata") or {}).get("name"))
        if not gone and release_due(obj, in_use=False):  # deleted, and holding our finalizer
            names.add(name)
        else:
            names.discard(name)

    def _on_object(self, names: set[str], event: EventType, obj: JSON, old: JSON | None) -> None:
        self._track(names, obj, gone=event is EventType.DELETED)
        self._changed.set()  # a queue's change can also free a flavor

    def _on_workload(self, event: EventType, obj: JSON, old: JSON | None) -> None:
        self.poke()

    def poke(self) -> None:
        """Something that may free a queue changed (a Workload, or the core released quota)."""
        if any(self._held.values()):
            self._changed.set()

    def waiting(self) -> list[str]:
        """Deleted ClusterQueues and ResourceFlavors still holding our finalizer (``kind/name``)."""
        return [f"{kind}/{name}" for kind, names in self._held.items() for name in sorted(names)]

    async def run(self) -> None:
        while True:
            self._changed.clear()
            failed = await self.sweep()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(RETRY_S if failed else None):
                    await self._changed.wait()

    async def sweep(self) -> bool:
        """Release what is due; returns whether a write failed (to be retried)."""
        ok = True
        for name in sorted(self._held["ClusterQueue"]):
            cq = self.cluster_queues.get_by_name(name)
            if cq is not None and release_due(cq, self.reserving(name) > 0):
                ok &= await self._release(res.CLUSTER_QUEUES, cq)
        flavors = sorted(self._held["ResourceFlavor"])
        cqs = self.cluster_queues.items() if flavors else []
        for name in flavors:
            flavor = self.flavors.get_by_name(name)
            if flavor is not None and release_due(flavor, bool(cluster_queues_using_flavor(name, cqs))):
                ok &= await self._release(res.RESOURCE_FLAVORS, flavor)
        return not ok

    async def _release(self, ref: ResourceRef, obj: JSON) -> bool:
        meta = obj["metadata"]
        remaining = [f for f in meta.get("finalizers") or () if f != FINALIZER]
        # A merge patch carrying resourceVersion is a compare-and-swap: other finalizers
        # added since are never dropped.
        body = {"metadata": {"finalizers": remaining or None, "resourceVersion": meta.get("resourceVersion")}}
        try:
            await self.client.patch(ref.object_path(str(meta["name"])), body)
            log.info("released finalizer %s of %s %s", FINALIZER, ref.kind, meta["name"])
        except REQUEST_ERRORS as exc:
            if isinstance(exc, ApiError) and (exc.not_found or exc.conflict):
                return True  # gone already, or changed: its own event brings it back
            log.warning("releasing finalizer of %s %s failed: %s", ref.kind, meta["name"], exc)
            return False
        return True
