"""The extender's view of the Kubernetes API: a small async port.

Every decision the extender takes at bind time is re-checked against the API, so the port
is the single source of truth; keeping it to a handful of verbs lets component tests run
the whole HTTP server against an in-memory implementation instead of a mocked apiserver,
and keeps the kubernetes-asyncio details in one module (``kube_port``).

Objects travel as plain JSON-shaped dicts (the API's camelCase form), exactly as the
scheduler sends them in ``ExtenderArgs``, so the same pure helpers read both.
"""

from __future__ import annotations

from typing import Protocol

from pykueue.api.wire import JSON


class PortError(Exception):
    """The API refused or failed a request."""


class ConflictError(PortError):
    """HTTP 409: stale resourceVersion on update, or the pod is already bound."""


class NotFoundError(PortError):
    """HTTP 404."""


class ClusterPort(Protocol):
    async def get_pod(self, namespace: str, name: str) -> JSON | None:
        """The pod, or None when it does not exist."""
        ...

    async def get_workload(self, namespace: str, name: str) -> JSON | None:
        """The ``kueue.x-k8s.io/v1beta2`` Workload, or None when it does not exist."""
        ...

    async def list_podset_pods(self, namespace: str, workload: str, podset: str) -> list[JSON]:
        """Pods of one PodSet of one Workload (podset label + workload annotation), fresh from the API."""
        ...

    async def list_nodes(self) -> list[JSON]:
        ...

    async def get_node(self, name: str) -> JSON | None:
        """The node, fresh (bind-time health checks must not trust a cached copy)."""
        ...

    async def list_bound_pods(self) -> list[JSON]:
        """Every pod with ``spec.nodeName`` set (node usage for replacement planning)."""
        ...

    async def list_workloads(self) -> list[JSON]:
        """Workloads of all namespaces (their assignments are TAS usage)."""
        ...

    async def get_resource_flavor(self, name: str) -> JSON | None:
        ...

    async def get_topology(self, name: str) -> JSON | None:
        ...

    async def post_binding(self, namespace: str, name: str, uid: str, node: str) -> None:
        """Create ``pods/{name}/binding``; ConflictError when the pod is already bound."""
        ...

    async def patch_workload_annotations(
        self, namespace: str, name: str, resource_version: str, annotations: dict[str, str | None]
    ) -> JSON:
        """Merge ``annotations`` (None deletes) only if the Workload is still at ``resource_version``.

        Raises ConflictError when it moved on; returns the stored object.
        """
        ...

    async def update_workload_status(self, workload: JSON) -> JSON:
        """Replace the status subresource, guarded by ``metadata.resourceVersion``.

        Raises ConflictError when the stored object moved on; returns the stored object.
        """
        ...
