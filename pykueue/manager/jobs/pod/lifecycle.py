"""Pods run by Kueue's pod integration: plain pods, plain pod groups, the groups of LWSs
and StatefulSets, and the pods of Deployments.

The unit is a group, not a pod: the runtime collects the pods carrying the same
``kueue.x-k8s.io/pod-group-name`` and hands them over as one value (:func:`assemble`); a
plain pod without a group name is a group of one, keyed by its Workload's name (Kueue's
``pod-<name>-<hash>``), so a Workload's name leads back to its pods for every shape.
Pods are created gated (scheduling gate ``kueue.x-k8s.io/admission``); start merges each
pod's podset info (picked by its ``role-hash``; ``main`` for a single pod) into the pod
itself and removes the gate; stop deletes the pods that run (their StatefulSet or
ReplicaSet recreates them, gated again), which is also why there is nothing to restore.

Three shapes, as in Kueue:

* a group adopted by its owner (an LWS group, a StatefulSet: pods stamped
  ``pod-suspending-parent`` by the owner's webhook, then given their group by the owner's
  lifecycle): runs under the owner's prebuilt Workload, never one made here, and never
  finishes (serving);
* a plain pod group (``pod-group-name`` + ``pod-group-total-count``): one Workload named
  after the group, a pod set per role hash, made once all its pods exist; it finishes
  when as many pods succeeded as the total count (or all ended in an unretriable group);
* a single plain pod (a Deployment's pods too, held by their parent): one Workload of one
  pod set ``main``; it finishes with the pod.

Plain pods carry the ``kueue.x-k8s.io/managed`` finalizer (set by the webhook) so their
end is seen; :meth:`PodGroupLifecycle.finalize` says whose finalizer may go.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON, meta
from pykueue.manager.core.jobs_to_workloads import owned_workload, workload_name
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.lifecycle import (
    Action,
    Delete,
    Finished,
    PodSetInfo,
    Replace,
    StartConflict,
    condition_true,
    merge_into_pod_parts,
    pod_live,
    pod_terminated,
)

GROUP_KIND = "PodGroup"


def _value(obj: Mapping[str, Any], key: str) -> str:
    m = meta(obj)
    return str((m.get("annotations") or {}).get(key) or (m.get("labels") or {}).get(key) or "")


def pods(group: Mapping[str, Any]) -> list[JSON]:
    return list(group.get("pods") or [])


def gated(pod: Mapping[str, Any]) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or ()
    return any(g.get("name") == keys.ADMISSION_GATE for g in gates)


def _live(group: Mapping[str, Any]) -> list[JSON]:
    return [p for p in pods(group) if pod_live(p)]


def _plain_group(pod: Mapping[str, Any]) -> str:
    """A plain pod's group name (label, or the annotation Kueue also reads); "" for none."""
    return _value(pod, keys.POD_GROUP_NAME)


def single_pod_workload_name(pod: Mapping[str, Any]) -> str:
    m = meta(pod)
    return workload_name("Pod", "", str(m.get("name") or ""), str(m.get("uid") or ""))


# The parents (``pod-suspending-parent`` values) whose lifecycles adopt their pods into
# groups; a Deployment's pods, held by theirs too, run as single pods.
LWS_PARENT = "leaderworkerset.x-k8s.io/leaderworkerset"
STATEFULSET_PARENT = "statefulset"
ADOPTING_PARENTS = frozenset({LWS_PARENT, STATEFULSET_PARENT})


def parent_held(pod: Mapping[str, Any]) -> bool:
    """Stamped by a managed owner's webhook: the pod waits for admission through it."""
    return keys.POD_SUSPENDING_PARENT in (meta(pod).get("annotations") or {})


def _adopted_by_owner(pod: Mapping[str, Any]) -> bool:
    """Held by an owner that gives the pod its group (an LWS, a StatefulSet)."""
    return (meta(pod).get("annotations") or {}).get(keys.POD_SUSPENDING_PARENT) in ADOPTING_PARENTS


def _runnable(pod: Mapping[str, Any]) -> bool:
    """Kueue's isPodRunnableOrSucceeded: not failed, and not deleted before it was placed."""
    if meta(pod).get("deletionTimestamp") and not (pod.get("spec") or {}).get("nodeName"):
        return False
    return (pod.get("status") or {}).get("phase") != "Failed"


def _total_count(pod: Mapping[str, Any]) -> int | None:
    try:
        total = int(_value(pod, keys.POD_GROUP_TOTAL_COUNT))
    except ValueError:
        return None
    return total if total >= 1 else None


def podset_of(pod: Mapping[str, Any], name: str, count: int) -> JSON:
    """A pod set of the pod's spec (Kueue keeps only the spec; the TAS annotations ride
    along in the template's metadata, where the topology request is read from)."""
    template: JSON = {"spec": copy.deepcopy(pod.get("spec") or {})}
    template["spec"].pop("schedulingGates", None)
    template["spec"].pop("nodeName", None)
    wanted = (*keys.TOPOLOGY_ANNOTATIONS, keys.PODSET_SLICE_SIZE, keys.PODSET_GROUP_NAME)
    tas = {k: v for k, v in (meta(pod).get("annotations") or {}).items() if k in wanted}
    if tas:
        template["metadata"] = {"annotations": tas}
    return {"name": name, "count": count, "template": template}


class PodGroupLifecycle:
    integration: Integration = Integration("pod", "", "v1", "Pod", "pods", prebuilt=True)
    # LWS pods (adopted or not yet), StatefulSets' pods (adopted or not yet: which of them
    # are Kueue's only their annotation says) and plain managed pods (a Deployment's among
    # them); disjoint. Selecting them keeps every other pod of the cluster (a Job's, a
    # Deployment's not managed) out of memory.
    label_selectors: tuple[str, ...] = (
        keys.LWS_NAME,
        f"{keys.MANAGED}=true,!{keys.LWS_NAME},!{keys.STATEFULSET_POD_NAME}",
        f"{keys.STATEFULSET_POD_NAME},!{keys.LWS_NAME}",
    )

    # -- GroupedObjects ----------------------------------------------------------------------

    def group_name(self, obj: Mapping[str, Any]) -> str | None:
        if (meta(obj).get("labels") or {}).get(keys.MANAGED) != "true":
            return None
        if group := _value(obj, keys.POD_GROUP_NAME):
            return group
        if _adopted_by_owner(obj):
            return None  # not adopted yet: its group comes from its owner
        return single_pod_workload_name(obj)

    def assemble(self, namespace: str, name: str, members: list[JSON]) -> JSON:
        return {"apiVersion": "v1", "kind": GROUP_KIND, "metadata": {"name": name, "namespace": namespace},
                "pods": sorted(members, key=lambda p: str(meta(p).get("name")))}

    def representative(self, group: Mapping[str, Any]) -> JSON | None:
        members = pods(group)
        return dict(members[0]) if members else None

    # -- WorkloadOwner -------------------------------------------------------------------------

    def is_managed(self, job: Mapping[str, Any], policy: AdmissionPolicy,
                   namespace_labels: Mapping[str, str]) -> bool:
        # The webhook (plain pods), the owner's webhook (a Deployment's pods) or the owner
        # (LWS groups, StatefulSets) decided when it marked the pods managed (namespace,
        # queue name, mJWQN). Pods without a parent only while the pod integration itself
        # is enabled, not merely implied by an owner kind (Kueue's Skip).
        members = pods(job)
        if not any(self.group_name(p) for p in members):
            return False
        return any(parent_held(p) for p in members) or policy.explicitly_enabled(self.integration.name)

    @staticmethod
    def _adopted(job: Mapping[str, Any]) -> bool:
        return any(_adopted_by_owner(p) for p in pods(job))

    @staticmethod
    def _single(job: Mapping[str, Any]) -> JSON | None:
        """The pod of a single-pod group (a plain pod without a group name)."""
        members = pods(job)
        if len(members) == 1 and not _plain_group(members[0]) and not _adopted_by_owner(members[0]):
            return members[0]
        return None

    def queue_name(self, job: Mapping[str, Any]) -> str:
        for pod in pods(job):
            if queue := str((meta(pod).get("labels") or {}).get(keys.QUEUE_NAME) or ""):
                return queue
        return ""

    def workloads(self, job: Mapping[str, Any]) -> list[JSON]:
        if self._adopted(job) or any(_value(p, keys.PREBUILT_WORKLOAD_NAME) for p in pods(job)):
            return []  # prebuilt by the owner (one per LWS group, per StatefulSet) or by MultiKueue
        single = self._single(job)
        if single is not None:
            return [owned_workload(dict(single), self.workload_name(job), [podset_of(single, "main", 1)],
                                   controller=True)]
        return self._group_workloads(job)

    def _group_workloads(self, job: Mapping[str, Any]) -> list[JSON]:
        """Kueue's ConstructComposableWorkload: once as many runnable pods as the total
        count exist, one pod set per role hash (sorted by name), counted; owned by every
        pod, none of them its controller."""
        runnable = [p for p in pods(job) if _runnable(p)]
        total = _total_count(pods(job)[0])
        if total is None or len(runnable) < total:
            return []  # the rest of the group has not been created yet
        runnable = sorted(runnable, key=lambda p: (gated(p), str(meta(p).get("creationTimestamp") or ""),
                                                   str(meta(p).get("name"))))[:total]
        counts: dict[str, int] = {}
        first: dict[str, JSON] = {}
        for pod in runnable:
            role = _value(pod, keys.ROLE_HASH)
            counts[role] = counts.get(role, 0) + 1
            first.setdefault(role, pod)
        podsets = [podset_of(first[role], role, counts[role]) for role in sorted(counts)]
        wl = owned_workload(dict(runnable[0]), str(meta(job).get("name")), podsets, controller=False,
                            extra_annotations={keys.IS_GROUP_WORKLOAD: "true"})
        wl["metadata"]["labels"].pop(keys.JOB_UID, None)  # a group has no single owner
        wl["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": meta(p).get("name"), "uid": meta(p).get("uid", "")}
            for p in sorted(runnable, key=lambda p: str(meta(p).get("name")))]
        return [wl]

    # -- JobLifecycle ----------------------------------------------------------------------------

    def workload_name(self, job: Mapping[str, Any]) -> str:
        for pod in pods(job):
            if name := _value(pod, keys.PREBUILT_WORKLOAD_NAME):
                return name
        single = self._single(job)
        return single_pod_workload_name(single) if single is not None else str(meta(job).get("name"))

    def is_suspended(self, job: Mapping[str, Any]) -> bool:
        return any(gated(p) for p in _live(job))

    def is_active(self, job: Mapping[str, Any]) -> bool:
        return any(not gated(p) for p in _live(job))

    def still_running(self, job: Mapping[str, Any]) -> bool:
        # Deleted pods count until they are gone: their containers may still run.
        return any((p.get("status") or {}).get("phase") == "Running" for p in pods(job))

    def start(self, job: Mapping[str, Any], workload: Mapping[str, Any],
              infos: list[PodSetInfo]) -> list[Action]:
        by_name = {i.name: i for i in infos}
        single = self._single(job) is not None
        out: list[Action] = []
        for pod in _live(job):
            if not gated(pod):
                continue
            role = "main" if single else _value(pod, keys.ROLE_HASH)
            info = by_name.get(role)
            if info is None:
                raise StartConflict(f"pod {meta(pod).get('name')}: role {role!r} is not a podset "
                                    f"of the admission ({sorted(by_name)})")
            started = copy.deepcopy(dict(pod))
            spec = started.setdefault("spec", {})
            merge_into_pod_parts(started.setdefault("metadata", {}), spec, info)
            # Both gates go: Kueue keeps the topology gate for its TAS ungater, which pins
            # each pod with a node selector; here the TAS scheduler and its extender place
            # the pods of the assignment instead (their schedulerName was set at creation).
            drop = {keys.ADMISSION_GATE, keys.TOPOLOGY_GATE}
            gates = [g for g in spec.get("schedulingGates") or () if g.get("name") not in drop]
            if gates:
                spec["schedulingGates"] = gates
            else:
                spec.pop("schedulingGates", None)
            out.append(Replace(started))
        return out

    def stop(self, job: Mapping[str, Any]) -> list[Action]:
        return [Delete(p) for p in _live(job) if not gated(p)]

    def restore(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Action]:
        return []  # stopped pods are deleted; their replacements arrive gated and unchanged

    def finished(self, job: Mapping[str, Any]) -> Finished | None:
        """Kueue's Pod.Finished: a single pod with its phase (and message); a group once as
        many pods succeeded as its total count, or when none is left running in a group
        some pod of which may not be retried (``retriable-in-group: "false"``)."""
        members = pods(job)
        if not members or any(_value(p, keys.POD_GROUP_SERVING) == "true" for p in members):
            return None
        single = self._single(job)
        if single is not None:
            if not pod_terminated(single):
                return None
            status = single.get("status") or {}
            reason = keys.Reason.SUCCEEDED if status.get("phase") == "Succeeded" else keys.Reason.FAILED
            return Finished(reason, str(status.get("message") or ""))
        total = _total_count(members[0]) or len(members)
        succeeded = sum(1 for p in members if (p.get("status") or {}).get("phase") == "Succeeded")
        unretriable = any(_value(p, keys.RETRIABLE_IN_GROUP) == "false" for p in members)
        if succeeded == total or (unretriable and all(pod_terminated(p) for p in members)):
            return Finished(keys.Reason.SUCCEEDED, f"Pods succeeded: {succeeded}/{total}.")
        return None

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        members = _live(job)
        if not members:
            return False
        total = _total_count(members[0]) or len(members)
        return sum(1 for p in members if condition_true(p, "Ready")) >= total

    # -- RemovesFinalizers -------------------------------------------------------------------------

    def finalize(self, job: Mapping[str, Any], workload_finished: bool) -> list[Action]:
        """The pods whose ``kueue.x-k8s.io/managed`` finalizer may go, written without it:
        every pod once the Workload finished; a pod being deleted (Kueue finalizes a
        deleted single pod at once; a deleted group member no longer counts, and no
        kubelet here reports its end); a failed member of a group (it is replaced, or
        the group finishes without it)."""
        single = self._single(job) is not None
        out: list[Action] = []
        for pod in pods(job):
            finalizers = meta(pod).get("finalizers") or []
            if keys.MANAGED_POD_FINALIZER not in finalizers:
                continue
            deleting = bool(meta(pod).get("deletionTimestamp"))
            failed_member = not single and (pod.get("status") or {}).get("phase") == "Failed"
            if workload_finished or deleting or failed_member:
                released = copy.deepcopy(dict(pod))
                released["metadata"]["finalizers"] = [
                    f for f in finalizers if f != keys.MANAGED_POD_FINALIZER]
                out.append(Replace(released))
        return out


LIFECYCLE = PodGroupLifecycle()
