"""Queues and lookups shared by the job-integration e2e tests (PyTorchJob, LWS, mJWQN)."""

from __future__ import annotations

from typing import Any

from pykueue.api import keys

from .conftest import DevCluster

FLAVOR = "on-demand"
NODE_LABELS = {"instance-type": "on-demand"}
NAMESPACE_LABEL = "kubernetes.io/metadata.name"


def condition(obj: dict[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or ()
    )


def queues(dev_cluster: DevCluster, namespace: str, cpu: str, memory: str | None = None) -> str:
    """A flavor with node labels, a ClusterQueue of ``cpu`` CPUs (and ``memory``, when the jobs
    ask for it: a resource no quota covers is never admitted) for this namespace, LocalQueue ``lq``."""
    quotas = [{"name": "cpu", "nominalQuota": cpu}]
    if memory is not None:
        quotas.append({"name": "memory", "nominalQuota": memory})
    cq = f"cq-{namespace}"
    dev_cluster.apply(
        {
            "apiVersion": keys.API_VERSION,
            "kind": "ResourceFlavor",
            "metadata": {"name": FLAVOR},
            "spec": {"nodeLabels": NODE_LABELS},
        }
    )
    dev_cluster.apply(
        {
            "apiVersion": keys.API_VERSION,
            "kind": "ClusterQueue",
            "metadata": {"name": cq},
            "spec": {
                "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: namespace}},
                "resourceGroups": [
                    {
                        "coveredResources": [q["name"] for q in quotas],
                        "flavors": [{"name": FLAVOR, "resources": quotas}],
                    }
                ],
            },
        }
    )
    dev_cluster.apply(
        {
            "apiVersion": keys.API_VERSION,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": namespace},
            "spec": {"clusterQueue": cq},
        }
    )
    return cq


def remove_queues(dev_cluster: DevCluster, namespace: str, cq: str, *others: tuple[str, str]) -> None:
    """Delete, without waiting, the namespace's Jobs, its LocalQueue ``lq``, the ClusterQueue
    ``cq`` and the (kind, name) ``others``."""
    dev_cluster.kubectl("delete", "jobs", "--all", "-n", namespace, "--wait=false", check=False)
    dev_cluster.kubectl("delete", "localqueue.kueue.x-k8s.io", "lq", "-n", namespace, "--wait=false",
                        check=False)
    for kind, name in (("clusterqueues.kueue.x-k8s.io", cq), *others):
        dev_cluster.kubectl("delete", kind, name, "--wait=false", check=False)


def workloads_owned_by(dev_cluster: DevCluster, namespace: str, kind: str, name: str) -> list[dict[str, Any]]:
    return [
        wl
        for wl in dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]
        if any(r["kind"] == kind and r["name"] == name for r in wl["metadata"].get("ownerReferences") or ())
    ]


def cq_cpu_usage(dev_cluster: DevCluster, cq: str) -> str | None:
    return cpu_usage(dev_cluster.get_json("clusterqueues.kueue.x-k8s.io", cq).get("status") or {})


def cpu_usage(status: dict[str, Any]) -> str | None:
    """The CPU usage of the flavor in a ClusterQueue status; None before it shows any."""
    for flavor in status.get("flavorsUsage") or ():
        for res in flavor.get("resources") or ():
            if flavor["name"] == FLAVOR and res["name"] == "cpu":
                return str(res["total"])
    return None
