"""``pykueue explain KIND/NAME`` for a registered job kind: the kind's own resource is read
and the job is explained through the Workload it owns (here an MPIJob, against an API that
answers from memory)."""

from __future__ import annotations

import asyncio
from typing import Any

from pykueue import explain as explain_cli
from pykueue.api import keys
from pykueue.kube.client import ApiError
from pykueue.live_cluster import CONFIG_MAP, CONFIG_NAMESPACE
from pykueue.manager.jobs.registry import workloads_for
from pykueue.manager.scenario.explain import explain, text

JOB_PATH = "/apis/kubeflow.org/v2beta1/namespaces/team/mpijobs/pi"


class MemoryApi:
    """GETs only: the objects by path, the collections by path (empty when not given)."""

    def __init__(self, objects: dict[str, Any], collections: dict[str, list[Any]]) -> None:
        self.objects, self.collections = objects, collections
        self.read: list[str] = []

    async def get(self, path: str, query: dict[str, Any] | None = None) -> Any:
        self.read.append(path)
        if path in self.objects:
            return self.objects[path]
        if path.endswith(f"/namespaces/{CONFIG_NAMESPACE}/configmaps/{CONFIG_MAP}") or query is None:
            raise ApiError(404, "NotFound", path)
        return {"items": self.collections.get(path, []), "metadata": {}}


def _mpijob(worker_cpu: str) -> dict[str, Any]:
    def replica(replicas: int, cpu: str) -> dict[str, Any]:
        return {"replicas": replicas, "template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": {"name": "pi", "namespace": "team", "uid": "uid-pi",
                         "creationTimestamp": "2025-01-01T00:00:00Z", "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {"runPolicy": {"suspend": True},
                     "mpiReplicaSpecs": {"Launcher": replica(1, "1"), "Worker": replica(2, worker_cpu)}}}


def _api(job: dict[str, Any]) -> MemoryApi:
    v1beta2 = "/apis/kueue.x-k8s.io/v1beta2"
    collections = {
        "/api/v1/namespaces": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "team", "labels": {keys.NAMESPACE_NAME_LABEL: "team"}}}],
        f"{v1beta2}/resourceflavors": [{"apiVersion": keys.API_VERSION, "kind": "ResourceFlavor",
                                        "metadata": {"name": "default"}, "spec": {}}],
        f"{v1beta2}/clusterqueues": [{"apiVersion": keys.API_VERSION, "kind": "ClusterQueue",
                                      "metadata": {"name": "cq"}, "spec": {
            "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": 4}]}]}]}}],
        f"{v1beta2}/localqueues": [{"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
                                    "metadata": {"name": "lq", "namespace": "team"},
                                    "spec": {"clusterQueue": "cq"}}],
        f"{v1beta2}/workloads": workloads_for(job),
    }
    return MemoryApi({JOB_PATH: job}, collections)


def test_an_mpijob_is_named_by_its_kind_and_plural() -> None:
    assert explain_cli._parse_target("mpijob/pi") == ("mpijob", "pi")
    assert explain_cli._parse_target("MPIJobs.kubeflow.org/pi") == ("mpijobs", "pi")


def test_an_mpijob_is_explained_through_its_workload() -> None:
    job = _mpijob(worker_cpu="2")  # 1 + 2 x 2 CPUs against 4
    api = _api(job)
    listing, found = asyncio.run(explain_cli._read(api, "mpijob", "pi", "team", None))  # type: ignore[arg-type]
    assert api.read[0] == JOB_PATH
    [wl] = workloads_for(job)
    assert found == [f"team/{wl['metadata']['name']}"]
    [entry] = explain(listing, found)
    assert (entry["status"], entry["clusterQueue"]) == ("Pending", "cq")
    assert list(entry["podSets"]) == ["launcher", "worker"]
    assert entry["podSets"]["worker"]["flavors"]["default"]["cpu"]["needed"] == "1"
    assert wl["metadata"]["name"] in text(entry)
