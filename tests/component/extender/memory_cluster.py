"""An in-memory ``ClusterPort``: the API objects the extender reads and writes, as dicts.

It enforces what the apiserver enforces for these verbs — a Binding fails with 409 once
the pod has a node, a status update fails with 409 on a stale resourceVersion — so the
tests exercise the extender's conflict handling, not a stub that always says yes. Every
verb yields to the event loop once, as a network round trip would, so concurrent binds
really interleave.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON
from pykueue.extender.port import ConflictError, NotFoundError, PortError

Key = tuple[str, str]
STALE = "the object has been modified; please apply your changes to the latest version"


class MemoryCluster:
    def __init__(self) -> None:
        self.nodes: dict[str, JSON] = {}
        self.pods: dict[Key, JSON] = {}
        self.workloads: dict[Key, JSON] = {}
        self.flavors: dict[str, JSON] = {}
        self.topologies: dict[str, JSON] = {}
        self.bindings: list[tuple[str, str, str]] = []  # (namespace, pod, node) in order
        self.status_updates = 0
        self.calls: list[str] = []
        # Runs before a status update is applied: lets a test play a concurrent writer.
        self.before_status_update: Callable[[MemoryCluster], None] | None = None
        # Raised by the next post_binding instead of binding (an apiserver hiccup).
        self.fail_next_binding: PortError | None = None
        self._rv = 100

    # -- test-side helpers --------------------------------------------------------------
    def next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def add_node(self, node: JSON) -> None:
        self.nodes[node["metadata"]["name"]] = copy.deepcopy(node)

    def add_pod(self, pod: JSON) -> None:
        meta = pod["metadata"]
        self.pods[(meta["namespace"], meta["name"])] = copy.deepcopy(pod)

    def add_workload(self, workload: JSON) -> None:
        wl = copy.deepcopy(workload)
        wl["metadata"]["resourceVersion"] = self.next_rv()
        self.workloads[(wl["metadata"]["namespace"], wl["metadata"]["name"])] = wl

    def touch_workload(self, namespace: str, name: str, mutate: Callable[[JSON], Any]) -> None:
        """A write by someone else (e.g. the queue manager): new resourceVersion."""
        wl = self.workloads[(namespace, name)]
        mutate(wl)
        wl["metadata"]["resourceVersion"] = self.next_rv()

    # -- ClusterPort ----------------------------------------------------------------------
    async def get_pod(self, namespace: str, name: str) -> JSON | None:
        await asyncio.sleep(0)
        self.calls.append("get_pod")
        pod = self.pods.get((namespace, name))
        return copy.deepcopy(pod) if pod is not None else None

    async def get_node(self, name: str) -> JSON | None:
        await asyncio.sleep(0)
        self.calls.append("get_node")
        node = self.nodes.get(name)
        return copy.deepcopy(node) if node is not None else None

    async def get_workload(self, namespace: str, name: str) -> JSON | None:
        await asyncio.sleep(0)
        self.calls.append("get_workload")
        wl = self.workloads.get((namespace, name))
        return copy.deepcopy(wl) if wl is not None else None

    async def list_podset_pods(self, namespace: str, workload: str, podset: str) -> list[JSON]:
        await asyncio.sleep(0)
        self.calls.append("list_podset_pods")
        return [
            copy.deepcopy(p)
            for (ns, _), p in self.pods.items()
            if ns == namespace
            and (p["metadata"].get("labels") or {}).get(keys.PODSET) == podset
            and (p["metadata"].get("annotations") or {}).get(keys.WORKLOAD_ANNOTATION) == workload
        ]

    async def list_nodes(self) -> list[JSON]:
        await asyncio.sleep(0)
        self.calls.append("list_nodes")
        return [copy.deepcopy(n) for n in self.nodes.values()]

    async def list_bound_pods(self) -> list[JSON]:
        await asyncio.sleep(0)
        self.calls.append("list_bound_pods")
        return [copy.deepcopy(p) for p in self.pods.values() if (p.get("spec") or {}).get("nodeName")]

    async def list_workloads(self) -> list[JSON]:
        await asyncio.sleep(0)
        self.calls.append("list_workloads")
        return [copy.deepcopy(w) for w in self.workloads.values()]

    async def get_resource_flavor(self, name: str) -> JSON | None:
        await asyncio.sleep(0)
        self.calls.append("get_resource_flavor")
        return copy.deepcopy(self.flavors.get(name))

    async def get_topology(self, name: str) -> JSON | None:
        await asyncio.sleep(0)
        self.calls.append("get_topology")
        return copy.deepcopy(self.topologies.get(name))

    async def post_binding(self, namespace: str, name: str, uid: str, node: str) -> None:
        await asyncio.sleep(0)
        self.calls.append("post_binding")
        if self.fail_next_binding is not None:
            error, self.fail_next_binding = self.fail_next_binding, None
            raise error
        pod = self.pods.get((namespace, name))
        if pod is None:
            raise NotFoundError(f"pods {name!r} not found")
        if uid and pod["metadata"].get("uid") != uid:
            raise ConflictError("Precondition failed: UID in precondition does not match")
        if (pod.get("spec") or {}).get("nodeName"):
            raise ConflictError(f"pod {name} is already assigned to node {pod['spec']['nodeName']!r}")
        pod.setdefault("spec", {})["nodeName"] = node
        pod["metadata"]["resourceVersion"] = self.next_rv()
        self.bindings.append((namespace, name, node))

    async def patch_workload_annotations(
        self, namespace: str, name: str, resource_version: str, annotations: dict[str, str | None]
    ) -> JSON:
        await asyncio.sleep(0)
        self.calls.append("patch_workload_annotations")
        stored = self.workloads.get((namespace, name))
        if stored is None:
            raise NotFoundError(f"workloads {name!r} not found")
        if resource_version != stored["metadata"]["resourceVersion"]:
            raise ConflictError(STALE)
        current = stored["metadata"].setdefault("annotations", {})
        for key, value in annotations.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        stored["metadata"]["resourceVersion"] = self.next_rv()
        return copy.deepcopy(stored)

    async def update_workload_status(self, workload: JSON) -> JSON:
        await asyncio.sleep(0)
        self.calls.append("update_workload_status")
        if self.before_status_update is not None:
            hook, self.before_status_update = self.before_status_update, None
            hook(self)
        meta = workload["metadata"]
        key = (meta["namespace"], meta["name"])
        stored = self.workloads.get(key)
        if stored is None:
            raise NotFoundError(f"workloads {meta['name']!r} not found")
        if meta.get("resourceVersion") != stored["metadata"]["resourceVersion"]:
            raise ConflictError(STALE)
        stored["status"] = copy.deepcopy(workload.get("status") or {})
        stored["metadata"]["resourceVersion"] = self.next_rv()
        self.status_updates += 1
        return copy.deepcopy(stored)
