"""Builders of jobset.x-k8s.io/v1alpha2 JobSets for the JobSet tests.

``replicated_job`` leaves ``replicas``, ``parallelism`` and ``completions`` out when they are
None, so a test can check the API defaults; the cases taken from Kueue's tables pass all three,
zeros included where Kueue's table leaves them at Go's zero value.
"""

from __future__ import annotations

from typing import Any

from pykueue.api import keys


def replicated_job(
    name: str,
    *,
    replicas: int | None = 1,
    parallelism: int | None = 1,
    completions: int | None = 1,
    pod_annotations: dict[str, str] | None = None,
    cpu: str | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox:latest"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    pod_template: dict[str, Any] = {"spec": {"restartPolicy": "Never", "containers": [container]}}
    if pod_annotations is not None:
        pod_template["metadata"] = {"annotations": dict(pod_annotations)}
    job_spec: dict[str, Any] = {"template": pod_template}
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
    if completions is not None:
        job_spec["completions"] = completions
    rj: dict[str, Any] = {"name": name, "template": {"spec": job_spec}}
    if replicas is not None:
        rj["replicas"] = replicas
    return rj


def jobset(
    name: str = "jobset",
    namespace: str = "ns",
    *rjs: dict[str, Any],
    queue: str | None = None,
    suspend: bool | None = True,
    managed_by: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                            "labels": dict(labels or {})}
    if queue is not None:
        meta["labels"][keys.QUEUE_NAME] = queue
    if annotations:
        meta["annotations"] = dict(annotations)
    spec: dict[str, Any] = {"replicatedJobs": list(rjs)}
    if suspend is not None:
        spec["suspend"] = suspend
    if managed_by is not None:
        spec["managedBy"] = managed_by
    obj: dict[str, Any] = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta,
                           "spec": spec}
    if status is not None:
        obj["status"] = status
    return obj


def jobs_status(*entries: tuple[str, int, int]) -> dict[str, Any]:
    """``status.replicatedJobsStatus`` from (name, ready, succeeded) triples."""
    return {"replicatedJobsStatus": [{"name": n, "ready": r, "succeeded": s} for n, r, s in entries]}
