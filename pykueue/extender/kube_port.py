"""``ClusterPort`` over the shared rate-limited API client (``kube.client``).

The extender works on the API's own camelCase dicts, the same shape kube-scheduler
embeds in ExtenderArgs. Lists go to the apiserver without a resourceVersion, i.e. a
quorum read: bind-time checks need the latest state, not a watch cache.
"""

from __future__ import annotations

from typing import Any, Final

from pykueue.api import keys
from pykueue.api.wire import JSON
from pykueue.extender.port import ConflictError, NotFoundError, PortError
from pykueue.kube.client import MERGE_PATCH, TRANSPORT_ERRORS, ApiError, KubeClient, Query
from pykueue.kube.resources import NODES, PODS, RESOURCE_FLAVORS, TOPOLOGIES, WORKLOADS, ResourceRef

# Every request the methods below make, as RBAC: (resource, subresource, verbs). The
# extender's ServiceAccount is granted exactly these (ClusterRole ``pykueue-extender-role``
# in ``manifests/02-rbac.yaml``); a unit test calls each method and checks that its requests
# are in this table and that the table is the role.
API_ACCESS: Final[tuple[tuple[ResourceRef, str, tuple[str, ...]], ...]] = (
    (PODS, "", ("get", "list")),  # the pod at bind time, a PodSet's pods; bound pods (replacements)
    (PODS, "binding", ("create",)),  # the bind itself
    (NODES, "", ("get", "list")),  # the node cache, the bind-time node checks
    (WORKLOADS, "", ("get", "list", "patch")),  # assignments, all of them to plan a replacement;
                                                # bind claims are annotations
    (WORKLOADS, "status", ("update",)),  # a failed node's assignment rewritten at bind time
    (RESOURCE_FLAVORS, "", ("get",)),  # the flavor and Topology of a replacement plan
    (TOPOLOGIES, "", ("get",)),
)


def _error(status: int, reason: str) -> PortError:
    if status == 409:
        return ConflictError(reason or "conflict")
    if status == 404:
        return NotFoundError(reason or "not found")
    return PortError(f"{status} {reason}")


class KubeClusterPort:
    def __init__(self, client: KubeClient, *, request_timeout_s: float = 3.0) -> None:
        self._client = client
        # Well inside kube-scheduler's httpTimeout, so a slow API fails the call, not the scheduler.
        self._timeout = request_timeout_s

    async def _call(self, method: str, path: str, *, query: Query | None = None, body: Any = None,
                    content_type: str = "application/json") -> Any:
        try:
            return await self._client.request(method, path, query=query, body=body, content_type=content_type,
                                              timeout_s=self._timeout)
        except ApiError as exc:
            raise _error(exc.status, exc.message or exc.reason) from None
        except TRANSPORT_ERRORS as exc:
            raise PortError(f"API unreachable: {exc}") from None

    async def _get(self, path: str) -> JSON | None:
        try:
            found: JSON = await self._call("GET", path)
            return found
        except NotFoundError:
            return None

    async def _items(self, path: str, query: Query | None = None) -> list[JSON]:
        listed = await self._call("GET", path, query=query)
        items: list[JSON] = listed.get("items") or []
        return items

    async def get_pod(self, namespace: str, name: str) -> JSON | None:
        return await self._get(PODS.object_path(name, namespace))

    async def get_node(self, name: str) -> JSON | None:
        return await self._get(NODES.object_path(name))

    async def get_workload(self, namespace: str, name: str) -> JSON | None:
        return await self._get(WORKLOADS.object_path(name, namespace))

    async def list_podset_pods(self, namespace: str, workload: str, podset: str) -> list[JSON]:
        # The workload is an annotation (not selectable); the podset label narrows the list.
        selector = {"labelSelector": f"{keys.PODSET}={podset}"}
        items = await self._items(PODS.collection_path(namespace), selector)
        return [
            p
            for p in items
            if ((p.get("metadata") or {}).get("annotations") or {}).get(keys.WORKLOAD_ANNOTATION) == workload
        ]

    async def list_nodes(self) -> list[JSON]:
        return await self._items(NODES.collection_path())

    async def list_bound_pods(self) -> list[JSON]:
        return await self._items(PODS.collection_path(), {"fieldSelector": "spec.nodeName!="})

    async def list_workloads(self) -> list[JSON]:
        return await self._items(WORKLOADS.collection_path())

    async def get_resource_flavor(self, name: str) -> JSON | None:
        return await self._get(RESOURCE_FLAVORS.object_path(name))

    async def get_topology(self, name: str) -> JSON | None:
        return await self._get(TOPOLOGIES.object_path(name))

    async def post_binding(self, namespace: str, name: str, uid: str, node: str) -> None:
        metadata: dict[str, str] = {"name": name, "namespace": namespace}
        if uid:
            metadata["uid"] = uid  # the apiserver then refuses to bind a recreated pod
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        await self._call("POST", PODS.object_path(name, namespace, "binding"), body=body)

    async def patch_workload_annotations(
        self, namespace: str, name: str, resource_version: str, annotations: dict[str, str | None]
    ) -> JSON:
        # A resourceVersion inside a merge patch is a precondition: 409 if it is stale.
        body = {"metadata": {"resourceVersion": resource_version, "annotations": annotations}}
        stored: JSON = await self._call("PATCH", WORKLOADS.object_path(name, namespace), body=body,
                                              content_type=MERGE_PATCH)
        return stored

    async def update_workload_status(self, workload: JSON) -> JSON:
        meta = workload["metadata"]
        if not meta.get("resourceVersion"):
            raise PortError("refusing an unconditional Workload status update (no resourceVersion)")
        stored: JSON = await self._call(
            "PUT", WORKLOADS.object_path(meta["name"], meta["namespace"], "status"), body=workload)
        return stored
