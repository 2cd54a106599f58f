"""``ClusterPort`` over kubernetes-asyncio.

Responses are read raw (``_preload_content=False``) and parsed as JSON so the extender
works on the API's own camelCase dicts — the same shape kube-scheduler embeds in
ExtenderArgs — and skips the generated models (whose Binding response decoding is known
to choke on a missing ``target``). Lists go to the apiserver without a resourceVersion,
i.e. a quorum read: bind-time checks need the latest state, not a watch cache.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from api import keys
from extender.port import ConflictError, JsonObject, NotFoundError, PortError

WORKLOADS = "workloads"
RESOURCE_FLAVORS = "resourceflavors"
TOPOLOGIES = "topologies"


def resolve_environment_once(api_client: client.ApiClient) -> None:
    """Look up the proxy for the API server once, not on every API call.

    kubernetes-asyncio opens its aiohttp session with ``trust_env=True``, so every call
    reads the proxy variables and ``~/.netrc`` in worker threads: two thread hand-offs
    per call, about a third of the extender's CPU per bound pod. The proxy that applies
    to the API server (``HTTPS_PROXY``/``NO_PROXY`` ...) is pinned in the client here
    instead; netrc credentials never apply (the kubeconfig's do).
    """
    rest = api_client.rest_client
    url = urlsplit(str(api_client.configuration.host))
    if not rest.proxy and url.hostname and not urllib.request.proxy_bypass(url.hostname):
        proxy = urllib.request.getproxies().get(url.scheme)
        if proxy:
            rest.proxy = proxy
    session = rest.pool_manager
    if hasattr(session, "_trust_env"):
        session._trust_env = False  # no public setter; unchanged behaviour otherwise


def _error(status: int, reason: str) -> PortError:
    if status == 409:
        return ConflictError(reason or "conflict")
    if status == 404:
        return NotFoundError(reason or "not found")
    return PortError(f"{status} {reason}")


class KubeClusterPort:
    def __init__(self, api_client: client.ApiClient, *, request_timeout_s: float = 3.0) -> None:
        self._core = client.CoreV1Api(api_client)
        self._custom = client.CustomObjectsApi(api_client)
        # Well inside kube-scheduler's httpTimeout, so a slow API fails the call, not the scheduler.
        self._timeout = request_timeout_s

    async def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            response = await fn(*args, _preload_content=False, _request_timeout=self._timeout, **kwargs)
            body = await response.read()
        except ApiException as exc:
            raise _error(int(exc.status or 0), str(exc.reason or "")) from None
        except (OSError, TimeoutError) as exc:
            raise PortError(f"API unreachable: {exc}") from None
        # Raw responses are not checked by the client: a 4xx/5xx arrives as a Status body.
        if response.status >= 400:
            try:
                message = str(json.loads(body).get("message") or "")
            except (ValueError, AttributeError):
                message = ""
            raise _error(int(response.status), message or str(response.reason or ""))
        return json.loads(body)

    async def _get(self, fn: Any, *args: Any) -> JsonObject | None:
        try:
            found: JsonObject = await self._call(fn, *args)
            return found
        except NotFoundError:
            return None

    async def get_pod(self, namespace: str, name: str) -> JsonObject | None:
        return await self._get(self._core.read_namespaced_pod, name, namespace)

    async def get_node(self, name: str) -> JsonObject | None:
        return await self._get(self._core.read_node, name)

    async def get_workload(self, namespace: str, name: str) -> JsonObject | None:
        return await self._get(
            self._custom.get_namespaced_custom_object, keys.GROUP, keys.V1BETA2, namespace, WORKLOADS, name
        )

    async def list_podset_pods(self, namespace: str, workload: str, podset: str) -> list[JsonObject]:
        # The workload is an annotation (not selectable); the podset label narrows the list.
        listed = await self._call(
            self._core.list_namespaced_pod, namespace, label_selector=f"{keys.PODSET}={podset}"
        )
        return [
            p
            for p in listed.get("items") or []
            if ((p.get("metadata") or {}).get("annotations") or {}).get(keys.WORKLOAD_ANNOTATION) == workload
        ]

    async def list_pods_on_node(self, node: str) -> list[JsonObject]:
        listed = await self._call(
            self._core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={node}"
        )
        items: list[JsonObject] = listed.get("items") or []
        return items

    async def list_nodes(self) -> list[JsonObject]:
        listed = await self._call(self._core.list_node)
        items: list[JsonObject] = listed.get("items") or []
        return items

    async def list_bound_pods(self) -> list[JsonObject]:
        listed = await self._call(self._core.list_pod_for_all_namespaces, field_selector="spec.nodeName!=")
        items: list[JsonObject] = listed.get("items") or []
        return items

    async def list_workloads(self) -> list[JsonObject]:
        listed = await self._call(
            self._custom.list_cluster_custom_object, keys.GROUP, keys.V1BETA2, WORKLOADS
        )
        items: list[JsonObject] = listed.get("items") or []
        return items

    async def get_resource_flavor(self, name: str) -> JsonObject | None:
        return await self._get(
            self._custom.get_cluster_custom_object, keys.GROUP, keys.V1BETA2, RESOURCE_FLAVORS, name
        )

    async def get_topology(self, name: str) -> JsonObject | None:
        return await self._get(
            self._custom.get_cluster_custom_object, keys.GROUP, keys.V1BETA2, TOPOLOGIES, name
        )

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
        await self._call(self._core.create_namespaced_pod_binding, name, namespace, body)

    async def patch_workload_annotations(
        self, namespace: str, name: str, resource_version: str, annotations: dict[str, str | None]
    ) -> JsonObject:
        # A resourceVersion inside a merge patch is a precondition: 409 if it is stale.
        body = {"metadata": {"resourceVersion": resource_version, "annotations": annotations}}
        stored: JsonObject = await self._call(
            self._custom.patch_namespaced_custom_object,
            keys.GROUP, keys.V1BETA2, namespace, WORKLOADS, name, body,
            _content_type="application/merge-patch+json",
        )
        return stored

    async def update_workload_status(self, workload: JsonObject) -> JsonObject:
        meta = workload["metadata"]
        if not meta.get("resourceVersion"):
            raise PortError("refusing an unconditional Workload status update (no resourceVersion)")
        stored: JsonObject = await self._call(
            self._custom.replace_namespaced_custom_object_status,
            keys.GROUP, keys.V1BETA2, meta["namespace"], WORKLOADS, meta["name"], workload,
        )
        return stored
