"""A StatefulSet runs as one pod group under one Workload, as Kueue's StatefulSet reconcilers
run it (``statefulset_reconciler.go``, ``statefulset_pod_reconciler.go``).

The webhook stamps the pod template with ``pod-suspending-parent: statefulset``, so the pod
webhook gates every pod the StatefulSet controller creates. This lifecycle owns the group's
Workload (``statefulset-<name>-<hash>``: one pod set ``main`` of ``spec.replicas`` pods, the
template's spec; created only while replicas > 0) and *adopts* the pods: each gets the
``managed`` label, the queue and priority-class labels, the Workload's name as its group and
prebuilt Workload, the replicas as the group's total count, ``fast-admission`` and ``serving``
(the group is admitted as a whole before all its pods exist, and never finishes), the pod
index label and role ``main``. From then on the pod lifecycle (``manager.jobs.pod``) ungates
the group once its Workload is admitted and deletes its running pods when it is evicted (the
StatefulSet controller recreates them, gated again).

Scaling is Kueue v0.19.2's: the webhook lets ``spec.replicas`` change only to or from zero.
Scaled to zero, the Workload is kept but put on hold (Kueue's OnHold: its quota released at
once, not queued); scaled up again, the hold is lifted and it waits for quota as before.

During a rolling update (``status.currentRevision`` differs from ``updateRevision``) a pod of
the current revision, recreated by the StatefulSet controller, is ungated at once without
admission, and Kueue's finalizer (set by releases before v0.19) comes off such pods and off
pods that ended or are being deleted.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON, meta
from pykueue.manager.core.jobs_to_workloads import owned_workload, queue_name, workload_name
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.job_fields import controller_owner, int_or, priority_class_label
from pykueue.manager.jobs.lifecycle import TopLevelOwner, pod_terminated
from pykueue.manager.jobs.pod.lifecycle import STATEFULSET_PARENT, podset_of
from pykueue.manager.jobs.prebuilt import set_prebuilt_workload_name

FRAMEWORK = STATEFULSET_PARENT  # "statefulset": the integration's name, and the pods' parent
STATEFULSET = Integration(FRAMEWORK, "apps", "v1", "StatefulSet", "statefulsets")
ON_HOLD_MESSAGE = "StatefulSet scaled to zero; workload on hold"


def replicas(sts: Mapping[str, Any]) -> int:
    """``spec.replicas``, 1 when unset."""
    return int_or((sts.get("spec") or {}).get("replicas"), 1)


def group_workload_name(sts: Mapping[str, Any]) -> str:
    m = meta(sts)
    name, uid = str(m.get("name") or ""), str(m.get("uid") or "")
    return workload_name(STATEFULSET.kind, STATEFULSET.group, name, uid)


def _template(sts: Mapping[str, Any]) -> Mapping[str, Any]:
    template = (sts.get("spec") or {}).get("template")
    return template if isinstance(template, Mapping) else {}


def managed_by_another_framework(sts: Mapping[str, Any]) -> str | None:
    """The framework whose pods the StatefulSet makes (an LWS's StatefulSets), when its
    template says ``pod-suspending-parent`` is another one; None otherwise."""
    parent = (meta(_template(sts)).get("annotations") or {}).get(keys.POD_SUSPENDING_PARENT)
    return str(parent) if parent is not None and parent != FRAMEWORK else None


def group_workloads(sts: Mapping[str, Any]) -> list[JSON]:
    """Kueue's constructWorkload: one pod set ``main`` of ``spec.replicas`` pods of the
    template's spec (its topology annotations ride along, where the request is read from),
    owned by the StatefulSet, marked as a pod group's Workload."""
    name = str(meta(sts).get("name") or "")
    podset = podset_of(_template(sts), "main", replicas(sts))
    annotations = {keys.IS_GROUP_WORKLOAD: "true", keys.JOB_OWNER_GVK: "apps/v1, Kind=StatefulSet",
                   keys.JOB_OWNER_NAME: name}
    return [owned_workload(dict(sts), group_workload_name(sts), [podset], controller=False,
                           extra_annotations=annotations)]


def _ungate_during_update(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Kueue's shouldUngatePod: a pod of the current revision while a rolling update runs."""
    status = sts.get("status") or {}
    current = status.get("currentRevision")
    return current != status.get("updateRevision") and \
        current == (meta(pod).get("labels") or {}).get(keys.CONTROLLER_REVISION_HASH)


class StatefulSetLifecycle(TopLevelOwner):
    integration: Integration = STATEFULSET

    def is_managed(self, job: Mapping[str, Any], policy: AdmissionPolicy,
                   namespace_labels: Mapping[str, str]) -> bool:
        if managed_by_another_framework(job) is not None:
            return False  # an LWS's StatefulSet: its pods are the LWS's
        return super().is_managed(job, policy, namespace_labels)

    def workloads(self, job: Mapping[str, Any]) -> list[JSON]:
        # Scaled to zero it still names its Workload, kept on hold (never created then).
        return group_workloads(job)

    # -- HoldsWorkloads ----------------------------------------------------------------------

    def on_hold(self, job: Mapping[str, Any]) -> str | None:
        return ON_HOLD_MESSAGE if replicas(job) == 0 else None

    # -- AdoptsPods ----------------------------------------------------------------------------

    def pod_owner(self, pod: Mapping[str, Any]) -> str | None:
        if (meta(pod).get("annotations") or {}).get(keys.POD_SUSPENDING_PARENT) != FRAMEWORK:
            return None
        ref = controller_owner(pod)
        wanted = (STATEFULSET.api_version, STATEFULSET.kind)
        if ref is None or (ref.get("apiVersion"), ref.get("kind")) != wanted:
            return None
        return str(ref.get("name") or "") or None

    def adopt(self, owner: Mapping[str, Any], pod: Mapping[str, Any], *,
              identifier_annotations: bool = True) -> JSON | None:
        """The pod with what the StatefulSet's pod reconciler and reconciler write on it, or
        None when that is nothing (``identifier_annotations``: the WorkloadIdentifierAnnotations
        gate, which puts the group and prebuilt names in annotations rather than labels)."""
        if self.pod_owner(pod) != meta(owner).get("name"):
            return None
        out = copy.deepcopy(dict(pod))
        out_meta = out.setdefault("metadata", {})
        labels = out_meta.setdefault("labels", {})
        annotations = out_meta.setdefault("annotations", {})
        group = group_workload_name(owner)
        queue = queue_name(owner)
        ended = pod_terminated(pod) or bool(meta(pod).get("deletionTimestamp"))
        in_group = (annotations.get(keys.POD_GROUP_NAME) or labels.get(keys.POD_GROUP_NAME)) == group
        if not ended:
            if in_group:
                if queue and labels.get(keys.QUEUE_NAME) != queue:
                    labels[keys.QUEUE_NAME] = queue  # the StatefulSet's queue changed
            else:
                # Reconciled, the StatefulSet is managed: it has a queue name, or
                # manageJobsWithoutQueueName manages it without one.
                labels[keys.MANAGED] = "true"
                if queue:
                    labels[keys.QUEUE_NAME] = queue
                if priority := priority_class_label(owner):
                    labels[keys.PRIORITY_CLASS] = priority
                (annotations if identifier_annotations else labels)[keys.POD_GROUP_NAME] = group
                set_prebuilt_workload_name(out_meta, group, identifier_annotations)
                annotations[keys.POD_GROUP_TOTAL_COUNT] = str(replicas(owner))
                annotations[keys.POD_GROUP_FAST_ADMISSION] = "true"
                annotations[keys.POD_GROUP_SERVING] = "true"
                annotations[keys.POD_GROUP_POD_INDEX_LABEL] = keys.POD_INDEX_LABEL
                annotations[keys.ROLE_HASH] = "main"
        # Only a pod of the group (Kueue's reconciler lists them by group name): one adopted in
        # this write is ungated by the next, so that the group name is set while it is gated.
        update = in_group and not ended and _ungate_during_update(owner, pod)
        if update:
            spec = out.setdefault("spec", {})
            gates = [g for g in spec.get("schedulingGates") or ()
                     if g.get("name") not in (keys.ADMISSION_GATE, keys.TOPOLOGY_GATE)]
            if gates:
                spec["schedulingGates"] = gates
            else:
                spec.pop("schedulingGates", None)
        if update or ended:
            finalizers = out_meta.get("finalizers") or []
            if keys.MANAGED_POD_FINALIZER in finalizers:
                out_meta["finalizers"] = [f for f in finalizers if f != keys.MANAGED_POD_FINALIZER]
        for part in ("labels", "annotations"):
            if not out_meta[part] and part not in meta(pod):
                del out_meta[part]  # do not invent an empty section: it would differ forever
        return out if out != pod else None


LIFECYCLE = StatefulSetLifecycle()
