"""Small builders of the objects the webhook cases send."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.api import keys

JOB_M, JOB_V = "/mutate-batch-v1-job", "/validate-batch-v1-job"
PT_M, PT_V = "/mutate-kubeflow-org-v1-pytorchjob", "/validate-kubeflow-org-v1-pytorchjob"
LWS_M, LWS_V = (
    "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
    "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
)
POD_M, POD_V = "/mutate--v1-pod", "/validate--v1-pod"


def _meta(
    name: str, labels: dict[str, str] | None, annotations: dict[str, str] | None, namespace: str = "default"
) -> dict[str, Any]:
    """The metadata the builders start from: a uid derived from the name, copies of the maps."""
    return {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "labels": dict(labels or {}),
        "annotations": dict(annotations or {}),
    }


def job(
    name: str = "job",
    *,
    namespace: str = "default",
    queue: str | None = None,
    suspend: bool = False,
    parallelism: int = 1,
    completions: int | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    template_annotations: dict[str, str] | None = None,
    owner: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    meta = _meta(name, labels, annotations, namespace)
    if queue is not None:
        meta["labels"][keys.QUEUE_NAME] = queue
    if owner is not None:
        meta["ownerReferences"] = [owner]
    body: dict[str, Any] = {
        "suspend": suspend,
        "parallelism": parallelism,
        "template": {
            "metadata": {"annotations": dict(template_annotations or {})},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"},
        },
    }
    if completions is not None:
        body["completions"] = completions
    body.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": body}


def owner_ref(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}


def pytorchjob(
    name: str = "pt",
    *,
    queue: str | None = None,
    suspend: bool | None = None,
    worker_annotations: dict[str, str] | None = None,
    workers: int = 2,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {}}
    if queue:
        meta["labels"][keys.QUEUE_NAME] = queue
    tmpl = {"spec": {"containers": [{"name": "pytorch", "image": "pytorch"}]}}
    spec: dict[str, Any] = {
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": copy.deepcopy(tmpl)},
            "Worker": {
                "replicas": workers,
                "template": {**copy.deepcopy(tmpl), "metadata": {"annotations": worker_annotations or {}}},
            },
        }
    }
    if suspend is not None:
        spec["runPolicy"] = {"suspend": suspend}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta, "spec": spec}


def lws(
    name: str = "lws",
    *,
    queue: str | None = None,
    labels: dict[str, str] | None = None,
    leader: bool = True,
    size: int = 3,
    replicas: int | None = 1,
    ready: int | None = None,
    leader_annotations: dict[str, str] | None = None,
    worker_annotations: dict[str, str] | None = None,
    worker_labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta = _meta(name, labels, annotations)
    if queue:
        meta["labels"][keys.QUEUE_NAME] = queue

    def tmpl(ann: dict[str, str] | None, lab: dict[str, str] | None = None) -> dict[str, Any]:
        return {
            "metadata": {"annotations": dict(ann or {}), "labels": dict(lab or {})},
            "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
        }

    lwt: dict[str, Any] = {"size": size, "workerTemplate": tmpl(worker_annotations, worker_labels)}
    if leader:
        lwt["leaderTemplate"] = tmpl(leader_annotations)
    spec: dict[str, Any] = {"leaderWorkerTemplate": lwt}
    if replicas is not None:
        spec["replicas"] = replicas
    obj: dict[str, Any] = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": meta,
        "spec": spec,
    }
    if ready is not None:
        obj["status"] = {"readyReplicas": ready}
    return obj


def pod(
    name: str = "pod",
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owner: dict[str, Any] | None = None,
) -> dict[str, Any]:
    meta = _meta(name, labels, annotations)
    if owner:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]},
    }


def labels_of(obj: dict[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def annotations_of(obj: dict[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})
