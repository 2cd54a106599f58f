"""leaderworkerset.x-k8s.io/v1 LeaderWorkerSet: one Workload per group, run through its pods.

An LWS has no suspend field. Kueue makes one Workload per group index (a group is a leader
and its workers, scheduled together) and gates every pod with ``kueue.x-k8s.io/admission``.
This lifecycle only owns those Workloads and *adopts* the group pods: it stamps each pod
with the name of its group's Workload, the group size and its role, after which the pod
lifecycle (``manager.jobs.pod``) ungates and stops the group as its Workload is admitted or
evicted. That is the split of Kueue's LWS reconciler and pod-group reconciler, and the
v0.12 fix: under manageJobsWithoutQueueName a queue-less LWS still gets one Workload per
group (with an empty queue name, so it waits) and its pods are adopted into those groups,
never treated as stray single pods that could start without quota.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON, meta
from pykueue.manager.core.jobs_to_workloads import queue_name, workload_name
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.lifecycle import TopLevelOwner
from pykueue.manager.jobs.prebuilt import set_prebuilt_workload_name

GROUP = "leaderworkerset.x-k8s.io"


def group_workload_name(lws: Mapping[str, Any], index: int | str) -> str:
    m = meta(lws)
    return workload_name("LeaderWorkerSet", GROUP, f"{m.get('name')}-{index}", str(m.get("uid", "")))


def _terminated(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _gated(pod: Mapping[str, Any]) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or ()
    return any(g.get("name") == keys.ADMISSION_GATE for g in gates)


def role_of(lws: Mapping[str, Any], pod: Mapping[str, Any]) -> str:
    """The podset a pod belongs to: ``main`` without a leader template, else ``leader`` for
    the pod without a leader-name annotation and ``worker`` for the others."""
    lwt = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    if not lwt.get("leaderTemplate"):
        return "main"
    return "worker" if keys.LWS_LEADER_NAME in (meta(pod).get("annotations") or {}) else "leader"


class LeaderWorkerSetLifecycle(TopLevelOwner):
    integration: Integration = Integration("leaderworkerset.x-k8s.io/leaderworkerset", GROUP, "v1",
                                           "LeaderWorkerSet", "leaderworkersets")

    # -- AdoptsPods ------------------------------------------------------------------------

    def pod_owner(self, pod: Mapping[str, Any]) -> str | None:
        name = (meta(pod).get("labels") or {}).get(keys.LWS_NAME)
        if not name or keys.POD_SUSPENDING_PARENT not in (meta(pod).get("annotations") or {}):
            return None
        return str(name)

    def adopt(
        self, owner: Mapping[str, Any], pod: Mapping[str, Any], *, identifier_annotations: bool = True
    ) -> JSON | None:
        pmeta = meta(pod)
        labels = pmeta.get("labels") or {}
        if (self.pod_owner(pod) != meta(owner).get("name") or _terminated(pod)
                or pmeta.get("deletionTimestamp") or labels.get(keys.MANAGED) == "true"):
            return None
        index = labels.get(keys.LWS_GROUP_INDEX)
        if index is None:
            return None  # the LWS controller labels it soon; the pod update brings us back
        group = group_workload_name(owner, str(index))
        size = int(((owner.get("spec") or {}).get("leaderWorkerTemplate") or {}).get("size", 1))
        out = copy.deepcopy(dict(pod))
        out_labels = out["metadata"].setdefault("labels", {})
        out_labels[keys.MANAGED] = "true"
        queue = queue_name(owner)
        if queue and _gated(pod):
            out_labels[keys.QUEUE_NAME] = queue
        annotations = out["metadata"].setdefault("annotations", {})
        # Kueue's SetPodGroupName and SetPrebuiltWorkloadName: annotations under the
        # WorkloadIdentifierAnnotations gate, labels without it.
        (annotations if identifier_annotations else out_labels)[keys.POD_GROUP_NAME] = group
        set_prebuilt_workload_name(out["metadata"], group, identifier_annotations)
        annotations[keys.POD_GROUP_TOTAL_COUNT] = str(size)
        annotations[keys.ROLE_HASH] = role_of(owner, pod)
        return out


LIFECYCLE = LeaderWorkerSetLifecycle()
