"""pykueue's own rules for the KubeRay kinds, beyond Kueue's ported tables
(``test_ray_kueue_cases.py``): the registry's names (``pykueue explain``), ``simulate`` over
Kueue's samples, start and stop of a RayService's cluster spec, and the elastic RayCluster's
slices and ungating per pod set."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import keys
from pykueue.manager.jobs.lifecycle import PodSetInfo, Replace, StartConflict
from pykueue.manager.jobs.raycluster.kind import KIND as RAYCLUSTER_KIND
from pykueue.manager.jobs.raycluster.lifecycle import LIFECYCLE as RAYCLUSTER
from pykueue.manager.jobs.rayjob.kind import KIND as RAYJOB_KIND
from pykueue.manager.jobs.rayjob.lifecycle import LIFECYCLE as RAYJOB
from pykueue.manager.jobs.rayservice.kind import KIND as RAYSERVICE_KIND
from pykueue.manager.jobs.rayservice.lifecycle import LIFECYCLE as RAYSERVICE
from pykueue.manager.jobs.registry import by_cli_name, kind_of, workloads_for
from pykueue.manager.simulate import simulate

EXAMPLES = Path(__file__).parents[2] / "e2e" / "manifests" / "kueue-examples"
SAMPLES = {
    "RayJob": "ray-job-sample.yaml",
    "RayCluster": "ray-cluster-sample.yaml",
    "RayService": "ray-service-sample.yaml",
}


def sample(kind: str, name: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load((EXAMPLES / SAMPLES[kind]).read_text())
    obj["metadata"]["namespace"] = "default"
    obj["metadata"]["uid"] = f"uid-{name or kind}"
    if name:
        obj["metadata"]["name"] = name
    return obj


@pytest.mark.parametrize(
    ("names", "kind"),
    [
        (("rayjob", "rayjobs", "RayJob.ray.io"), RAYJOB_KIND),
        (("raycluster", "rayclusters"), RAYCLUSTER_KIND),
        (("rayservice", "rayservices"), RAYSERVICE_KIND),
    ],
)
def test_explain_knows_the_kinds_by_their_names(names: tuple[str, ...], kind: Any) -> None:
    assert all(by_cli_name(n) is kind for n in names)


@pytest.mark.parametrize(
    ("kind", "podsets"),
    [
        ("RayJob", [("head", 1), ("small-group", 1), ("submitter", 1)]),
        ("RayCluster", [("head", 1), ("small-group", 1)]),
        ("RayService", [("head", 1), ("small-group", 1)]),
    ],
)
def test_the_samples_workloads(kind: str, podsets: list[tuple[str, int]]) -> None:
    obj = sample(kind)
    assert kind_of(obj) is not None
    [wl] = workloads_for(obj)
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == podsets
    assert wl["spec"]["queueName"] == "user-queue"
    assert wl["metadata"]["ownerReferences"][0]["kind"] == kind


def test_simulate_admits_the_samples_that_fit(tmp_path: Path) -> None:
    """5 CPUs: the RayCluster (2) and the RayJob (2.5 with its submitter) fit, the RayService (3)
    waits."""
    scenario: list[dict[str, Any]] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "rf"}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "rf",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "5"},
                                    {"name": "memory", "nominalQuota": "32Gi"},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "user-queue", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        },
        sample("RayCluster"),
        sample("RayJob"),
        sample("RayService"),
    ]
    path = tmp_path / "ray.yaml"
    path.write_text(yaml.safe_dump_all(scenario))
    owners = {w["owner"]: w["status"] for w in simulate([str(path)])["workloads"].values()}
    assert owners == {
        "ray.io/v1/RayCluster default/raycluster-complete": "Admitted",
        "ray.io/v1/RayJob default/rayjob-sample": "Admitted",
        "ray.io/v1/RayService default/test-rayservice": "Pending",
    }


def test_a_rayservice_starts_and_stops_through_its_cluster_spec() -> None:
    svc = sample("RayService")
    svc["spec"]["rayClusterConfig"]["suspend"] = True
    [wl] = workloads_for(svc)
    infos = [
        PodSetInfo("head", 1, node_selector={"pool": "a"}),
        PodSetInfo("small-group", 1, node_selector={"pool": "b"}),
    ]
    [started] = RAYSERVICE.start(svc, wl, infos)
    assert isinstance(started, Replace)
    config = started.obj["spec"]["rayClusterConfig"]
    assert config["suspend"] is False and not RAYSERVICE.is_suspended(started.obj)
    assert config["headGroupSpec"]["template"]["spec"]["nodeSelector"] == {"pool": "a"}
    assert config["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"] == {"pool": "b"}
    [stopped] = RAYSERVICE.stop(started.obj)
    assert RAYSERVICE.is_suspended(stopped.obj)
    [restored] = RAYSERVICE.restore(stopped.obj, wl)
    assert "nodeSelector" not in restored.obj["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
    with pytest.raises(StartConflict):
        RAYSERVICE.start(svc, wl, infos[:1])


def _elastic_cluster(generation: int, replicas: int) -> dict[str, Any]:
    cluster = sample("RayCluster", "elastic")
    cluster["metadata"]["annotations"] = {keys.ELASTIC_JOB: "true"}
    cluster["metadata"]["generation"] = generation
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = replicas
    return cluster


def test_an_elastic_raycluster_gets_a_slice_per_generation() -> None:
    [first] = workloads_for(_elastic_cluster(1, 1))
    [second] = workloads_for(_elastic_cluster(2, 3))
    assert first["metadata"]["name"] != second["metadata"]["name"]
    assert first["metadata"]["annotations"][keys.WORKLOAD_SLICE_NAME] == first["metadata"]["name"]
    assert [ps["count"] for ps in second["spec"]["podSets"]] == [1, 3]
    assert RAYCLUSTER.elastic(_elastic_cluster(1, 1)) and not RAYCLUSTER.elastic(sample("RayCluster"))
    assert RAYCLUSTER.pods_reported(_elastic_cluster(2, 3)) == 4
    assert RAYCLUSTER.pods_selector(_elastic_cluster(1, 1)) == "ray.io/cluster=elastic"


def _pod(name: str, podset: str, gated: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingGates": [{"name": keys.ELASTIC_JOB_GATE}]} if gated else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {keys.PODSET: podset}},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def test_the_ungater_lets_each_pod_set_start_up_to_its_admitted_count() -> None:
    workload = {
        "spec": {"podSets": [{"name": "head", "count": 1}, {"name": "small-group", "count": 2}]},
        "status": {
            "admission": {
                "podSetAssignments": [{"name": "head", "count": 1}, {"name": "small-group", "count": 2}]
            }
        },
    }
    pods = [
        _pod("h", "head", False),
        _pod("w-a", "small-group", False),
        _pod("w-b", "small-group", True),
        _pod("w-c", "small-group", True),
        _pod("x", "other", True),
    ]
    actions = RAYCLUSTER.ungate(workload, copy.deepcopy(pods))
    assert [
        (a.obj["metadata"]["name"], a.obj["spec"].get("schedulingGates"))
        for a in actions
        if isinstance(a, Replace)
    ] == [("w-b", None)]


def test_an_elastic_rayjob_runs_through_slices_and_ungates_its_clusters_pods() -> None:
    job = sample("RayJob", "elastic")
    job["metadata"]["annotations"] = {keys.ELASTIC_JOB: "true"}
    job["metadata"]["generation"] = 3
    [wl] = workloads_for(job)
    assert wl["metadata"]["annotations"][keys.WORKLOAD_SLICE_NAME] == wl["metadata"]["name"]
    assert wl["metadata"]["name"] != RAYJOB.workload_name(job)
    assert RAYJOB.elastic(job) and RAYJOB.pods_reported(job) == 0  # no cluster yet
    job["status"] = {"rayClusterName": "elastic-abcde"}
    assert RAYJOB.pods_selector(job) == "ray.io/cluster=elastic-abcde"
    assert RAYJOB.pods_reported(job) == 2  # the head and the worker; the submitter is not the cluster's
    workload = {"spec": {"podSets": [{"name": "head", "count": 1}, {"name": "small-group", "count": 1}]}}
    actions = RAYJOB.ungate(workload, [_pod("h", "head", True), _pod("w", "small-group", True)])
    assert sorted(a.obj["metadata"]["name"] for a in actions if isinstance(a, Replace)) == ["h", "w"]
