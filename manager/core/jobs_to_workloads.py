"""Workloads from jobs, built the way Kueue's job reconcilers build them.

Supported: batch/v1 Job (one podset ``main``), kubeflow.org/v1 PyTorchJob (``master``,
``worker``) and leaderworkerset.x-k8s.io/v1 LeaderWorkerSet (one Workload per group, with
``leader``/``worker`` podsets, or ``main`` without a leader template). Names follow
Kueue's rule ``<kind>-<owner name>-<first 5 hex of sha1(kind, group, owner name, uid)>``
so simulated names match the ones a cluster would show.

The job lifecycles in ``manager.jobs`` build their Workloads with :func:`build_workloads`;
the content lives here so ``simulate`` (core only) and the cluster reconcilers agree.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Mapping
from typing import Any

from api import keys

from .objects import ObjectError

_MAX_PREFIX = 247


def workload_name(kind: str, group: str, owner_name: str, owner_uid: str, extra: str | None = None) -> str:
    parts = [kind, group, owner_name, owner_uid] + ([extra] if extra is not None else [])
    digest = hashlib.sha1("\n".join(parts).encode(), usedforsecurity=False).hexdigest()[:5]
    prefix = f"{kind.lower()}-{owner_name}"[:_MAX_PREFIX]
    return f"{prefix}-{digest}"


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    if not meta.get("name"):
        raise ObjectError(f"{obj.get('kind')} without metadata.name")
    return dict(meta)


def queue_name(obj: Mapping[str, Any]) -> str:
    """The LocalQueue an object asks for: its queue-name label, else the deprecated annotation
    of the same key (Kueue still reads it), else ""."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    return str(labels.get(keys.QUEUE_NAME) or annotations.get(keys.QUEUE_NAME_ANNOTATION) or "")


def _workload(obj: dict[str, Any], name: str, podsets: list[dict[str, Any]], controller: bool,
              extra_annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta = _meta(obj)
    ns = meta.get("namespace") or "default"
    labels = meta.get("labels") or {}
    spec: dict[str, Any] = {"queueName": queue_name(obj), "podSets": podsets}
    if not spec["queueName"]:
        del spec["queueName"]  # the API omits an empty queue name (and rejects "")
    wpc = labels.get(keys.PRIORITY_CLASS)
    if wpc:
        spec["priorityClassRef"] = {"group": keys.GROUP, "kind": "WorkloadPriorityClass", "name": wpc}
    wl_meta: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "ownerReferences": [{"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
                             "name": meta["name"], "uid": meta.get("uid", ""),
                             "controller": controller}],
        "labels": {keys.JOB_UID: meta["uid"]} if meta.get("uid") else {},
    }
    if meta.get("creationTimestamp"):
        wl_meta["creationTimestamp"] = meta["creationTimestamp"]
    if extra_annotations:
        wl_meta["annotations"] = extra_annotations
    return {"apiVersion": keys.API_VERSION, "kind": "Workload", "metadata": wl_meta, "spec": spec}


def _job(obj: dict[str, Any]) -> list[dict[str, Any]]:
    meta, spec = _meta(obj), obj.get("spec") or {}
    parallelism = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    count = parallelism if completions is None else min(parallelism, int(completions))
    podset: dict[str, Any] = {"name": "main", "count": count, "template": spec.get("template") or {}}
    min_par = (meta.get("annotations") or {}).get(keys.JOB_MIN_PARALLELISM)
    if min_par is not None:
        with contextlib.suppress(ValueError):  # Kueue ignores an unparsable value
            podset["minCount"] = int(min_par)
    name = workload_name("Job", "batch", meta["name"], str(meta.get("uid", "")))
    return [_workload(obj, name, [podset], controller=True)]


def _pytorchjob(obj: dict[str, Any]) -> list[dict[str, Any]]:
    meta, spec = _meta(obj), obj.get("spec") or {}
    replicas = spec.get("pytorchReplicaSpecs") or {}
    podsets = [{"name": role.lower(), "count": int(replicas[role].get("replicas", 1)),
                "template": replicas[role].get("template") or {}}
               for role in ("Master", "Worker") if role in replicas]
    if not podsets:
        raise ObjectError(f"PyTorchJob {meta['name']}: no replica specs")
    name = workload_name("PyTorchJob", "kubeflow.org", meta["name"], str(meta.get("uid", "")))
    return [_workload(obj, name, podsets, controller=True)]


def _leaderworkerset(obj: dict[str, Any]) -> list[dict[str, Any]]:
    meta, spec = _meta(obj), obj.get("spec") or {}
    lwt = spec.get("leaderWorkerTemplate") or {}
    size = int(lwt.get("size", 1))
    if lwt.get("leaderTemplate"):
        podsets = [{"name": "leader", "count": 1, "template": lwt["leaderTemplate"]},
                   {"name": "worker", "count": size - 1, "template": lwt.get("workerTemplate") or {}}]
    else:
        podsets = [{"name": "main", "count": size, "template": lwt.get("workerTemplate") or {}}]
    out = []
    for i in range(int(spec.get("replicas", 1))):
        name = workload_name("LeaderWorkerSet", "leaderworkerset.x-k8s.io", f"{meta['name']}-{i}",
                             str(meta.get("uid", "")))
        annotations = {keys.IS_GROUP_WORKLOAD: "true",
                       keys.JOB_OWNER_GVK: "leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet",
                       keys.JOB_OWNER_NAME: meta["name"], keys.COMPONENT_WORKLOAD_INDEX: str(i)}
        out.append(_workload(obj, name, [dict(p) for p in podsets], controller=False,
                             extra_annotations=annotations))
    return out


_CONVERTERS = {
    ("batch/v1", "Job"): _job,
    ("kubeflow.org/v1", "PyTorchJob"): _pytorchjob,
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): _leaderworkerset,
}


def is_job(obj: dict[str, Any]) -> bool:
    return (obj.get("apiVersion"), obj.get("kind")) in _CONVERTERS


def build_workloads(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The Workload object dicts for a job, whether or not it names a queue.

    The job reconcilers call this once they decided the job is managed (a queue name, or
    manageJobsWithoutQueueName: then ``spec.queueName`` is absent and the Workload waits).
    """
    convert = _CONVERTERS.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
    if convert is None:
        raise ObjectError(f"unsupported job kind {obj.get('apiVersion')}/{obj.get('kind')}")
    return convert(obj)


def workloads_for(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The Workload object dicts Kueue would create for a job (empty without a queue name)."""
    if not is_job(obj):
        raise ObjectError(f"unsupported job kind {obj.get('apiVersion')}/{obj.get('kind')}")
    if not queue_name(obj):
        return []  # not managed by Kueue (manageJobsWithoutQueueName is off)
    return build_workloads(obj)
