"""Reading a live cluster for ``explain`` and ``simulate --cluster``: GET and LIST only.

Everything the core needs is listed (paged) in parallel through ``kube.client``; nothing is
ever written, so a role with get/list on these resources suffices. The manager's Kueue
Configuration comes from ``--config``, else the ConfigMap ``pykueue-manager-config`` in
``pykueue-system`` when it is readable, else Kueue's defaults (with every built-in job
integration on). The conversion of what was read into the core's input is pure and lives in
``manager.scenario.cluster_snapshot``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import yaml

from pykueue.api.wire import JSON
from pykueue.kube import resources as res
from pykueue.kube.client import ApiError, KubeClient, connect
from pykueue.kube.config_file import load_config
from pykueue.kube.startup import check_kubeconfig, one_line
from pykueue.manager.jobs.registry import kinds, related_kinds
from pykueue.manager.runtime.controllers.topology import BOUND_PODS
from pykueue.manager.runtime.job_resources import related_resource
from pykueue.manager.scenario.cluster_snapshot import ClusterListing

READ_TIMEOUT_S = 60.0
PAGE = 2000
CONFIG_NAMESPACE = "pykueue-system"
CONFIG_MAP = "pykueue-manager-config"
CONFIG_KEY = "controller_manager_config.yaml"
LISTED: tuple[res.ResourceRef, ...] = (
    res.NAMESPACES, res.RESOURCE_FLAVORS, res.COHORTS, res.CLUSTER_QUEUES, res.LOCAL_QUEUES,
    res.WORKLOAD_PRIORITY_CLASSES, res.ADMISSION_CHECKS, res.TOPOLOGIES, res.NODES, res.PODS, res.WORKLOADS,
    res.PROVISIONING_REQUESTS,
)
# Served only when their CRD or feature is installed: absent means none.
OPTIONAL = frozenset({"Cohort", "Topology", "AdmissionCheck", "WorkloadPriorityClass", "ProvisioningRequest"})
# Read for what they add to an explanation, not needed for a prediction: a role that may not
# list them gets the rest.
BEST_EFFORT = frozenset({"ProvisioningRequest"})


class ClusterReadError(Exception):
    """The cluster could not be read; the message is the one line the CLI prints."""


async def list_all(client: KubeClient, ref: res.ResourceRef, field_selector: str = "") -> list[JSON]:
    items: list[JSON] = []
    query: dict[str, str | int | bool] = {"limit": PAGE}
    if field_selector:
        query["fieldSelector"] = field_selector
    while True:
        page = await client.get(ref.collection_path(), query)
        items.extend(page.get("items") or ())
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return items
        query["continue"] = token


def related_listed() -> tuple[res.ResourceRef, ...]:
    """The kinds job kinds' rules read besides the job (a TrainJob's training runtimes), listed
    for what-if submissions of those jobs: optional and best effort, as a cluster may lack
    their CRD and a role may not read them."""
    return tuple(related_resource(rk) for rk in related_kinds())


async def _list_kind(client: KubeClient, ref: res.ResourceRef, optional: bool = False) -> list[JSON]:
    try:
        return await list_all(client, ref, BOUND_PODS if ref.kind == "Pod" else "")
    except ApiError as exc:
        if (exc.not_found and (optional or ref.kind in OPTIONAL)) or \
                (exc.status == 403 and (optional or ref.kind in BEST_EFFORT)):
            return []
        raise ClusterReadError(f"cannot list {ref.plural}: {exc}") from exc


def default_config() -> dict[str, Any]:
    """Kueue's defaults, with every built-in job integration enabled."""
    return {"integrations": {"frameworks": sorted({k.name for k in kinds() if k.to_workloads is not None})}}


async def manager_config(client: KubeClient, path: str | None) -> dict[str, Any]:
    if path:
        try:
            return load_config(path)
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise ClusterReadError(f"--config {path}: {exc}") from exc
    try:
        cm = await client.get(res.CONFIG_MAPS.object_path(CONFIG_MAP, CONFIG_NAMESPACE))
    except ApiError:
        return default_config()  # not installed that way, or not readable by this role
    try:
        data = yaml.safe_load(((cm.get("data") or {}).get(CONFIG_KEY)) or "")
    except yaml.YAMLError:
        return default_config()
    return data if isinstance(data, dict) else default_config()


async def read_listing(client: KubeClient, config_path: str | None) -> ClusterListing:
    related = related_listed()
    lists = await asyncio.gather(*(_list_kind(client, ref) for ref in LISTED),
                                 *(_list_kind(client, ref, optional=True) for ref in related))
    config = await manager_config(client, config_path)
    return ClusterListing({ref.kind: items for ref, items in zip((*LISTED, *related), lists, strict=True)},
                          config, now=time.time())


async def with_client(kubeconfig: str | None, work: Any) -> Any:
    """Run ``work(client)`` against the cluster, turning every failure into ClusterReadError."""
    check_kubeconfig(kubeconfig, ClusterReadError)
    try:
        client = await connect(kubeconfig)
    except Exception as exc:  # kubeconfig missing or malformed: the library raises many kinds
        raise ClusterReadError(f"cannot load the kubeconfig: {one_line(exc)}") from exc
    try:
        async with client:
            async with asyncio.timeout(READ_TIMEOUT_S):
                return await work(client)
    except ClusterReadError:
        raise
    except TimeoutError as exc:
        raise ClusterReadError(f"the cluster did not answer within {READ_TIMEOUT_S:.0f}s") from exc
    except ApiError as exc:
        raise ClusterReadError(f"the API server refused the request: {exc}") from exc
    except Exception as exc:  # transport errors: connection refused, TLS, DNS
        raise ClusterReadError(f"cannot reach the cluster: {one_line(exc)}") from exc
