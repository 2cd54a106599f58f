"""RayJobs, RayClusters and RayServices queued by pykueue and run by the real KubeRay operator.

The dev cluster runs KubeRay (``devcluster.operators``): it makes a RayJob's RayCluster and
a cluster's head and worker pods, which kwok runs. Nothing in them runs Ray, so a RayJob never
gets past submitting its job (its status needs a live Ray head to ask) and a RayService never
becomes Ready: these tests check what does not need Ray (queueing while suspended, admission
within quota, the pods on the flavor's nodes, preemption, deletion, the elastic scale-up of a
RayCluster) and end the objects by deleting them. Kueue's samples ``jobs/ray-job-sample.yaml``,
``jobs/ray-cluster-sample.yaml`` and ``jobs/ray-service-sample.yaml`` are created with
``kubectl create``, adapted only in name, namespace, queue and priority. The tests write
nothing on pykueue's behalf (the elastic test scales the cluster as Ray's autoscaler would).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import (
    NODE_LABELS,
    OperatorKind,
    check_a_higher_priority_one_preempts,
    check_the_second_waits_until_the_first_is_done,
    condition,
    cq_cpu_usage,
    queues,
    workloads_owned_by,
)

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).parent / "manifests" / "kueue-examples"
CLUSTER_LABEL = "ray.io/cluster"
GATE = keys.ELASTIC_JOB_GATE


def _sample(file: str, name: str, priority_class: str | None) -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all((EXAMPLES / file).read_text()) if d]
    obj = copy.deepcopy(doc)
    meta = obj["metadata"]
    meta.pop("namespace", None)
    meta["name"] = name
    meta["labels"][keys.QUEUE_NAME] = "lq"
    if priority_class:
        meta["labels"][keys.PRIORITY_CLASS] = priority_class
    return obj


def rayjob(name: str, runtime: str, priority_class: str | None = None) -> dict[str, Any]:
    """Kueue's sample RayJob: a head and a worker of 1 CPU, and the submitter (500m, 200Mi)."""
    return _sample("ray-job-sample.yaml", name, priority_class)


def raycluster(name: str, runtime: str, priority_class: str | None = None) -> dict[str, Any]:
    """Kueue's sample RayCluster: a head of 1 CPU and 2G, a worker of 1 CPU and 1G."""
    return _sample("ray-cluster-sample.yaml", name, priority_class)


def rayservice(name: str, runtime: str, priority_class: str | None = None) -> dict[str, Any]:
    """Kueue's sample RayService: a head of 2 CPUs and 4Gi, a worker of 1 CPU and 2Gi."""
    return _sample("ray-service-sample.yaml", name, priority_class)


def _live(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def _cluster_pods(dev_cluster: DevCluster, namespace: str, cluster: str | None) -> list[dict[str, Any]]:
    if not cluster:
        return []
    return _live(dev_cluster.get_json("pods", "-n", namespace, "-l", f"{CLUSTER_LABEL}={cluster}")["items"])


class RayKind(OperatorKind):
    """A KubeRay kind: its pods are those of its Ray cluster (the RayCluster itself, or the one
    KubeRay made for a RayJob or RayService), plus a RayJob's submitter pod; it runs once the
    head and its one worker run."""

    def _cluster(self, dev_cluster: DevCluster, namespace: str, name: str) -> str | None:
        if self.kind == "RayCluster":
            return name
        for rc in dev_cluster.get_json("rayclusters.ray.io", "-n", namespace)["items"]:
            refs = rc["metadata"].get("ownerReferences") or ()
            if any(r["kind"] == self.kind and r["name"] == name for r in refs):
                return str(rc["metadata"]["name"])
        return None

    def pods(self, dev_cluster: DevCluster, namespace: str, name: str) -> list[dict[str, Any]]:
        found = _cluster_pods(dev_cluster, namespace, self._cluster(dev_cluster, namespace, name))
        if self.kind == "RayJob":
            found += _live(dev_cluster.get_json("pods", "-n", namespace, "-l", f"job-name={name}")["items"])
        return found

    def running(self, dev_cluster: DevCluster, namespace: str, name: str) -> bool:
        nodes = [
            p
            for p in self.pods(dev_cluster, namespace, name)
            if p["metadata"]["labels"].get("ray.io/node-type") in ("head", "worker")
        ]
        return len(nodes) == 2 and all(p["status"].get("phase") == "Running" for p in nodes)


RAYJOB = RayKind("rayjobs.ray.io", "RayJob", None, lambda j: j["spec"].get("suspend") is True)
RAYCLUSTER = RayKind("rayclusters.ray.io", "RayCluster", None, lambda c: c["spec"].get("suspend") is True)
RAYSERVICE = RayKind(
    "rayservices.ray.io", "RayService", None, lambda s: s["spec"]["rayClusterConfig"].get("suspend") is True
)


@pytest.fixture
def quota(dev_cluster: DevCluster, namespace: str) -> Iterator[str]:
    """Room for one sample of each kind (at most 3 CPUs) on the labelled flavor; the
    ClusterQueue's name."""
    cq = queues(dev_cluster, namespace, "3", memory="8Gi")
    try:
        yield cq
    finally:
        for kind in (RAYJOB, RAYSERVICE, RAYCLUSTER):
            dev_cluster.kubectl(
                "delete", kind.resource, "--all", "-n", namespace, "--wait=false", check=False
            )


@pytest.mark.parametrize(
    ("kind", "make", "podsets"),
    [
        (RAYJOB, rayjob, [("head", 1), ("small-group", 1), ("submitter", 1)]),
        (RAYSERVICE, rayservice, [("head", 1), ("small-group", 1)]),
    ],
    ids=["rayjob", "rayservice"],
)
def test_the_sample_runs_on_the_flavors_nodes_and_the_next_waits_suspended(
    dev_cluster: DevCluster,
    namespace: str,
    quota: str,
    kind: RayKind,
    make: Callable[[str, str, str | None], dict[str, Any]],
    podsets: list[tuple[str, int]],
) -> None:
    check_the_second_waits_until_the_first_is_done(dev_cluster, namespace, quota, kind, make, podsets)


def test_a_higher_priority_raycluster_preempts_a_running_one(
    dev_cluster: DevCluster, namespace: str, quota: str
) -> None:
    check_a_higher_priority_one_preempts(dev_cluster, namespace, quota, RAYCLUSTER, raycluster)


def _gated(pod: dict[str, Any]) -> bool:
    return any(g["name"] == GATE for g in pod["spec"].get("schedulingGates") or ())


def _workers(dev_cluster: DevCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    return [
        p
        for p in _cluster_pods(dev_cluster, namespace, name)
        if p["metadata"]["labels"].get("ray.io/node-type") == "worker"
    ]


def test_an_elastic_autoscaling_raycluster_scales_up_through_workload_slices(
    dev_cluster: DevCluster, namespace: str
) -> None:
    """The sample as an elastic job with the in-tree autoscaler (its sidecar counted in the
    head's pod set: 500m): 2.5 CPUs of a 3.5-CPU quota. A worker more (what the autoscaler
    writes) fits: a new slice is admitted, the old one finishes as replaced and the new pod
    starts on the flavor's nodes; one more does not fit: its slice waits and its pod stays
    gated while the others keep running."""
    cq = queues(dev_cluster, namespace, "3500m", memory="8Gi")
    cluster = raycluster("elastic", "")
    cluster["metadata"].setdefault("annotations", {})[keys.ELASTIC_JOB] = "true"
    cluster["spec"]["enableInTreeAutoscaling"] = True
    try:
        RAYCLUSTER.create(dev_cluster, namespace, cluster)
        created = RAYCLUSTER.get(dev_cluster, namespace, "elastic")
        for template in (
            created["spec"]["headGroupSpec"]["template"],
            created["spec"]["workerGroupSpecs"][0]["template"],
        ):
            assert {"name": GATE} in template["spec"]["schedulingGates"]  # the webhook's gate
        wait_until(
            "the elastic cluster running", lambda: RAYCLUSTER.running(dev_cluster, namespace, "elastic"), 90.0
        )
        (first,) = workloads_owned_by(dev_cluster, namespace, "RayCluster", "elastic")
        assert [(ps["name"], ps["count"]) for ps in first["spec"]["podSets"]] == [
            ("head", 1),
            ("small-group", 1),
        ]
        wait_until("the first slice's quota", lambda: cq_cpu_usage(dev_cluster, cq) == "2500m", 30.0)

        def scale(replicas: int) -> None:
            dev_cluster.kubectl(
                "patch",
                RAYCLUSTER.resource,
                "elastic",
                "-n",
                namespace,
                "--type=json",
                "-p",
                f'[{{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": {replicas}}}]',
            )

        def slices() -> dict[str, dict[str, Any]]:
            return {
                w["metadata"]["name"]: w
                for w in workloads_owned_by(dev_cluster, namespace, "RayCluster", "elastic")
            }

        scale(2)

        def two_workers_running() -> bool:
            workers = _workers(dev_cluster, namespace, "elastic")
            return len(workers) == 2 and all(p["status"].get("phase") == "Running" for p in workers)

        wait_until("the second worker running", two_workers_running, 90.0)
        found = slices()
        old = found[first["metadata"]["name"]]
        assert condition(old, "Finished") and any(
            c["type"] == "Finished" and c["reason"] == keys.Reason.WORKLOAD_SLICE_REPLACED
            for c in old["status"]["conditions"]
        )
        (second,) = [w for n, w in found.items() if n != first["metadata"]["name"]]
        assert condition(second, "Admitted")
        assert [(ps["name"], ps["count"]) for ps in second["spec"]["podSets"]] == [
            ("head", 1),
            ("small-group", 2),
        ]
        for pod in _workers(dev_cluster, namespace, "elastic"):
            assert NODE_LABELS.items() <= (pod["spec"].get("nodeSelector") or {}).items()
        wait_until("the quota of the bigger slice", lambda: cq_cpu_usage(dev_cluster, cq) == "3500m", 30.0)

        scale(3)

        def third_waits() -> bool:
            pending = [w for n, w in slices().items() if n not in found]
            workers = _workers(dev_cluster, namespace, "elastic")
            return (
                len(pending) == 1
                and not condition(pending[0], "QuotaReserved")
                and len(workers) == 3
                and sum(1 for p in workers if _gated(p)) == 1
            )

        wait_until("the third worker's slice waiting for quota, its pod gated", third_waits, 60.0)
        assert condition(slices()[second["metadata"]["name"]], "Admitted")
        assert (
            sum(
                1
                for p in _workers(dev_cluster, namespace, "elastic")
                if p["status"].get("phase") == "Running"
            )
            == 2
        )
        RAYCLUSTER.end(dev_cluster, namespace, "elastic")
        wait_until("no quota used", lambda: cq_cpu_usage(dev_cluster, cq) == "0", 30.0)
    finally:
        dev_cluster.kubectl(
            "delete", RAYCLUSTER.resource, "--all", "-n", namespace, "--wait=false", check=False
        )
