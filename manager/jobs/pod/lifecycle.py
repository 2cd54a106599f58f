"""A pod group (the pods of one LeaderWorkerSet group) run by the group's Workload.

The unit is the group, not a pod: the runtime collects the pods carrying the same
``kueue.x-k8s.io/pod-group-name`` and hands them over as one value (:func:`assemble`).
Pods are created gated (scheduling gate ``kueue.x-k8s.io/admission``); start merges each
pod's podset info (picked by its ``role-hash``: leader, worker or main) into the pod itself
and removes the gate; stop deletes the pods that run (their StatefulSet recreates them,
gated again), which is also why there is nothing to restore. Serving groups (every LWS
group) never finish; a batch group finishes when all its pods ended.

Only adopted pods (``kueue.x-k8s.io/managed: "true"``, set by the LWS lifecycle) form
groups: their Workload is the owner's prebuilt group Workload, never one made here, so a
gated pod can never start on a Workload of its own.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from api import keys
from api.wire import JSON, meta
from manager.jobs.admission import AdmissionPolicy
from manager.jobs.integrations import Integration
from manager.jobs.lifecycle import (
    Action,
    Delete,
    Finished,
    PodSetInfo,
    Replace,
    StartConflict,
    condition_true,
    merge_into_pod_parts,
)

GROUP_KIND = "PodGroup"
TERMINAL = ("Succeeded", "Failed")


def _value(obj: Mapping[str, Any], key: str) -> str:
    m = meta(obj)
    return str((m.get("annotations") or {}).get(key) or (m.get("labels") or {}).get(key) or "")


def pods(group: Mapping[str, Any]) -> list[JSON]:
    return list(group.get("pods") or [])


def terminated(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL


def gated(pod: Mapping[str, Any]) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or ()
    return any(g.get("name") == keys.ADMISSION_GATE for g in gates)


def _live(group: Mapping[str, Any]) -> list[JSON]:
    return [p for p in pods(group) if not terminated(p) and not meta(p).get("deletionTimestamp")]


class PodGroupLifecycle:
    integration: Integration = Integration("pod", "", "v1", "Pod", "pods")
    # Only LWS pods form groups here; selecting them keeps other pods out of memory.
    label_selector: str = keys.LWS_NAME

    # -- GroupedObjects ----------------------------------------------------------------------

    def group_name(self, obj: Mapping[str, Any]) -> str | None:
        if (meta(obj).get("labels") or {}).get(keys.MANAGED) != "true":
            return None
        return _value(obj, keys.POD_GROUP_NAME) or None

    def assemble(self, namespace: str, name: str, members: list[JSON]) -> JSON:
        return {"apiVersion": "v1", "kind": GROUP_KIND, "metadata": {"name": name, "namespace": namespace},
                "pods": sorted(members, key=lambda p: str(meta(p).get("name")))}

    # -- WorkloadOwner -------------------------------------------------------------------------

    def is_managed(self, job: Mapping[str, Any], policy: AdmissionPolicy,
                   namespace_labels: Mapping[str, str]) -> bool:
        # The owner decided when it adopted the pods (namespace, queue name, mJWQN).
        return any(self.group_name(p) for p in pods(job))

    def queue_name(self, job: Mapping[str, Any]) -> str:
        for pod in pods(job):
            if queue := str((meta(pod).get("labels") or {}).get(keys.QUEUE_NAME) or ""):
                return queue
        return ""

    def workloads(self, job: Mapping[str, Any]) -> list[JSON]:
        return []  # prebuilt by the owner (one per LWS group)

    # -- JobLifecycle ----------------------------------------------------------------------------

    def workload_name(self, job: Mapping[str, Any]) -> str:
        for pod in pods(job):
            if name := _value(pod, keys.PREBUILT_WORKLOAD_NAME):
                return name
        return str(meta(job).get("name"))

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
        out: list[Action] = []
        for pod in _live(job):
            if not gated(pod):
                continue
            role = _value(pod, keys.ROLE_HASH)
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
        members = pods(job)
        if not members or any(_value(p, keys.POD_GROUP_SERVING) == "true" for p in members):
            return None
        total = max(int(_value(members[0], keys.POD_GROUP_TOTAL_COUNT) or len(members)), 1)
        if len(members) < total or not all(terminated(p) for p in members):
            return None
        if all((p.get("status") or {}).get("phase") == "Succeeded" for p in members):
            return Finished(keys.Reason.SUCCEEDED, "Pods succeeded")
        return Finished(keys.Reason.FAILED, "Pods failed")

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        members = _live(job)
        if not members:
            return False
        total = int(_value(members[0], keys.POD_GROUP_TOTAL_COUNT) or len(members))
        return sum(1 for p in members if condition_true(p, "Ready")) >= total


LIFECYCLE = PodGroupLifecycle()
