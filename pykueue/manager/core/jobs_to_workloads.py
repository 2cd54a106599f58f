"""What every job kind's Workload has in common, built the way Kueue's reconcilers build it.

Names follow Kueue's rule ``<kind>-<owner name>-<first 5 hex of sha1(kind, group, owner
name, uid)>`` so simulated names match the ones a cluster would show; the queue name, the
priority class, the owner reference and the job-uid label are filled in the same way for
every kind. Each kind's pod sets are its own business (``manager.jobs``, one module per
kind); ``simulate`` and the cluster reconcilers both go through that registry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from pykueue.api import keys

from .objects import named_meta
from .tas_hook import with_topology_requests

_MAX_PREFIX = 247


def workload_name(kind: str, group: str, owner_name: str, owner_uid: str, extra: str | None = None) -> str:
    parts = [kind, group, owner_name, owner_uid] + ([extra] if extra is not None else [])
    digest = hashlib.sha1("\n".join(parts).encode(), usedforsecurity=False).hexdigest()[:5]
    prefix = f"{kind.lower()}-{owner_name}"[:_MAX_PREFIX]
    return f"{prefix}-{digest}"


def queue_name(obj: Mapping[str, Any]) -> str:
    """The LocalQueue an object asks for: its queue-name label, else "". Kueue v0.19 reads only
    the label; the annotation of the same key, which v0.12 still read, names no queue."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return str(labels.get(keys.QUEUE_NAME) or "")


def _max_execution_seconds(label: Any) -> int | None:
    """Kueue's MaximumExecutionTimeSecondsForObject: the label as a positive integer, else none."""
    try:
        value = int(str(label))
    except ValueError:
        return None
    return value if value > 0 else None


def owned_workload(obj: dict[str, Any], name: str, podsets: list[dict[str, Any]], controller: bool,
                   extra_annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """The Workload object for ``podsets`` of the job ``obj``, owned by it."""
    meta = dict(named_meta(obj))
    ns = meta.get("namespace") or "default"
    labels = meta.get("labels") or {}
    spec: dict[str, Any] = {"queueName": queue_name(obj), "podSets": podsets}
    if not spec["queueName"]:
        del spec["queueName"]  # the API omits an empty queue name (and rejects "")
    max_exec = _max_execution_seconds(labels.get(keys.MAX_EXEC_TIME_SECONDS))
    if max_exec is not None:
        spec["maximumExecutionTimeSeconds"] = max_exec
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
    annotations = dict(extra_annotations or {})
    # Kueue's PropagateAdmissionGatedByAnnotation: the job's admission gates hold its Workload.
    if gated_by := str((meta.get("annotations") or {}).get(keys.ADMISSION_GATED_BY) or ""):
        annotations[keys.ADMISSION_GATED_BY] = gated_by
    if annotations:
        wl_meta["annotations"] = annotations
    # Pod sets whose template asks for a topology carry it as topologyRequest, as Kueue's
    # job reconcilers write it: the scheduler reads the request from the Workload.
    return with_topology_requests({"apiVersion": keys.API_VERSION, "kind": "Workload", "metadata": wl_meta,
                                   "spec": spec})
