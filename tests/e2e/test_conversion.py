"""Kueue v0.12 manifests (``kueue.x-k8s.io/v1beta1``) work in the dev cluster as typed.

The CRDs store ``v1beta2``; kube-apiserver sends every ``v1beta1`` object, and every stored
object read or watched as ``v1beta1``, to pykueue's conversion webhook. Here a user applies
``v1beta1`` queues with the fields that differ between the versions, submits a plain Job,
and reads the objects back in both versions while the Job runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import DevCluster, wait_until

pytestmark = pytest.mark.e2e

V1BETA1 = "kueue.x-k8s.io/v1beta1"


def _v1beta1_queues(namespace: str) -> str:
    """What a Kueue v0.12 user writes: ``cohort``, the deprecated ``Borrow`` fungibility
    value and a WorkloadPriorityClass, all in ``v1beta1``."""
    return f"""\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: conv-{namespace}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: conv-{namespace}
spec:
  cohort: team-{namespace}
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: {namespace}
  flavorFungibility:
    whenCanBorrow: Borrow
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: conv-{namespace}
      resources:
      - name: cpu
        nominalQuota: 2
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  namespace: {namespace}
  name: user-queue
spec:
  clusterQueue: conv-{namespace}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata:
  name: conv-{namespace}
value: 1000
"""


def _job(namespace: str) -> str:
    # kwok completes the pod after the delay; long enough to read the running state.
    return f"""\
apiVersion: batch/v1
kind: Job
metadata:
  name: sample
  namespace: {namespace}
  labels:
    kueue.x-k8s.io/queue-name: user-queue
    kueue.x-k8s.io/priority-class: conv-{namespace}
spec:
  template:
    metadata:
      annotations:
        pod-complete.stage.kwok.x-k8s.io/delay: 300s
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        resources:
          requests:
            cpu: "1"
"""


def _admitted_workload(dev_cluster: DevCluster, namespace: str, version: str) -> dict[str, Any] | None:
    items = dev_cluster.get_json(f"workloads.{version}.kueue.x-k8s.io", "-n", namespace)["items"]
    for wl in items:
        if any(c["type"] == "Admitted" and c["status"] == "True"
               for c in (wl.get("status") or {}).get("conditions") or ()):
            return dict(wl)
    return None


def test_kueue_v1beta1_manifests_queue_and_run_a_job(dev_cluster: DevCluster, namespace: str) -> None:
    name = f"conv-{namespace}"
    try:
        applied = dev_cluster.kubectl("apply", "-f", "-", stdin=_v1beta1_queues(namespace))
        assert applied.stdout.count("created") == 4, applied.stdout

        # Stored and served as v1beta2: the renamed field and the replaced value.
        cq = dev_cluster.get_json("clusterqueues.v1beta2.kueue.x-k8s.io", name)
        assert cq["spec"]["cohortName"] == f"team-{namespace}"
        assert "cohort" not in cq["spec"]
        assert cq["spec"]["flavorFungibility"]["whenCanBorrow"] == "MayStopSearch"
        # And back down for a v1beta1 reader.
        old = dev_cluster.get_json("clusterqueues.v1beta1.kueue.x-k8s.io", name)
        assert old["apiVersion"] == V1BETA1
        assert old["spec"]["cohort"] == f"team-{namespace}"
        assert "cohortName" not in old["spec"]

        dev_cluster.kubectl("create", "-f", "-", stdin=_job(namespace))
        wl = wait_until("the Job's Workload to be admitted (read as v1beta1)",
                        lambda: _admitted_workload(dev_cluster, namespace, "v1beta1"), 60.0)
        assert wl["apiVersion"] == V1BETA1
        assert wl["status"]["admission"]["clusterQueue"] == name
        assert wl["spec"]["priorityClassSource"] == "kueue.x-k8s.io/workloadpriorityclass"
        assert wl["spec"]["priorityClassName"] == name
        assert wl["spec"]["priority"] == 1000
        current = _admitted_workload(dev_cluster, namespace, "v1beta2")
        assert current is not None
        assert current["spec"]["priorityClassRef"] == {
            "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}
        assert "priorityClassSource" not in current["spec"]

        # The LocalQueue's usage, written by pykueue in v1beta2, under v1beta1's field name.
        def usage_as_v1beta1() -> list[dict[str, Any]] | None:
            lq = dev_cluster.get_json("localqueues.v1beta1.kueue.x-k8s.io", "user-queue", "-n", namespace)
            usage = (lq.get("status") or {}).get("flavorUsage") or []
            cpu = [r for f in usage for r in f.get("resources") or () if r["name"] == "cpu"]
            return usage if cpu and cpu[0]["total"] == "1" else None

        usage = wait_until("the LocalQueue's usage under v1beta1's flavorUsage", usage_as_v1beta1, 30.0)
        assert usage[0]["name"] == name
        job = dev_cluster.get_json("job", "sample", "-n", namespace)
        assert job["spec"]["suspend"] is False
    finally:
        dev_cluster.kubectl("delete", "job", "sample", "-n", namespace, "--wait=false", check=False)
        for kind in ("clusterqueue", "resourceflavor", "workloadpriorityclass"):
            dev_cluster.kubectl("delete", kind, name, "--wait=false", check=False)
