"""TrainJobs, training runtimes and runtime patches as the tests need them (the shapes of
Kueue's test wrappers for TrainJob and JobSet, written as the dicts the API server stores)."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.api import keys
from pykueue.manager.jobs.related import Related
from pykueue.manager.jobs.trainjob.lifecycle import KUEUE_PATCH_MANAGER
from pykueue.manager.jobs.trainjob.runtime import ANCESTOR_LABEL, CLUSTER_TRAINING_RUNTIME, TRAINING_RUNTIME

JSON = dict[str, Any]
TRAINER_LABELS = {ANCESTOR_LABEL: "trainer"}


def trainjob(name: str = "trainjob", ns: str = "ns", *, runtime: str = "test",
             runtime_kind: str = "ClusterTrainingRuntime", suspend: bool = True,
             queue: str | None = None, num_nodes: int | None = None,
             patches: list[JSON] | None = None, uid: str = "tj-uid") -> JSON:
    """Kueue's ``MakeTrainJob(name, ns).RuntimeRef(...)``: suspended, a trainer with empty
    resources per node."""
    trainer: JSON = {"resourcesPerNode": {"requests": {}, "limits": {}}}
    if num_nodes is not None:
        trainer["numNodes"] = num_nodes
    obj: JSON = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": name, "namespace": ns, "uid": uid, "resourceVersion": "5"},
        "spec": {"suspend": suspend, "trainer": trainer,
                 "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": runtime_kind, "name": runtime}},
    }
    if queue is not None:
        obj["metadata"]["labels"] = {keys.QUEUE_NAME: queue}
    if patches is not None:
        obj["spec"]["runtimePatches"] = patches
    return obj


def replicated_job(name: str, *, replicas: int | None = 1, parallelism: int | None = 1,
                   completions: int | None = 1, labels: dict[str, str] | None = None,
                   pod_annotations: dict[str, str] | None = None,
                   containers: list[JSON] | None = None) -> JSON:
    """Kueue's ``ReplicatedJobRequirements`` (explicit zeros stay zeros, as in its wrapper)."""
    job_spec: JSON = {"template": {"spec": {"containers": containers if containers is not None else [
        {"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
    if completions is not None:
        job_spec["completions"] = completions
    if pod_annotations:
        job_spec["template"]["metadata"] = {"annotations": dict(pod_annotations)}
    template: JSON = {"spec": job_spec}
    if labels:
        template["metadata"] = {"labels": dict(labels)}
    rj: JSON = {"name": name, "template": template}
    if replicas is not None:
        rj["replicas"] = replicas
    return rj


def cluster_runtime(name: str = "test", *replicated_jobs: JSON, ml_policy: JSON | None = None,
                    pod_group_policy: JSON | None = None) -> JSON:
    spec: JSON = {"template": {"spec": {"replicatedJobs": [copy.deepcopy(rj) for rj in replicated_jobs]}}}
    if ml_policy is not None:
        spec["mlPolicy"] = ml_policy
    if pod_group_policy is not None:
        spec["podGroupPolicy"] = pod_group_policy
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
            "metadata": {"name": name}, "spec": spec}


def namespaced_runtime(name: str, ns: str, *replicated_jobs: JSON) -> JSON:
    out = cluster_runtime(name, *replicated_jobs)
    out["kind"] = "TrainingRuntime"
    out["metadata"]["namespace"] = ns
    return out


def related(*runtimes: JSON) -> Related:
    """The runtimes as a caller hands them in, by key."""
    out: Related = {}
    for rt in runtimes:
        kind = CLUSTER_TRAINING_RUNTIME if rt["kind"] == "ClusterTrainingRuntime" else TRAINING_RUNTIME
        out = {**out, kind.key_of(rt): rt}
    return out


def runtime_patch(manager: str = KUEUE_PATCH_MANAGER, *replicated_jobs: JSON,
                  empty_metadata: bool = False) -> JSON:
    """Kueue's ``MakeRuntimePatch(manager)`` (``.EmptyMetadata()``, ``.ReplicatedJobs(...)``)."""
    template: JSON = {"spec": {}}
    if empty_metadata:
        template["metadata"] = {}
    if replicated_jobs:
        template["spec"]["replicatedJobs"] = [copy.deepcopy(p) for p in replicated_jobs]
    return {"manager": manager, "trainingRuntimeSpec": {"template": template}}


def rj_patch(name: str, *, pod_annotations: dict[str, str] | None = None,
             pod_labels: dict[str, str] | None = None, node_selector: dict[str, str] | None = None,
             tolerations: list[JSON] | None = None, gates: list[str] | None = None) -> JSON:
    """Kueue's ``MakeReplicatedJobPatch(name)`` with what it sets on the pod template."""
    pod_meta: JSON = {}
    if pod_annotations:
        pod_meta["annotations"] = dict(pod_annotations)
    if pod_labels:
        pod_meta["labels"] = dict(pod_labels)
    pod_spec: JSON = {}
    if node_selector:
        pod_spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        pod_spec["tolerations"] = [dict(t) for t in tolerations]
    if gates:
        pod_spec["schedulingGates"] = [{"name": g} for g in gates]
    pod: JSON = {}
    if pod_meta:
        pod["metadata"] = pod_meta
    if pod_spec:
        pod["spec"] = pod_spec
    out: JSON = {"name": name}
    if pod:
        out["template"] = {"spec": {"template": pod}}
    return out
