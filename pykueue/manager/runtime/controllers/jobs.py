"""The job reconciler: one loop for every integration, generic over ``manager.jobs.lifecycle``.

For each enabled integration whose API exists it keeps an informer, and every event puts
``<Kind>:<namespace>/<name>`` on one work queue (the work queue runs a key at most once at
a time, so a job never races itself; different jobs run in parallel). A reconcile reads
only informer caches, asks the lifecycle what should be true, and writes the difference:

1. Workloads: create the missing ones the lifecycle wants, update a pending one's queue
   name (a queue-name label added to a job held under manageJobsWithoutQueueName), delete
   surplus ones the job owns (an LWS scaled down); put them on hold or lift the hold (capability
   ``HoldsWorkloads``: a StatefulSet scaled to zero), creating none while on hold.
2. Adoption (capability ``AdoptsPods``): stamp the owner's pods with their group.
3. Running (``JobLifecycle``): finished -> Workload Finished; admitted and suspended ->
   start with the admission's podset infos; admitted -> pods ready; not admitted and active
   -> stop; not admitted and stopped -> restore the original templates.
4. Retention (``afterDeactivatedByKueue``): the job of a Workload Kueue deactivated is
   deleted once that retention has run out (``retention.deactivated_job_deletion_due``).

Each action that Kueue's job reconciler reports is followed by its Event (``CreatedWorkload``,
``Started``, ``Stopped``, ``FinishedWorkload``, ``DeletedWorkload``, ``UpdatedAdmissionCheck``; see
``manager.jobs.events``), handed to the recorder without waiting. A Workload created for a
job not changed since its creation (generation 1) also gives Kueue's creation latency: from
the job's creation timestamp to the Workload's, both the API server's.

Pod groups (capability ``GroupedObjects``) are keyed by group name; an index from group to
member pods, kept by the pod informer's handler, assembles the group for the lifecycle.

A kind whose rules read other objects (capability ``ReadsRelated``: a TrainJob's training
runtime) gets an informer of each kind it may read; each reconcile looks up what the job needs
there and binds the lifecycle to it. A job whose related objects are not all there is not
reconciled: the reconcile fails and is retried with backoff (as Kueue's fails when it cannot
build the job's pod sets), and it runs again at once when one of them appears or changes.

An integration whose CRD is missing is logged and left out (a cluster may lack the
training-operator or LWS); the others run. Writes carry the object's resourceVersion, so a
409 raises, and the work queue retries from the informer's newer copy.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.access import ApiAccess
from pykueue.api.events import DiscardEvents, EventRecord, EventSink
from pykueue.api.wire import JSON, meta
from pykueue.kube import resources as res
from pykueue.kube.client import ApiError, KubeClient
from pykueue.kube.informer import EventType, Informer
from pykueue.kube.resources import ResourceRef, object_key
from pykueue.kube.workqueue import QueueTiming, WorkQueue, prompt_retry_backoff
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.objects import ObjectError, parse_time
from pykueue.manager.core.workload_state import ADMITTED, FINISHED
from pykueue.manager.jobs import events as job_events
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.copied_labels import with_copied_labels
from pykueue.manager.jobs.lifecycle import (
    Action,
    AdoptsPods,
    Delete,
    DispatchedByMultiKueue,
    Finished,
    GroupedObjects,
    HoldsWorkloads,
    JobLifecycle,
    RemovesFinalizers,
    Replace,
    ScalesBySlices,
    StartConflict,
    WorkloadOwner,
    condition_true,
    is_admitted,
    managed_by_multikueue,
    pod_live,
    podset_infos,
)
from pykueue.manager.jobs.ownership import ORPHAN_MESSAGE, is_orphaned
from pykueue.manager.jobs.prebuilt import prebuilt_workload_name
from pykueue.manager.jobs.registry import JobKind, Registry
from pykueue.manager.jobs.related import ReadsRelated, RelatedKey, RelatedKind, RelatedMissing, missing
from pykueue.manager.jobs.scheduling_gates import admitted_since, lifted_gates
from pykueue.manager.jobs.workload_slices import REPLACED_MESSAGE, is_replacement_slice, plan_slices
from pykueue.manager.runtime.job_resources import related_resource, resource_for, resource_of

from .retention import deactivated_job_deletion_due

log = logging.getLogger(__name__)

FAILED_TO_START = "FailedToStart"
CREATION_LATENCY_GATE = "MetricForWorkloadCreationLatency"
NAMESPACE_RETRY_S = 1.0
UNGATE_RETRY_S = 1.0


# Kubernetes' OwnerReferencesPermissionEnforcement admission plugin (on in OpenShift, for
# one) admits an object whose owner reference has blockOwnerDeletion only from a user who may
# ``update`` the owner's ``finalizers`` subresource (plugin/pkg/admission/gc/gc_admission.go).
BLOCKS_OWNER_DELETION = ("created with an owner reference that blocks the owner's deletion: "
                         "OwnerReferencesPermissionEnforcement wants update on the owner's finalizers")


def api_access(job_kinds: Iterable[JobKind]) -> tuple[ApiAccess, ...]:
    """What the reconciler asks of the API for these kinds, as RBAC (``api.access``): per
    kind, an informer of its objects (a one-item list first tells whether the API is served),
    the writes of its lifecycle's actions (``JobKind.rbac``: :meth:`JobReconciler._apply`
    PUTs a ``Replace`` and DELETEs a ``Delete``), ``update`` on its finalizers for the Workloads
    it owns (``_create_workload`` sets blockOwnerDeletion), a delete of a kind that runs a
    Workload (``_retire_deactivated``) and a list of an elastic kind's pods (the ungater).
    For all kinds: Workloads created, their queue name or slice updated, surplus ones deleted.
    An informer of each kind of object a kind's rules read (``ReadsRelated``)."""
    rows: list[ApiAccess] = [res.WORKLOADS.access("create", "update", "delete")]
    for kind in job_kinds:
        if not kind.reconciled:
            continue
        ref = resource_of(kind.integration)
        rows += [ref.access("list", "watch"), *kind.rbac,
                 ref.access("update", subresource="finalizers", why=BLOCKS_OWNER_DELETION)]
        if isinstance(kind.lifecycle, JobLifecycle):  # afterDeactivatedByKueue: _retire_deactivated
            rows.append(ref.access("delete"))
        if isinstance(kind.lifecycle, ScalesBySlices):
            rows.append(res.PODS.access("list"))
        if isinstance(kind.lifecycle, ReadsRelated):
            rows += [related_resource(rk).access("list", "watch") for rk in kind.lifecycle.related_kinds]
    return tuple(rows)


class JobReconciler:
    """Reconciles every registered job kind against its Workloads; see the module docstring."""

    def __init__(self, client: KubeClient, core: QueueingCore, informers: dict[str, Informer],
                 registry: Registry, policy: AdmissionPolicy, kick: Callable[[], None],
                 finished: dict[str, Finished], workers: int = 4, timing: QueueTiming | None = None,
                 events: EventSink | None = None,
                 creation_latency: Callable[[str, float, str], None] | None = None,
                 gate_removal: Callable[[str, str, bool, float], None] | None = None,
                 deactivated_retention_s: float | None = None) -> None:
        """``creation_latency(job kind, seconds, LocalQueue namespace/name)`` receives each
        Workload's creation latency;
        ``gate_removal(gate, ClusterQueue, in a pod group, seconds)`` each scheduling gate a
        write lifted from a pod, timed from the Workload's admission.
        ``deactivated_retention_s``: the Configuration's afterDeactivatedByKueue (None: unset)."""
        self.client = client
        self.deactivated_retention_s = deactivated_retention_s
        self._creation_latency = creation_latency
        self._gate_removal = gate_removal
        self.events: EventSink = events if events is not None else DiscardEvents()
        self.core = core
        self.informers = informers
        self.registry = registry
        self.policy = policy
        self._kick = kick
        self._finished = finished
        self.queue: WorkQueue[str] = WorkQueue(self.reconcile, workers=workers, name="jobs", timing=timing,
                                                 backoff=prompt_retry_backoff())
        self.active: list[WorkloadOwner] = []
        # group key "Kind:ns/group" -> member object keys, and the reverse (for moves).
        self._groups: dict[str, set[str]] = {}
        self._group_of: dict[str, str] = {}
        # adoption owner key "Kind:ns/owner" -> pod keys.
        self._adoptees: dict[str, set[str]] = {}
        self._adopter_of: dict[str, set[str]] = {}
        # job UID -> keys of Workloads labelled with it (surplus detection).
        self._by_job_uid: dict[str, set[str]] = {}
        # Slices this reconciler created that its Workload informer has not shown yet, by job
        # UID: a slice's name follows the job's generation, so a second reconcile racing the
        # informer would otherwise make another one (KubeRay edits a RayJob's spec right after
        # its creation, and a new generation means a new name, not a 409).
        self._unseen_slices: dict[str, dict[str, JSON]] = {}
        # prebuilt Workload key "ns/name" -> the job keys that run under it (MultiKueue workers).
        self._prebuilt: dict[str, set[str]] = {}
        self._prebuilt_of: dict[str, str] = {}
        # kind -> the informers of its objects (several for a grouped kind with several selectors).
        self._sources: dict[str, list[Informer]] = {}
        # The related objects each job needs (ReadsRelated), and the reverse: whom to reconcile
        # when one changes. Related kind name -> its informer.
        self._needs_of: dict[str, tuple[RelatedKey, ...]] = {}
        self._needed_by: dict[RelatedKey, set[str]] = {}
        self._related: dict[str, Informer] = {}

    # -------------------------------------------------------------- setup

    async def prepare(self) -> None:
        """Create the informers of integrations whose API is served; call before starting them."""
        for lc in self.registry:
            ref = resource_of(lc.integration)
            if ref.group and not await self._served(ref):
                log.warning("%s integration disabled: the %s API (%s) is not served by this cluster",
                            lc.integration.name, ref.kind, ref.api_version)
                continue
            self.active.append(lc)
            selectors: tuple[str | None, ...] = (None,)
            if isinstance(lc, GroupedObjects):
                selectors = lc.label_selectors
            for i, selector in enumerate(selectors):
                informer = Informer(self.client, ref, label_selector=selector)
                informer.add_handler(self._object_handler(lc))
                # The first under the kind's name; further selectors beside it.
                self.informers[ref.kind if i == 0 else f"{ref.kind}#{i}"] = informer
                self._sources.setdefault(ref.kind, []).append(informer)
            if isinstance(lc, ReadsRelated):
                for rk in lc.related_kinds:
                    await self._watch_related(rk)
        log.info("job integrations: %s", ", ".join(lc.integration.name for lc in self.active) or "none")

    async def _watch_related(self, rk: RelatedKind) -> None:
        if rk.kind in self._related:
            return
        ref = related_resource(rk)
        if not await self._served(ref):
            # Nothing of that kind can be found: the jobs that need one wait (and are retried).
            log.warning("the %s API (%s) is not served by this cluster: jobs that need one wait",
                        ref.kind, ref.api_version)
            return
        if rk.kind in self.informers:
            raise ValueError(f"related kind {rk.kind} clashes with an informer of that name")
        informer = Informer(self.client, ref)
        informer.add_handler(self._related_handler(rk))
        self.informers[rk.kind] = self._related[rk.kind] = informer

    async def _served(self, ref: ResourceRef) -> bool:
        try:
            await self.client.get(ref.collection_path(), {"limit": 1})
            return True
        except ApiError as exc:
            if exc.not_found:
                return False
            raise

    def start(self) -> None:
        self.queue.start()

    async def stop(self, drain: bool = False, timeout_s: float = 5.0) -> None:
        """Stop reconciling: at once, or after the reconciles queued and in flight (``drain``,
        within ``timeout_s``)."""
        await self.queue.shutdown(drain=drain, timeout_s=timeout_s)

    # -------------------------------------------------------------- events

    def _object_handler(self, lc: WorkloadOwner) -> Callable[[EventType, JSON, JSON | None], None]:
        kind = lc.integration.kind

        def handle(event: EventType, obj: JSON, old: JSON | None) -> None:
            key = object_key(obj)
            ns = str(meta(obj).get("namespace") or "")
            if isinstance(lc, GroupedObjects):
                self._regroup(kind, key, ns, None if event == EventType.DELETED else lc.group_name(obj))
            else:
                self.queue.add(f"{kind}:{key}")
            if isinstance(lc, DispatchedByMultiKueue):
                self._note_prebuilt(f"{kind}:{key}", ns, None if event == EventType.DELETED
                                    else self._prebuilt_name(obj))
            adopters = [o for o in self.active if isinstance(o, AdoptsPods)] if kind == "Pod" else []
            if adopters:
                # At most one owner adopts a pod (an LWS's, a StatefulSet's): the first that names it.
                owner_key = None
                for owner in adopters if event != EventType.DELETED else ():
                    if name := owner.pod_owner(obj):
                        owner_key = f"{owner.integration.kind}:{ns}/{name}"
                        break
                self._readopt(owner_key, key)
        return handle

    def _related_handler(self, rk: RelatedKind) -> Callable[[EventType, JSON, JSON | None], None]:
        def handle(event: EventType, obj: JSON, old: JSON | None) -> None:
            for job_key in sorted(self._needed_by.get(rk.key_of(obj), ())):
                self.queue.add(job_key)
        return handle

    def _note_needs(self, job_key: str, needs: tuple[RelatedKey, ...]) -> None:
        for key in self._needs_of.pop(job_key, ()):
            self._needed_by.get(key, set()).discard(job_key)
            if not self._needed_by.get(key):
                self._needed_by.pop(key, None)
        if needs:
            self._needs_of[job_key] = needs
            for key in needs:
                self._needed_by.setdefault(key, set()).add(job_key)

    def _find_related(self, key: RelatedKey) -> JSON | None:
        _, kind, namespace, name = key
        informer = self._related.get(kind)
        return None if informer is None else informer.get_by_name(name, namespace or None)

    def _prebuilt_name(self, job: JSON) -> str | None:
        """The prebuilt Workload ``job`` runs under, as the WorkloadIdentifierAnnotations gate
        reads it (a copy MultiKueue made before with a label still counts)."""
        return prebuilt_workload_name(job, self.policy.gates.enabled("WorkloadIdentifierAnnotations")) or None

    def _note_prebuilt(self, job_key: str, ns: str, workload: str | None) -> None:
        """Remember which job runs under a prebuilt Workload: that Workload has no owner
        reference to lead its changes (its admission) back to the job."""
        before = self._prebuilt_of.pop(job_key, None)
        if before is not None:
            self._prebuilt.get(before, set()).discard(job_key)
        if workload:
            self._prebuilt_of[job_key] = f"{ns}/{workload}"
            self._prebuilt.setdefault(f"{ns}/{workload}", set()).add(job_key)

    def _regroup(self, kind: str, key: str, ns: str, group: str | None) -> None:
        new = f"{kind}:{ns}/{group}" if group else None
        old = self._group_of.pop(key, None)
        if old is not None:
            self._groups.get(old, set()).discard(key)
            if not self._groups.get(old):
                self._groups.pop(old, None)
            self.queue.add(old)
        if new is not None:
            self._group_of[key] = new
            self._groups.setdefault(new, set()).add(key)
            self.queue.add(new)

    def _readopt(self, owner_key: str | None, pod_key: str) -> None:
        for old in self._adopter_of.pop(pod_key, set()):
            self._adoptees.get(old, set()).discard(pod_key)
        if owner_key is not None:
            self._adopter_of.setdefault(pod_key, set()).add(owner_key)
            self._adoptees.setdefault(owner_key, set()).add(pod_key)
            self.queue.add(owner_key)

    def on_workload(self, event: EventType, obj: JSON) -> None:
        """A Workload changed: reconcile the jobs it belongs to."""
        m = meta(obj)
        key = object_key(obj)
        uid = str((m.get("labels") or {}).get(keys.JOB_UID) or "")
        if uid:
            if event == EventType.DELETED:
                self._by_job_uid.get(uid, set()).discard(key)
            else:
                self._by_job_uid.setdefault(uid, set()).add(key)
            unseen = self._unseen_slices.get(uid)
            if unseen is not None:
                unseen.pop(str(m.get("name")), None)
                if not unseen:
                    del self._unseen_slices[uid]
        for job_key in self.job_keys_of(obj):
            self.queue.add(job_key)
        orphaned = event != EventType.DELETED and is_orphaned(obj)
        if orphaned and self.policy.gates.enabled("FinishOrphanedWorkloads"):
            self._finish(key, obj, Finished(keys.Reason.OWNER_NOT_FOUND, ORPHAN_MESSAGE))

    def job_keys_of(self, workload: JSON) -> list[str]:
        """Reconcile keys of what runs this Workload: its owners of a registered kind and its
        pod group; [] when nothing does (a Workload created on its own)."""
        m = meta(workload)
        ns, name = str(m.get("namespace") or ""), str(m.get("name") or "")
        registered = set(self.registry.kinds())
        out = [f"{ref['kind']}:{ns}/{ref.get('name')}" for ref in m.get("ownerReferences") or ()
               if ref.get("kind") in registered]
        out += sorted(self._prebuilt.get(f"{ns}/{name}", ()))
        for lc in self.active:
            group = f"{lc.integration.kind}:{ns}/{name}"
            if group in self._groups and isinstance(lc, GroupedObjects):  # the check is slow
                out.append(group)
        return out

    def stop_evicted(self) -> None:
        """Workloads the core started evicting: their jobs are stopped by reconciling them;
        one that nothing runs has nothing to wait for and gives its quota back now."""
        for wl_key in sorted(self.core.take_stopping()):
            rec = self.core.workload(wl_key)  # known: take_stopping names only current records
            workload = self.informers["Workload"].get(wl_key) or (rec.wl.source if rec is not None else {})
            job_keys = self.job_keys_of(workload)
            for job_key in job_keys:
                self.queue.add(job_key)
            if not job_keys:
                self.core.job_stopped(wl_key)

    # -------------------------------------------------------------- reconcile

    async def reconcile(self, key: str) -> float | None:
        kind, _, obj_key = key.partition(":")
        lc = self.registry.get(kind)
        if lc is None or "/" not in obj_key:
            return None
        ns, name = obj_key.split("/", 1)
        job = self._load(lc, key, ns, name)
        if job is None:
            self._note_needs(key, ())
            if isinstance(lc, GroupedObjects) and self.core.job_stopped(obj_key):
                self._kick()  # the last pod of an evicted group is gone
            return None  # deleted: its Workloads go with it (ownerReferences, garbage collector)
        namespace = self.informers["Namespace"].get(ns)
        if namespace is None:
            return NAMESPACE_RETRY_S  # the Namespace informer has not caught up yet
        if (namespace.get("status") or {}).get("phase") == "Terminating":
            # Nothing can be created there any more; its objects are going away, and our
            # finalizers must not hold them (nor so the namespace).
            if isinstance(lc, RemovesFinalizers):
                await self._apply(lc.finalize(job, False))
            return None
        if not lc.is_managed(job, self.policy, meta(namespace).get("labels") or {}):
            self._note_needs(key, ())
            return None
        if isinstance(lc, ReadsRelated):
            needs = lc.needs(job)
            self._note_needs(key, needs)
            related = {k: self._find_related(k) for k in needs}
            absent = missing(related, needs)
            if absent:
                # Kueue cannot build its pod sets: nothing is done, the reconcile is retried.
                raise RelatedMissing(absent[0])
            lc = lc.bind(related)
        prebuilt = self._prebuilt_name(job) if isinstance(lc, DispatchedByMultiKueue) else None
        try:
            # A prebuilt Workload (MultiKueue's copy in a worker) is made by someone else.
            desired = [] if prebuilt else with_copied_labels(lc.workloads(job), job,
                                                             self.policy.label_keys_to_copy)
        except (ObjectError, ValueError, TypeError) as exc:
            log.warning("%s %s: cannot build its Workloads: %s", kind, obj_key, exc)
            return None
        finished = lc.finished(job) if isinstance(lc, JobLifecycle) else None
        deleting = bool(meta(job).get("deletionTimestamp"))
        hold = lc.on_hold(job) if isinstance(lc, HoldsWorkloads) else None
        create = finished is None and not deleting and hold is None
        # An elastic job runs under one of its slices, which the slices' plan names.
        elastic = isinstance(lc, ScalesBySlices) and lc.elastic(job) and not prebuilt and len(desired) == 1 \
            and self.policy.gates.enabled("ElasticJobsViaWorkloadSlices")
        scaler = lc if elastic and isinstance(lc, ScalesBySlices) else None
        running_under = prebuilt
        if scaler is not None:
            running_under = await self._sync_slices(lc, job, desired[0], create)
        else:
            await self._sync_workloads(lc, job, desired, create=create)
        if isinstance(lc, HoldsWorkloads):
            self._hold(desired, hold)
        if isinstance(lc, AdoptsPods):
            await self._adopt(lc, key, job)
        if isinstance(lc, JobLifecycle):
            wl_key = f"{ns}/{running_under or lc.workload_name(job)}"
            await self._run(lc, job, ns, finished, running_under)
            wait: float | None = None
            if finished is None and not deleting:
                deleted, wait = await self._retire_deactivated(lc, job, wl_key)
                if deleted:
                    return None
            if isinstance(lc, RemovesFinalizers):
                workload = self.informers["Workload"].get(wl_key)
                done = workload is not None and condition_true(workload, keys.WorkloadCondition.FINISHED)
                await self._apply(lc.finalize(job, done))
            if scaler is not None and running_under is not None:
                again = await self._ungate(scaler, job, ns, running_under)
                return again if wait is None else wait if again is None else min(again, wait)
            return wait
        return None

    def _load(self, lc: WorkloadOwner, key: str, ns: str, name: str) -> JSON | None:
        sources = self._sources.get(lc.integration.kind)
        if not sources:
            return None
        if isinstance(lc, GroupedObjects):
            members = [m for k in sorted(self._groups.get(key, ()))
                       if (m := next((o for i in sources if (o := i.get(k)) is not None), None)) is not None]
            return lc.assemble(ns, name, members) if members else None
        return sources[0].get(f"{ns}/{name}")

    async def _run(self, lc: JobLifecycle, job: JSON, ns: str, finished: Finished | None,
                   workload_name: str | None = None) -> None:
        """``workload_name``: the Workload it runs under when not the lifecycle's own name
        (a prebuilt one, an elastic job's current slice)."""
        wl_key = f"{ns}/{workload_name or lc.workload_name(job)}"
        # MultiKueue runs it in a worker: here it stays suspended, its status is the worker's.
        elsewhere = managed_by_multikueue(lc, job)
        workload = self.informers["Workload"].get(wl_key)
        if workload is None:
            if finished is None and lc.is_active(job):
                await self._stop(lc, job, job_events.MISSING_WORKLOAD)  # nothing may run without its Workload
            return
        if finished is not None:
            subject = self._subject(lc, job)
            if self._finish(wl_key, workload, finished) and subject is not None:
                self.events.record(job_events.finished_workload(lc.integration, subject, wl_key))
            return
        if condition_true(workload, keys.WorkloadCondition.FINISHED):
            # Kueue only finalizes such a job, whatever it reports now (an AppWrapper that
            # succeeded says Terminating while its objects go): stopping it would undo nothing.
            return
        rec = self.core.workload(wl_key)
        if rec is not None and rec.finished_as is not None and \
                rec.finished_as[0] == keys.Reason.WORKLOAD_SLICE_REPLACED:
            return  # the core admitted its replacement a moment ago: the job runs on under that
        if rec is not None and rec.stopping is not None:
            # Evicted: stop it, and give the quota back once none of its pods runs. What the
            # job reports is only believed once it is seen stopped: a job started a moment ago
            # may not count its pods yet (the update of the stop brings it back here).
            if lc.is_active(job):
                decided = rec.eviction_note.message if rec.eviction_note is not None else ""
                await self._stop(lc, job, job_events.eviction_message(workload, decided))
            elif (elsewhere or not lc.still_running(job)) and self.core.job_stopped(wl_key):
                self._kick()  # (the MultiKueue controller removes the worker's copy)
            return
        # The core decides: a copy still saying admitted after a release must not restart it.
        if is_admitted(workload) and (rec is None or rec.holds_quota):
            if lc.is_suspended(job) and not elsewhere:
                try:
                    actions = lc.start(job, workload, podset_infos(workload, self._flavors()))
                except StartConflict as exc:
                    self._finish(wl_key, workload, Finished(FAILED_TO_START, str(exc)))
                    return
                written = await self._apply(actions)
                self._record(job_events.started(lc.integration, actions, workload))
                self._time_gates(job.get("pods") or (), written, workload)  # (a pod group's members)
            if rec is not None and rec.status == ADMITTED and not rec.pods_ready and lc.pods_ready(job):
                self.core.set_pods_ready(wl_key)
                self._kick()
            return
        if lc.is_active(job):
            # An elastic job's pending scale-up slice: the job runs on under the slice it
            # replaces, its new pods gated until this one is admitted (Kueue keeps it too).
            if not is_replacement_slice(workload):
                await self._stop(lc, job, job_events.NOT_ADMITTED)
        else:
            await self._apply(lc.restore(job, workload))
            if condition_true(workload, keys.WorkloadCondition.QUOTA_RESERVED) and \
                    not isinstance(lc, GroupedObjects):  # (Kueue tells each pod of a group; not here)
                update = job_events.admission_check_update(lc.integration, job, workload)
                if update is not None:
                    self.events.record(update)

    async def _retire_deactivated(self, lc: JobLifecycle, job: JSON,
                                  wl_key: str) -> tuple[bool, float | None]:
        """Kueue's afterDeactivatedByKueue (``retention``): once the retention of a Workload
        Kueue deactivated has run out, delete its job with background propagation (its pods
        and the Workload follow) and record ``Deleted`` on it. Returns whether it was deleted,
        else the seconds until it is due (None: it is not). A group of pods loses Kueue's
        finalizers and, as in Kueue, the pod that stands for it is deleted."""
        workload = self.informers["Workload"].get(wl_key)
        after = self.deactivated_retention_s
        due = None if after is None or workload is None else deactivated_job_deletion_due(workload, after)
        if due is None:
            return False, None
        wait = due - time.time()
        if wait > 0:
            return False, wait
        subject = self._subject(lc, job)
        if subject is None:
            return False, None
        if isinstance(lc, RemovesFinalizers):
            # Kueue finalizes after its delete; first here, so the update does not race it.
            await self._apply(lc.finalize(job, True))
        m = meta(subject)
        path = resource_for(subject).object_path(str(m.get("name")), str(m.get("namespace") or "") or None)
        options: JSON = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        if m.get("uid"):
            options["preconditions"] = {"uid": m.get("uid")}
        try:
            await self.client.delete(path, options)
        except ApiError as exc:
            if exc.not_found or exc.conflict:
                return True, None  # gone already, or a namesake we must not touch
            raise
        log.info("deleted %s %s: deactivated by Kueue, retention %.0fs ran out", subject.get("kind"),
                 object_key(subject), after)
        self.events.record(job_events.deleted_after_deactivation(lc.integration, subject))
        return True, None

    async def _stop(self, lc: JobLifecycle, job: JSON, why: str) -> None:
        actions = lc.stop(job)
        await self._apply(actions)
        self._record(job_events.stopped(lc.integration, actions, why))

    def _record(self, events: list[EventRecord]) -> None:
        for event in events:
            self.events.record(event)

    def _subject(self, lc: WorkloadOwner, job: JSON) -> JSON | None:
        """The object events about the job's Workload regard: the job, or for a group of
        objects the member that stands for it."""
        return lc.representative(job) if isinstance(lc, GroupedObjects) else job

    def _finish(self, wl_key: str, workload: JSON, finished: Finished) -> bool:
        """Declare the Workload finished; True when that is news to the core."""
        if condition_true(workload, keys.WorkloadCondition.FINISHED):
            return False
        self._finished[wl_key] = finished
        rec = self.core.workload(wl_key)
        news = rec is not None and rec.status != FINISHED
        if self.core.finish(wl_key):
            self._kick()
        return news

    def _flavors(self) -> dict[str, Mapping[str, Any]]:
        return {str(o["metadata"]["name"]): o for o in self.informers["ResourceFlavor"].items()}

    async def _sync_workloads(self, lc: WorkloadOwner, job: JSON, desired: list[JSON], create: bool) -> None:
        informer = self.informers["Workload"]
        wanted: set[str] = set()
        for wl in desired:
            key = object_key(wl)
            wanted.add(key)
            current = informer.get(key)
            if current is None:
                if create:
                    await self._create_workload(lc, job, wl)
                continue
            await self._follow_admission_gates(lc, job, wl, current)
            held = bool((current.get("status") or {}).get("admission"))
            # A pending Workload follows its job's queue name (mJWQN: the label came later) and
            # maximum execution time (its label may change while the job is suspended; Kueue
            # recreates the Workload then, here it is updated in place).
            followed = ("queueName", "maximumExecutionTimeSeconds")
            wanted_spec = {k: (wl.get("spec") or {}).get(k) for k in followed}
            current_spec = {k: (current.get("spec") or {}).get(k) for k in followed}
            if not wanted_spec["queueName"]:
                wanted_spec["queueName"] = None
            if not current_spec["queueName"]:
                current_spec["queueName"] = None
            if not held and wanted_spec != current_spec:
                path = res.WORKLOADS.object_path(wl["metadata"]["name"], wl["metadata"]["namespace"])
                spec = {k: v for k, v in current["spec"].items() if k not in followed}
                spec.update({k: v for k, v in wanted_spec.items() if v is not None})
                await self.client.replace(path, {**current, "spec": spec})
        uid = str(meta(job).get("uid") or "")
        for key in sorted(self._by_job_uid.get(uid, set()) - wanted if uid else set()):
            surplus = informer.get(key)
            if surplus is not None:
                log.info("deleting surplus Workload %s of %s %s", key, job.get("kind"), object_key(job))
                await self._apply([Delete(surplus)])
                subject = self._subject(lc, job)
                if isinstance(lc, JobLifecycle) and subject is not None:  # as Kueue's jobframework
                    self.events.record(job_events.deleted_workload(lc.integration, subject, surplus))

    async def _follow_admission_gates(self, lc: WorkloadOwner, job: JSON, wanted: JSON,
                                      current: JSON) -> None:
        """Kueue's UpdateAdmissionGatedBy: the Workload carries its job's admission gates as
        they change (a gate removed lets it queue), with an event on the job."""
        if not self.policy.gates.enabled("AdmissionGatedBy"):
            return
        value = str((meta(wanted).get("annotations") or {}).get(keys.ADMISSION_GATED_BY) or "")
        if value == str((meta(current).get("annotations") or {}).get(keys.ADMISSION_GATED_BY) or ""):
            return
        path = res.WORKLOADS.object_path(meta(current)["name"], meta(current)["namespace"])
        await self.client.patch(path, {"metadata": {"annotations": {keys.ADMISSION_GATED_BY: value or None}}})
        subject = self._subject(lc, job)
        if isinstance(lc, JobLifecycle) and subject is not None:
            self.events.record(job_events.updated_admission_gates(lc.integration, subject, value))

    def _hold(self, desired: list[JSON], why: str | None) -> None:
        """Put the job's Workloads on hold (``why``: the condition's message) or lift the
        hold; the core releases the quota of a held one at once (Kueue's OnHold)."""
        for wl in desired:
            key = object_key(wl)
            if self.informers["Workload"].get(key) is None:
                continue  # not created (or not seen) yet: its event brings the job back
            if self.core.hold(key, why) if why is not None else self.core.unhold(key):
                self._kick()

    async def _sync_slices(self, lc: WorkloadOwner, job: JSON, desired: JSON, create: bool) -> str:
        """An elastic job's slices (``manager.jobs.workload_slices``): create, resize or
        finish them as the plan says; returns the name of the slice the job runs under."""
        informer = self.informers["Workload"]
        uid = str(meta(job).get("uid") or "")
        slices = [w for k in sorted(self._by_job_uid.get(uid, ())) if (w := informer.get(k)) is not None]
        unseen = self._unseen_slices.get(uid, {})
        for seen in [n for n in unseen if any(meta(w).get("name") == n for w in slices)]:
            del unseen[seen]
        slices += list(unseen.values())
        existing = [w for w in slices if not condition_true(w, keys.WorkloadCondition.FINISHED)]
        plan = plan_slices(desired, existing)
        if plan.create is not None and create:
            created = await self._create_workload(lc, job, plan.create)
            if created is not None and uid:
                self._unseen_slices.setdefault(uid, {})[str(meta(created).get("name"))] = created
        for wl in plan.update:
            m = wl["metadata"]
            await self.client.replace(res.WORKLOADS.object_path(m["name"], m["namespace"]), wl)
        for left in plan.finish:
            self._finish(object_key(dict(left)), dict(left),
                         Finished(keys.Reason.WORKLOAD_SLICE_REPLACED, REPLACED_MESSAGE))
        return plan.current

    async def _ungate(self, lc: ScalesBySlices, job: JSON, ns: str, name: str) -> float | None:
        """Let the elastic job's pods start up to its admitted slice's count (Kueue's
        ElasticJobUngater). Read from the API: the job's pods are not watched here."""
        workload = self.informers["Workload"].get(f"{ns}/{name}")
        # Where the job keeps its switch is the kind's to say (a RayService's is in its cluster spec).
        suspended = lc.is_suspended(job) if isinstance(lc, JobLifecycle) \
            else bool((job.get("spec") or {}).get("suspend"))
        if workload is None or not is_admitted(workload) or suspended:
            return None
        reply = await self.client.get(res.PODS.collection_path(ns), {"labelSelector": lc.pods_selector(job)})
        # A list's items carry no apiVersion/kind; the writes below need them.
        items = reply.get("items") or ()
        pods = [{"apiVersion": "v1", "kind": "Pod", **p} for p in items if isinstance(p, dict)]
        self._time_gates(pods, await self._apply(lc.ungate(workload, pods)), workload)
        # Pods the job counts but the list did not show yet (it may lag a moment): look again.
        live = sum(1 for p in pods if pod_live(p))
        return UNGATE_RETRY_S if lc.pods_reported(job) > live else None

    async def _create_workload(self, lc: WorkloadOwner, job: JSON, wl: JSON) -> JSON | None:
        """Create it; the object the API returned, or None when it already existed."""
        wl["metadata"].pop("creationTimestamp", None)
        spec = wl["spec"]
        ref = spec.get("priorityClassRef") or {}
        if ref.get("kind") == "WorkloadPriorityClass" and "priority" not in spec:
            # The API requires the value with the reference, as Kueue's job reconciler sets it.
            wpc = self.informers["WorkloadPriorityClass"].get_by_name(str(ref.get("name")))
            if wpc is None:
                raise LookupError(f"WorkloadPriorityClass {ref.get('name')!r} of {job.get('kind')} "
                                  f"{object_key(job)} not found")  # retried with backoff
            spec["priority"] = int(wpc.get("value") or 0)
        for ref in wl["metadata"].get("ownerReferences") or ():
            ref["blockOwnerDeletion"] = True
        try:
            created = await self.client.create(res.WORKLOADS.collection_path(wl["metadata"]["namespace"]), wl)
            log.info("created Workload %s for %s %s", object_key(wl), job.get("kind"), object_key(job))
        except ApiError as exc:
            if not exc.already_exists:
                raise
            return None
        self._observe_creation(lc, job, created)
        subject = self._subject(lc, job)
        if subject is not None:
            self.events.record(job_events.created_workload(lc.integration, subject, wl))
        return created

    def _observe_creation(self, lc: WorkloadOwner, job: JSON, created: JSON) -> None:
        """Kueue's ``kueue_workload_creation_latency_seconds``: only for a job still at its first
        generation (a later one was changed after its creation, which the time would include),
        and only under the MetricForWorkloadCreationLatency gate."""
        if self._creation_latency is None or not self.policy.gates.enabled(CREATION_LATENCY_GATE):
            return
        if int(meta(job).get("generation") or 0) > 1:
            return
        try:
            job_at = parse_time(meta(job).get("creationTimestamp"))
            workload_at = parse_time(meta(created).get("creationTimestamp"))
        except ObjectError:
            return
        if job_at is not None and workload_at is not None:
            queue = str((created.get("spec") or {}).get("queueName") or "")
            self._creation_latency(lc.integration.kind, workload_at - job_at,
                                   f"{meta(created).get('namespace') or ''}/{queue}")

    async def _adopt(self, lc: AdoptsPods, owner_key: str, owner: JSON) -> None:
        sources = self._sources.get("Pod") or []  # a pod is in one of them (disjoint selectors)
        actions: list[Action] = []
        for pod_key in sorted(self._adoptees.get(owner_key, ())):
            pod = next((p for i in sources if (p := i.get(pod_key)) is not None), None)
            adopted = None if pod is None else lc.adopt(
                owner, pod, identifier_annotations=self.policy.gates.enabled("WorkloadIdentifierAnnotations"))
            if adopted is not None:
                actions.append(Replace(adopted))
        await self._apply(actions)

    def _time_gates(self, before: Iterable[JSON], written: list[Action], workload: JSON) -> None:
        """Kueue's ``kueue_pod_scheduling_gate_removal_seconds`` for the gates ``written`` lifted."""
        if self._gate_removal is None:
            return
        lifted = lifted_gates(before, written, workload)
        since = admitted_since(workload)
        if not lifted or since is None:
            return
        cq = str(((workload.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")
        now = time.time()
        for gate, in_group in lifted:
            self._gate_removal(gate, cq, in_group, now - since)

    async def _apply(self, actions: list[Action]) -> list[Action]:
        """Carry the actions out; returns those that were (not those whose object was gone).
        Replaces of one object follow each other: each is written over the version the one
        before it left (a TrainJob's runtime patch, then its unsuspension)."""
        done: list[Action] = []
        versions: dict[str, str] = {}  # path -> resourceVersion our last write of it left
        for action in actions:
            obj = action.obj
            m = meta(obj)
            path = resource_for(obj).object_path(str(m.get("name")), str(m.get("namespace") or "") or None)
            if isinstance(action, Replace) and path in versions:
                obj = {**obj, "metadata": {**m, "resourceVersion": versions[path]}}
            try:
                if isinstance(action, Replace):
                    written = await self.client.replace(path, obj)
                    version = meta(written).get("resourceVersion") if isinstance(written, Mapping) else None
                    if version:
                        versions[path] = str(version)
                else:
                    await self.client.delete(path, {"preconditions": {"uid": m.get("uid")}}
                                             if m.get("uid") else None)
            except ApiError as exc:
                if exc.not_found or (isinstance(action, Delete) and exc.conflict):
                    continue  # already gone (or replaced by a namesake we must not touch)
                raise
            done.append(action)
        return done
