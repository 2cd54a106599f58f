"""What a job integration must answer for the reconciler to run it: Kueue's GenericJob.

The reconciler in ``manager.runtime.controllers.jobs`` is generic over these Protocols and
never asks which kind it holds. A job kind is one package with a ``lifecycle`` module that
implements them; this module also holds what every kind shares: the admission turned into
per-podset start information (:class:`PodSetInfo`), merging it into a pod template with
Kueue's conflict rule, and the registry of enabled integrations.

Why two levels. :class:`WorkloadOwner` is anything that owns Workloads (a LeaderWorkerSet
owns one per group). :class:`JobLifecycle` adds running one Workload: suspend state,
start, stop, restore, finished, pods ready. A LeaderWorkerSet is only an owner: its groups
run through their pods (the ``pod`` lifecycle), exactly as Kueue splits the LWS reconciler
from the pod-group reconciler. Everything else a kind may or may not do is a separate small
capability Protocol (:class:`GroupedObjects`, :class:`AdoptsPods`, and
``manager.jobs.related.ReadsRelated`` for a kind whose rules read other objects than the
job), checked with ``isinstance`` so the reconciler asks "can you" rather than "what are you".

Pure: lifecycles return the objects to write as :class:`Replace`/:class:`Delete` values,
and the runtime performs them with optimistic concurrency.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pykueue.api import keys
from pykueue.api.wire import JSON, meta
from pykueue.manager.core.jobs_to_workloads import queue_name
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.multikueue.adapter import MultiKueueAdapter
from pykueue.manager.jobs.names import is_dns1123_label
from pykueue.manager.jobs.ownership import namespace_selected
from pykueue.manager.jobs.registry import build_workloads, owner_integration
from pykueue.manager.jobs.related import NO_RELATED, Related

# -- what a lifecycle asks the runtime to do -------------------------------------------------


@dataclass(frozen=True)
class Replace:
    """Write this whole object back (PUT carrying its resourceVersion: a conflict retries)."""

    obj: JSON


@dataclass(frozen=True)
class Delete:
    """Delete this object (preconditioned on its UID, so a recreated namesake survives)."""

    obj: JSON


Action = Replace | Delete


@dataclass(frozen=True)
class Finished:
    """A job's own verdict, copied into the Workload's Finished condition."""

    reason: str  # keys.Reason.SUCCEEDED / FAILED
    message: str


class StartConflict(Exception):
    """The admission cannot be applied (a conflicting label or selector value, a podset
    count mismatch). Permanent: Kueue finishes the Workload with reason FailedToStart."""


# -- the protocols -----------------------------------------------------------------------------


@runtime_checkable
class WorkloadOwner(Protocol):
    """An object kind that Workloads are created for."""

    @property
    def integration(self) -> Integration:
        """Kueue's integration name and the GVK/plural this lifecycle handles."""
        ...

    def is_managed(self, job: Mapping[str, Any], policy: AdmissionPolicy,
                   namespace_labels: Mapping[str, str]) -> bool:
        """Should Workloads exist for it (queue name, manageJobsWithoutQueueName, namespace)?"""
        ...

    def queue_name(self, job: Mapping[str, Any]) -> str: ...

    def workloads(self, job: Mapping[str, Any]) -> list[JSON]:
        """The Workloads this object should own (names are deterministic); may be empty."""
        ...


@runtime_checkable
class JobLifecycle(WorkloadOwner, Protocol):
    """An object run by exactly one Workload: suspended until admitted, stopped on eviction."""

    def workload_name(self, job: Mapping[str, Any]) -> str:
        """The Workload (same namespace) whose admission decides whether this job runs."""
        ...

    def is_suspended(self, job: Mapping[str, Any]) -> bool:
        """Something of it waits for admission (a suspended job, a gated pod)."""
        ...

    def is_active(self, job: Mapping[str, Any]) -> bool:
        """Something of it may be running, so it must be stopped when not admitted."""
        ...

    def still_running(self, job: Mapping[str, Any]) -> bool:
        """Pods of it still run (Kueue's IsActive): an evicted workload keeps its quota
        until none do."""
        ...

    def start(self, job: Mapping[str, Any], workload: Mapping[str, Any],
              infos: list[PodSetInfo]) -> list[Action]:
        """Run it with the admission's podset infos; raises :class:`StartConflict`."""
        ...

    def stop(self, job: Mapping[str, Any]) -> list[Action]: ...

    def restore(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Action]:
        """Undo what start changed, from the Workload's copy of the templates; [] when clean."""
        ...

    def finished(self, job: Mapping[str, Any]) -> Finished | None: ...

    def pods_ready(self, job: Mapping[str, Any]) -> bool: ...


@runtime_checkable
class GroupedObjects(Protocol):
    """A lifecycle whose unit is a group of API objects (pods of one group), not one object.

    The runtime watches the integration's objects with one informer per selector of
    ``label_selectors`` (disjoint: an object matches at most one), keys each by
    ``group_name`` and hands the lifecycle the group built by ``assemble``.
    """

    @property
    def label_selectors(self) -> tuple[str, ...]: ...

    def group_name(self, obj: Mapping[str, Any]) -> str | None: ...

    def assemble(self, namespace: str, name: str, members: list[JSON]) -> JSON: ...

    def representative(self, group: Mapping[str, Any]) -> JSON | None:
        """The member object that stands for the group where Kueue names one object (the
        events about the group's Workload: Kueue's first pod of the group); None if empty."""
        ...


@runtime_checkable
class AdoptsPods(Protocol):
    """An owner that stamps its pods with their group identity (Kueue's LWS ``setDefault``)."""

    def pod_owner(self, pod: Mapping[str, Any]) -> str | None:
        """Name of the owner object (same namespace) that may adopt this pod."""
        ...

    def adopt(
        self, owner: Mapping[str, Any], pod: Mapping[str, Any], *, identifier_annotations: bool = True
    ) -> JSON | None:
        """The pod with its group labels/annotations, or None when there is nothing to do
        (``identifier_annotations``: the WorkloadIdentifierAnnotations gate, on by default,
        decides whether the group and prebuilt names are annotations or labels)."""
        ...


@runtime_checkable
class HoldsWorkloads(Protocol):
    """An owner that may put its Workloads on hold (Kueue's OnHold: a StatefulSet scaled to
    zero): kept, their quota released and not queued until it asks for pods again; while on
    hold a missing one is not created."""

    def on_hold(self, job: Mapping[str, Any]) -> str | None:
        """Why its Workloads are on hold (the QuotaReserved condition's message); None when
        they are not."""
        ...


@runtime_checkable
class ScalesBySlices(Protocol):
    """A kind that may run elastic (``manager.jobs.workload_slices``): resized while it runs,
    its pods gated until a slice admits them."""

    def elastic(self, job: Mapping[str, Any]) -> bool: ...

    def pods_selector(self, job: Mapping[str, Any]) -> str:
        """A label selector of the job's pods (same namespace)."""
        ...

    def ungate(self, workload: Mapping[str, Any], pods: list[JSON]) -> list[Action]:
        """The pods the admitted slice lets start, written without their gate."""
        ...

    def pods_reported(self, job: Mapping[str, Any]) -> int:
        """How many live pods the job's own status (or spec) says it has: more than a pod list
        shows means the list lags, and the ungater looks again."""
        ...


@runtime_checkable
class RemovesFinalizers(Protocol):
    """A kind whose objects carry Kueue's finalizer until their end is recorded (plain pods)."""

    def finalize(self, job: Mapping[str, Any], workload_finished: bool) -> list[Action]:
        """The objects to write back without the finalizer; [] when none may lose it yet."""
        ...


@runtime_checkable
class DispatchedByMultiKueue(Protocol):
    """A kind MultiKueue can run in a worker cluster (Kueue's MultiKueueAdapter)."""

    @property
    def multikueue(self) -> MultiKueueAdapter: ...


def managed_by_multikueue(lc: object, job: Mapping[str, Any]) -> bool:
    """The object is MultiKueue's (``managedBy``): in this cluster it is never started; its
    status comes from the worker that runs it."""
    return isinstance(lc, DispatchedByMultiKueue) and \
        lc.multikueue.managed_by(job) == keys.MULTIKUEUE_CONTROLLER


# -- shared helpers ---------------------------------------------------------------------------


def pod_terminated(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_live(pod: Mapping[str, Any]) -> bool:
    """Not terminated and not being deleted: a pod that runs, or may."""
    return not pod_terminated(pod) and not meta(pod).get("deletionTimestamp")


def condition_true(obj: Mapping[str, Any], kind: str) -> bool:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond.get("status") == "True"
    return False


def condition_message(obj: Mapping[str, Any], kind: str) -> str:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return str(cond.get("message") or "")
    return ""


def is_admitted(workload: Mapping[str, Any]) -> bool:
    """Admitted = QuotaReserved and every admission check Ready (Kueue's Admitted condition)."""
    return condition_true(workload, keys.WorkloadCondition.ADMITTED) and bool(
        (workload.get("status") or {}).get("admission"))


def has_controller_owner_of(obj: Mapping[str, Any], policy: AdmissionPolicy) -> bool:
    """Is its controller owner a kind Kueue manages? Then the owner's Workload governs it."""
    for ref in meta(obj).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
            known, enabled = owner_integration(policy, api_version, kind)
            return known and enabled
    return False


def managed_top_level(job: Mapping[str, Any], policy: AdmissionPolicy,
                      namespace_labels: Mapping[str, str]) -> bool:
    """Kueue HEAD's rule for a job without a managed ancestor: its namespace must match
    managedJobsNamespaceSelector even with a queue name (AlwaysRespected); without a queue
    name it is managed only under manageJobsWithoutQueueName."""
    if not namespace_selected(policy, namespace_labels):
        return False
    return bool(queue_name(job)) or policy.manage_jobs_without_queue_name


def restored_template(current: Mapping[str, Any], original: Mapping[str, Any]) -> JSON | None:
    """``current`` with the scheduling directives of ``original`` back (node selector,
    tolerations, labels, annotations: what start changes and what a suspended job may
    change), or None when nothing differs."""
    out = copy.deepcopy(dict(current))
    o_spec, o_meta = original.get("spec") or {}, original.get("metadata") or {}
    t_spec, t_meta = out.setdefault("spec", {}), out.setdefault("metadata", {})
    for name, src, dst in (("nodeSelector", o_spec, t_spec), ("tolerations", o_spec, t_spec),
                           ("labels", o_meta, t_meta), ("annotations", o_meta, t_meta)):
        if src.get(name):
            dst[name] = copy.deepcopy(src[name])
        else:
            dst.pop(name, None)
    for part in ("spec", "metadata"):
        if not out[part] and part not in current:
            del out[part]  # do not invent an empty section: it would differ forever
    return None if out == current else out


def restore_replica_templates(job: Mapping[str, Any], workload: Mapping[str, Any], replicas_key: str,
                              roles: list[str], podset_of: Callable[[str], str]) -> list[Action]:
    """A Kubeflow job's replica templates (``spec.<replicas_key>[role].template``) put back as
    the Workload recorded them; nothing when its pod sets no longer match the roles (Kueue
    skips the restore then) or nothing changes."""
    podsets = [ps.get("name") for ps in (workload.get("spec") or {}).get("podSets") or ()]
    if podsets != [podset_of(r) for r in roles]:
        return []
    out = copy.deepcopy(dict(job))
    changed = False
    for role in roles:
        original = workload_template(workload, podset_of(role))
        replica = out["spec"][replicas_key][role]
        template = None if original is None else restored_template(replica.get("template") or {}, original)
        if template is not None:
            replica["template"] = template
            changed = True
    return [Replace(out)] if changed else []


def workload_template(workload: Mapping[str, Any], podset: str) -> JSON | None:
    for ps in (workload.get("spec") or {}).get("podSets") or ():
        if ps.get("name") == podset:
            return copy.deepcopy(dict(ps.get("template") or {}))
    return None


class TopLevelOwner:
    """The :class:`WorkloadOwner` answers every top-level kind gives the same way.

    A kind that Kueue manages on its own (not only under a managed owner) is managed by
    :func:`managed_top_level` unless a managed kind controls it, reads the shared queue-name
    label and builds its Workloads with ``build_workloads``; subclasses set ``integration``
    and add the rest. Kept here so that rule is written once for all such kinds.
    """

    integration: Integration
    # The objects besides the job its rules read (``manager.jobs.related``): none, unless a
    # lifecycle that reads some was bound to them.
    related: Related = NO_RELATED

    def is_managed(self, job: Mapping[str, Any], policy: AdmissionPolicy,
                   namespace_labels: Mapping[str, str]) -> bool:
        # An object owned by a managed kind (a Job of a JobSet, ...) runs under its owner's Workload.
        return not has_controller_owner_of(job, policy) and managed_top_level(job, policy, namespace_labels)

    def queue_name(self, job: Mapping[str, Any]) -> str:
        return queue_name(job)

    def workloads(self, job: Mapping[str, Any]) -> list[JSON]:
        return build_workloads(dict(job), self.related)  # by the object's registered kind


class SuspendedBySpec:
    """The switch of a kind whose ``spec.suspend`` holds it (a Job, JobSet, TrainJob, AppWrapper,
    RayCluster, RayJob): suspended while it is true, stopped by setting it."""

    def is_suspended(self, job: Mapping[str, Any]) -> bool:
        spec = job.get("spec")
        return isinstance(spec, Mapping) and spec.get("suspend") is True

    def is_active(self, job: Mapping[str, Any]) -> bool:
        return not self.is_suspended(job)

    def stop(self, job: Mapping[str, Any]) -> list[Action]:
        out = copy.deepcopy(dict(job))
        out.setdefault("spec", {})["suspend"] = True
        return [Replace(out)]


# -- admission -> podset infos ---------------------------------------------------------------


@dataclass(frozen=True)
class PodSetInfo:
    """What starting one podset adds to its pods (Kueue's podset.PodSetInfo)."""

    name: str
    count: int
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[JSON, ...] = ()


def podset_infos(workload: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]]) -> list[PodSetInfo]:
    """One info per podset assignment, in assignment order.

    Node selector = union of the assigned flavors' nodeLabels, tolerations = their
    tolerations; labels name the podset and (AssignQueueLabelsForPods, on at HEAD) the
    admitting LocalQueue and ClusterQueue, and mark a podset with a topology assignment
    (``kueue.x-k8s.io/tas``); the ``kueue.x-k8s.io/workload`` annotation names the Workload
    (Kueue v0.12 with TopologyAwareScheduling on); admission checks' podSetUpdates are merged on top.
    """
    status = workload.get("status") or {}
    admission = status.get("admission") or {}
    cq = str(admission.get("clusterQueue") or "")
    lq = str((workload.get("spec") or {}).get("queueName") or "")
    wl_name = str((workload.get("metadata") or {}).get("name") or "")
    wl_annotations = (workload.get("metadata") or {}).get("annotations") or {}
    slice_name = str(wl_annotations.get(keys.WORKLOAD_SLICE_NAME) or "")
    updates: dict[str, list[Mapping[str, Any]]] = {}
    for check in status.get("admissionChecks") or ():
        for upd in check.get("podSetUpdates") or ():
            updates.setdefault(str(upd.get("name")), []).append(upd)
    podset_counts = {str(ps.get("name")): int(ps.get("count", 1))
                     for ps in (workload.get("spec") or {}).get("podSets") or ()}
    infos = []
    for psa in admission.get("podSetAssignments") or ():
        name = str(psa.get("name") or "main")
        node_selector: dict[str, str] = {}
        tolerations: list[JSON] = []
        for flavor in dict.fromkeys(str(f) for f in (psa.get("flavors") or {}).values()):
            spec = (flavors.get(flavor) or {}).get("spec") or {}
            node_selector.update({str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()})
            tolerations.extend(dict(t) for t in spec.get("tolerations") or () if t not in tolerations)
        labels = {keys.PODSET: name}
        if psa.get("topologyAssignment"):
            # Marks the pods the TAS scheduler places (their schedulerName is set at creation).
            labels[keys.TAS_LABEL] = "true"
        if lq:
            labels[keys.LOCAL_QUEUE_NAME] = lq
        if cq and is_dns1123_label(cq):
            labels[keys.CLUSTER_QUEUE_NAME] = cq
        # Which Workload the pods run under: the extender reads its assignment from there.
        annotations: dict[str, str] = {keys.WORKLOAD_ANNOTATION: wl_name} if wl_name else {}
        if slice_name:  # an elastic job's slice chain, which every slice of it shares
            annotations[keys.WORKLOAD_SLICE_NAME] = slice_name
        for upd in updates.get(name, ()):
            for target, source in ((labels, "labels"), (annotations, "annotations"),
                                   (node_selector, "nodeSelector")):
                _merge_map(target, upd.get(source) or {}, f"podSetUpdates.{source}")
            tolerations.extend(dict(t) for t in upd.get("tolerations") or () if t not in tolerations)
        count = psa.get("count")
        infos.append(PodSetInfo(name, int(count if count is not None else podset_counts.get(name, 1)),
                                labels, annotations, node_selector, tuple(tolerations)))
    return infos


def _merge_map(target: dict[str, str], extra: Mapping[str, Any], what: str) -> None:
    for key, value in extra.items():
        if key in target and target[key] != str(value):
            raise StartConflict(f"conflict for {what} key {key!r}: {target[key]!r} vs {value!r}")
        target[key] = str(value)


def merge_into_template(template: Mapping[str, Any], info: PodSetInfo) -> JSON:
    """The template with ``info`` merged in. A different value for an existing label,
    annotation or node-selector key is a :class:`StartConflict` (Kueue's rule); tolerations
    are appended without duplicates."""
    out = copy.deepcopy(dict(template))
    tmeta = out.setdefault("metadata", {})
    spec = out.setdefault("spec", {})
    merge_into_pod_parts(tmeta, spec, info)
    return out


def merge_into_pod_parts(obj_meta: JSON, spec: JSON, info: PodSetInfo) -> None:
    """Merge ``info`` into a pod's (or template's) metadata and spec, in place."""
    for target_obj, field_name, extra in ((obj_meta, "labels", info.labels),
                                          (obj_meta, "annotations", info.annotations),
                                          (spec, "nodeSelector", info.node_selector)):
        if not extra:
            continue
        merged = {str(k): str(v) for k, v in (target_obj.get(field_name) or {}).items()}
        _merge_map(merged, extra, field_name)
        target_obj[field_name] = merged
    if info.tolerations:
        existing = list(spec.get("tolerations") or [])
        spec["tolerations"] = existing + [t for t in info.tolerations if t not in existing]


def infos_by_name(infos: Iterable[PodSetInfo], podsets: list[str]) -> Iterator[tuple[str, PodSetInfo]]:
    """Pair each podset with its info; a missing or extra podset is a StartConflict."""
    table = {i.name: i for i in infos}
    if set(table) != set(podsets):
        raise StartConflict(f"admission has podsets {sorted(table)}, the job has {sorted(podsets)}")
    for name in podsets:
        yield name, table[name]
