"""Whether an object is Kueue's to manage: the namespace selector, manageJobsWithoutQueueName,
and the ancestor walk (Kueue's FindAncestorJobManagedByKueue).

The owner chain is the one fact whose extent is only known while walking it, so the walk
raises :class:`OwnerLookupNeeded` naming the next object to fetch, and the caller fetches
it and walks again -- one walk implementation, no I/O in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import meta
from pykueue.manager.core.jobs_to_workloads import queue_name
from pykueue.manager.core.matching import label_selector_matches
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionDenied, AdmissionPolicy
from pykueue.manager.jobs.integrations import MAX_OWNER_HOPS, OwnerKey, OwnerLookupNeeded
from pykueue.manager.jobs.job_fields import controller_owner, deleting
from pykueue.manager.jobs.registry import owner_integration


def namespace_selected(policy: AdmissionPolicy, namespace_labels: Mapping[str, str] | None) -> bool:
    """Does managedJobsNamespaceSelector select the namespace? A nil selector selects all."""
    if policy.managed_jobs_namespace_selector is None:
        return True
    if namespace_labels is None:
        raise AdmissionDenied("failed to get the namespace to evaluate managedJobsNamespaceSelector")
    return label_selector_matches(policy.managed_jobs_namespace_selector, namespace_labels)


def is_managed(obj: Mapping[str, Any], policy: AdmissionPolicy, namespace_labels: Mapping[str, str]) -> bool:
    """Should a reconciler make a Workload for this top-level job (no managed ancestor)?

    Kueue HEAD (ManagedJobsNamespaceSelectorAlwaysRespected): the namespace must match
    managedJobsNamespaceSelector even when the job names a queue; without a queue name the
    job is managed only under manageJobsWithoutQueueName. Callers handle the ancestor case.
    """
    if not namespace_selected(policy, namespace_labels):
        return False
    return bool(queue_name(obj)) or policy.manage_jobs_without_queue_name


def may_be_managed(obj: Mapping[str, Any], policy: AdmissionPolicy, default_local_queue: bool) -> bool:
    """Can any cluster fact make this object Kueue's? Without a queue name (its own, or the
    namespace's ``default`` LocalQueue), manageJobsWithoutQueueName or a suspending parent it is
    left alone whatever its owners are, so its owners are not read and a failed lookup never
    blocks it (every Deployment's pods pass the pod webhook)."""
    return (bool(queue_name(obj)) or default_local_queue or policy.manage_jobs_without_queue_name
            or keys.POD_SUSPENDING_PARENT in (meta(obj).get("annotations") or {}))


def find_managed_ancestor(obj: Mapping[str, Any], ctx: AdmissionContext) -> Mapping[str, Any] | None:
    """The topmost controller-owner ancestor that Kueue manages, or None.

    Raises :class:`OwnerLookupNeeded` for an owner not in ``ctx.facts.owners`` and
    :class:`AdmissionDenied` for a missing owner, a cycle, or a chain over 10 hops.
    """
    policy = ctx.policy
    namespace = str(meta(obj).get("namespace") or "")
    seen = {str(meta(obj).get("uid") or "")}
    current: Mapping[str, Any] = obj
    candidate: Mapping[str, Any] | None = None
    for _ in range(MAX_OWNER_HOPS + 1):
        ref = controller_owner(current)
        if ref is None:
            return candidate
        api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
        known, enabled = owner_integration(policy, api_version, kind)
        if not known:
            return candidate
        uid = str(ref.get("uid") or "")
        if uid in seen:
            raise AdmissionDenied(f"cyclic ownership detected at {kind} {namespace}/{ref.get('name')}")
        seen.add(uid)
        key: OwnerKey = (api_version, kind, namespace, str(ref.get("name", "")))
        if key not in ctx.facts.owners:
            raise OwnerLookupNeeded(key)
        owner = ctx.facts.owners[key]
        if owner is None:
            raise AdmissionDenied(f"owner {kind} {namespace}/{key[3]} not found")
        if str(meta(owner).get("uid") or "") != uid:
            return candidate
        if enabled and (policy.manage_jobs_without_queue_name or queue_name(owner)):
            candidate = owner
        current = owner
    raise AdmissionDenied(
        f"reached the limit of {MAX_OWNER_HOPS} hops while looking for the ancestor job managed by Kueue"
    )


def workload_should_be_suspended(obj: Mapping[str, Any], ctx: AdmissionContext) -> bool:
    """Kueue's WorkloadShouldBeSuspended as the webhook sees it (tolerating deletion)."""
    if deleting(obj) and ctx.gate("SkipAncestorCheckForDeletedWorkloads"):
        return False
    if not (queue_name(obj) or ctx.policy.manage_jobs_without_queue_name):
        return False  # nothing to suspend whoever owns it: no owner is read
    if find_managed_ancestor(obj, ctx) is not None:
        return False
    if queue_name(obj):
        return True
    if ctx.policy.manage_jobs_without_queue_name:
        return namespace_selected(ctx.policy, ctx.facts.namespace_labels)
    return False


def direct_owner_managed_kind(obj: Mapping[str, Any], policy: AdmissionPolicy) -> bool:
    ref = controller_owner(obj)
    if ref is None:
        return False
    known, enabled = owner_integration(policy, str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
    return known and enabled


def managed_by_default(
    current: str | None, own_controller: str, ctx: AdmissionContext, obj: Mapping[str, Any]
) -> str | None:
    """The managedBy value after MultiKueue defaulting (None: leave the field as it is).

    Kueue's ApplyDefaultForManagedBy, run after the default LocalQueue: with the MultiKueue
    gate, a kind whose ``managedBy`` is unset or names its own controller (CanDefaultManagedBy;
    an empty string is neither) and whose queue-name *label* names a LocalQueue of a
    ClusterQueue listing a MultiKueue admission check (``queue_uses_multikueue``, resolved
    for that label) is handed to MultiKueue. The check need not be Active: Kueue looks at its
    controller only."""
    if not ctx.gate("MultiKueue") or current not in (None, own_controller):
        return None
    if (meta(obj).get("labels") or {}).get(keys.QUEUE_NAME) and ctx.facts.queue_uses_multikueue:
        return keys.MULTIKUEUE_CONTROLLER
    return None


ORPHAN_MESSAGE = "The workload's owner no longer exists"


def is_orphaned(workload: Mapping[str, Any]) -> bool:
    """Kueue's FinishOrphanedWorkloads: a Workload a job reconciler made (it carries the job's
    uid) whose owner references are gone, as after ``kubectl delete job --cascade=orphan``;
    it is finished so that its quota is released instead of held forever."""
    m = meta(workload)
    return not m.get("ownerReferences") and not m.get("deletionTimestamp") \
        and bool((m.get("labels") or {}).get(keys.JOB_UID))
