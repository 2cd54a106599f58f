"""Which scheduler places a pod: pods of a topology-aware PodSet go to the TAS scheduler.

Only a kube-scheduler wired to pykueue's extender enforces a topology assignment, and a
pod's ``spec.schedulerName`` is immutable once it exists, so it is chosen at pod CREATE
(the pod webhook), for every job kind alike. A pod belongs to a topology-aware PodSet when

* its template was stamped at start for a PodSet admitted with a topology assignment (the
  ``kueue.x-k8s.io/tas`` label: Jobs, PyTorchJobs, whose pods are created after
  admission), or
* it is a Kueue pod (queue name, or held by its parent's integration, as LeaderWorkerSet
  pods are, created before admission) with a topology annotation, or whose LocalQueue's
  ClusterQueue has only TAS flavors (Kueue then implies an unconstrained topology).

A pod whose user named another non-default scheduler keeps it: that is their choice, and
the warning says the topology will not be enforced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON
from pykueue.manager.core.objects import ObjectError, cluster_queue_from, flavor_from
from pykueue.manager.core.tas_hook import tas_only
from pykueue.manager.jobs.job_fields import annotations_of, labels

DEFAULT_SCHEDULER = "default-scheduler"


def stamped_tas(pod: Mapping[str, Any]) -> bool:
    """Started with a topology assignment (the label set from the admission)."""
    return labels(pod).get(keys.TAS_LABEL) == "true"


def kueue_pod_queue(pod: Mapping[str, Any]) -> str | None:
    """The queue of a pod Kueue admits before it runs (its own queue label, or its parent's
    stamped on it); None for other pods."""
    pod_labels, annotations = labels(pod), annotations_of(pod)
    if keys.QUEUE_NAME in pod_labels:
        return pod_labels[keys.QUEUE_NAME]
    if keys.POD_SUSPENDING_PARENT in annotations:
        return ""
    return None


def requests_topology(pod: Mapping[str, Any]) -> bool:
    return any(k in annotations_of(pod) for k in keys.TOPOLOGY_ANNOTATIONS)


def needs_queue_lookup(pod: Mapping[str, Any]) -> bool:
    """Whether routing depends on the pod's ClusterQueue (implied topology)."""
    if pod.get("kind") != "Pod":
        return False
    queue = kueue_pod_queue(pod)
    return bool(queue) and not stamped_tas(pod) and not requests_topology(pod)


def topology_aware(pod: Mapping[str, Any], queue_tas_only: bool) -> bool:
    if stamped_tas(pod):
        return True
    if kueue_pod_queue(pod) is None:
        return False
    return requests_topology(pod) or queue_tas_only


def route(pod: JSON, scheduler: str, queue_tas_only: bool = False) -> list[str]:
    """Set the TAS scheduler on a topology-aware pod, in place; returns admission warnings."""
    if not topology_aware(pod, queue_tas_only):
        return []
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return []
    current = spec.get("schedulerName")
    if current in (None, "", DEFAULT_SCHEDULER):
        spec["schedulerName"] = scheduler
        return []
    if current == scheduler:
        return []
    return [f"spec.schedulerName {current!r} is kept: this pod's topology assignment will not be "
            f"enforced (pods of topology-aware PodSets are placed by {scheduler!r})"]


def queue_is_tas_only(cluster_queue: JSON | None, flavors: Mapping[str, JSON]) -> bool:
    """Kueue's implied topology: every flavor of the ClusterQueue is a TAS flavor."""
    if cluster_queue is None:
        return False
    try:
        return tas_only(cluster_queue_from(dict(cluster_queue)),
                        {name: flavor_from(dict(obj)) for name, obj in flavors.items()})
    except ObjectError:
        return False  # a ClusterQueue the manager cannot use either admits nothing
