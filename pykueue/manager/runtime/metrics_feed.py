"""Kueue's metrics computed from the queueing core's state.

Two kinds of series, fed two ways:

* Gauges (pending, reserving/admitted active, ClusterQueue status, resource quotas, usage,
  pending requests and weighted shares, cohort hierarchy, shares and subtrees, LocalQueue
  variants and admission fair sharing usage, finished counts) are a pure function of the
  core's current state. :meth:`MetricsFeed.refresh` recomputes all of them right before each
  scrape, so they can never drift from the queues, on followers as well as on the leader.
* Counters and histograms (reservations, admissions, ready times, evictions and the time
  until their quota is released, finishes, replaced slices) count *transitions*. The core
  does not report transitions, it only knows the present, so :meth:`MetricsFeed.observe`
  compares each touched workload with what it last saw of it. Workloads found already
  admitted at start-up are baselined, not counted: a restarted manager must not count the
  previous leader's admissions again.

Times come from the core's own timestamps (``reserved_at``, ``admitted_at``) and the
caller's clock, so the computation is testable without a cluster or a real clock. The times
neither knows for a workload found at start-up, when its pods became ready and when it was
evicted, are its PodsReady and Evicted conditions', which the caller reads from the stored
Workload (``baseline``).

What the core's state does not hold is fed where it happens: admission attempts and
preemption skips by the queue manager from each cycle's result, gate removals and Workload
creation latency by the job reconciler, dispatches and remote admissions by the MultiKueue
controller.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.manager.core.changes import CoreChanges
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.objects import FR
from pykueue.manager.core.reasons import eviction_cause
from pykueue.manager.core.tiers import unadmitted_labels
from pykueue.manager.core.workload_state import ADMITTED, FINISHED, PENDING, QUOTA_RESERVED, WorkloadView
from pykueue.manager.runtime.metrics import KueueMetrics

_PODS_READY_TIMEOUT = "PodsReadyTimeout"


def eviction_labels(core_reason: str, *, unique: bool = False) -> tuple[str, str]:
    """(reason, underlying_cause) labels of an eviction recorded by the core.

    Kueue's metrics label every deactivation ``Deactivated``, with the cause apart when
    Kueue deactivated it (see ``eviction_cause``). The unique-evictions family also says why
    a PodsReady timeout happened (``WaitForStart``: pods never became ready).
    """
    if unique and core_reason == _PODS_READY_TIMEOUT:
        return core_reason, "WaitForStart"
    return eviction_cause(core_reason)


def resource_amount(resource: str, amount: int) -> float:
    """The core's integer amount as the float Kueue exposes (cpu is kept in milli-cores)."""
    return amount / 1000 if resource == "cpu" else float(amount)


@dataclass
class _Seen:
    status: str
    evictions: int
    pods_ready: bool
    queued_since: float
    first_admitted: float | None = None
    evicted_for: set[str] = field(default_factory=set)
    ready_since: float | None = None  # when its pods became ready, while they are
    # (when, ClusterQueue) of an eviction whose quota is not released yet.
    evicted: tuple[float, str] | None = None
    # Its reservation was on its way out (evicted, the job stopping): a reservation seen
    # after that is a new one.
    stopping: bool = False


@dataclass(frozen=True)
class QueueCounts:
    """What the gauges of one queue say (also what tests compare with the API)."""

    active: int = 0
    inadmissible: int = 0
    reserving: int = 0
    admitted: int = 0
    finished: int = 0


def cluster_queue_counts(core: QueueingCore) -> dict[str, QueueCounts]:
    """Pending (active / inadmissible), reserving, admitted and finished per ClusterQueue.

    Active = in the queue's heap, ready to be tried; everything else pending in the queue
    (parked after a failed attempt, waiting out a requeue backoff) is inadmissible, as in
    Kueue, where both wait outside the active heap.
    """
    pending: dict[str, int] = {}
    finished: dict[str, int] = {}
    for rec in core.all_workloads().values():
        cq = rec.cluster_queue or ""
        if rec.status == PENDING and not rec.deactivated:
            pending[cq] = pending.get(cq, 0) + 1
        elif rec.status == FINISHED:
            finished[cq] = finished.get(cq, 0) + 1
    out: dict[str, QueueCounts] = {}
    for name in core.cluster_queues():
        queue = core.pending_queue(name)
        active = queue.active_count if queue is not None else 0
        holding = core.holders(name).values()
        out[name] = QueueCounts(active=active, inadmissible=max(0, pending.get(name, 0) - active),
                                reserving=len(holding),
                                admitted=sum(1 for r in holding if r.status == ADMITTED),
                                finished=finished.get(name, 0))
    return out


def local_queue_counts(core: QueueingCore) -> tuple[dict[str, QueueCounts], dict[str, dict[FR, int]]]:
    """Counts and reserved resources per LocalQueue key ``namespace/name``.

    A LocalQueue has no heap of its own; its pending workloads are active when they sit in
    their ClusterQueue's heap and inadmissible otherwise.
    """
    counts: dict[str, dict[str, int]] = {key: {} for key in core.local_queues()}
    usage: dict[str, dict[FR, int]] = {key: {} for key in core.local_queues()}
    for rec in core.all_workloads().values():
        key = f"{rec.wl.namespace}/{rec.wl.queue_name}"
        if key not in counts:
            continue
        c = counts[key]
        if rec.status == PENDING and not rec.deactivated:
            queue = core.pending_queue(rec.cluster_queue or "")
            # ``in`` covers parked ones too; only the heap's tickets are active.
            active = queue is not None and rec.key in queue and not queue.is_parked(rec.key)
            bucket = "active" if active else "inadmissible"
            c[bucket] = c.get(bucket, 0) + 1
        elif rec.holds_quota:
            c["reserving"] = c.get("reserving", 0) + 1
            c["admitted"] = c.get("admitted", 0) + (rec.status == ADMITTED)
            for fr, v in rec.usage.items():
                usage[key][fr] = usage[key].get(fr, 0) + v
        elif rec.status == FINISHED:
            c["finished"] = c.get("finished", 0) + 1
    return {k: QueueCounts(**v) for k, v in counts.items()}, usage


def unadmitted_counts(core: QueueingCore) -> tuple[dict[tuple[str, str, str], int],
                                                   dict[tuple[str, str, str, str, str], int]]:
    """Kueue's unadmitted-workloads gauges (KEP-10852): every workload neither admitted nor
    finished, per ClusterQueue and per LocalQueue, by the Admitted reason and the QuotaReserved
    tier. The ClusterQueue is the one its LocalQueue names (which may not exist); a workload
    whose LocalQueue is missing has none and is in neither family, as in Kueue."""
    per_cq: dict[tuple[str, str, str], int] = {}
    per_lq: dict[tuple[str, str, str, str, str], int] = {}
    for rec in core.all_workloads().values():
        tas = core.topology
        delayed = tas is not None and tas.holds_admission(rec.key)
        labels = unadmitted_labels(rec, delayed)
        if labels is None:
            continue
        lq = core.local_queue(f"{rec.wl.namespace}/{rec.wl.queue_name}")
        cq = lq.cluster_queue if lq is not None else ""
        if not cq:
            continue
        per_cq[(cq, *labels)] = per_cq.get((cq, *labels), 0) + 1
        lq_labels = (rec.wl.queue_name, rec.wl.namespace, cq, *labels)
        per_lq[lq_labels] = per_lq.get(lq_labels, 0) + 1
    return per_cq, per_lq


def cohort_path(core: QueueingCore, cluster_queue: str) -> tuple[str, str]:
    """(parent cohort, root cohort) of a ClusterQueue; empty strings when it has none."""
    cq = core.cluster_queue(cluster_queue)
    parent = (cq.parent if cq is not None else None) or ""
    root, seen = parent, {parent}
    while root:
        cohort = core.cohorts().get(root)
        up = cohort.parent if cohort is not None else None
        if not up or up in seen:
            break
        seen.add(up)
        root = up
    return parent, root


def cohort_tree(core: QueueingCore) -> dict[str, tuple[str, str]]:
    """(parent cohort, root cohort) of every cohort of the tree, a Cohort object or a name
    only referenced as a parent (Kueue's implicit cohort); the parent is empty at a root, which
    is its own root. Cohorts in a cycle, or below one, are left out, as Kueue leaves them."""
    cohorts = core.cohorts()
    parents = {name: cohort.parent or "" for name, cohort in cohorts.items()}
    for node in (*core.cluster_queues().values(), *cohorts.values()):
        if node.parent:
            parents.setdefault(node.parent, "")
    out: dict[str, tuple[str, str]] = {}
    for name, parent in parents.items():
        root, seen = name, {name}
        while parents.get(root):
            root = parents[root]
            if root in seen:
                break
            seen.add(root)
        else:
            out[name] = (parent, root)
    return out


def admitted_by_custom_values(core: QueueingCore,
                              metrics: KueueMetrics) -> dict[str, dict[tuple[str, ...], int]] | None:
    """Per ClusterQueue, its admitted active workloads counted per their Workload custom label
    values (``metrics.customLabels`` with sourceKind Workload); None without such labels."""
    if metrics.custom is None or "Workload" not in metrics.custom.kinds():
        return None
    out: dict[str, dict[tuple[str, ...], int]] = {}
    for name in core.cluster_queues():
        counts = out.setdefault(name, {})
        for rec in core.holders(name).values():
            if rec.status == ADMITTED:
                md = rec.wl.source.get("metadata") or {}
                values = metrics.workload_values(md.get("labels"), md.get("annotations"))
                counts[values] = counts.get(values, 0) + 1
    return out


def cohort_ancestors(core: QueueingCore, cluster_queue: str) -> list[str]:
    """The cohorts from a ClusterQueue's parent up to the root; none in or below a cycle
    (Kueue counts nothing there)."""
    cq = core.cluster_queue(cluster_queue)
    out: list[str] = []
    name = cq.parent if cq is not None else None
    while name:
        if name in out:
            return []
        out.append(name)
        cohort = core.cohorts().get(name)
        name = cohort.parent if cohort is not None else None
    return out


def pending_requests(core: QueueingCore) -> dict[tuple[str, str], float]:
    """Per (ClusterQueue, resource) what its pending workloads ask for in all (each pod set's
    requests times its count; no flavor chosen yet), with 0 for a resource the queue has quota
    of and nobody asks for: Kueue's ``kueue_cluster_queue_resource_pending``."""
    totals: dict[str, dict[str, int]] = {
        name: {resource: 0 for _, resource in cq.quotas} for name, cq in core.cluster_queues().items()}
    for rec in core.all_workloads().values():
        if rec.status != PENDING or rec.deactivated:
            continue
        row = totals.get(rec.cluster_queue or "")
        if row is None:
            continue
        for ps in rec.wl.podsets:
            for resource, v in ps.requests.items():
                row[resource] = row.get(resource, 0) + max(0, v) * ps.count
    return {(cq, resource): resource_amount(resource, v)
            for cq, row in totals.items() for resource, v in row.items()}


@dataclass(frozen=True)
class Subtrees:
    """What Kueue's ``kueue_cohort_subtree_*`` gauges say of each cohort."""

    quota: dict[tuple[str, str, str], float]
    """(cohort, flavor, resource) -> the subtree's quota."""
    reservations: dict[tuple[str, str, str], float]
    """(cohort, flavor, resource) -> what the ClusterQueues of the subtree reserve."""
    admitted: dict[str, int]
    """cohort -> admitted workloads in the subtree's ClusterQueues (cohorts above one only)."""


def cohort_subtrees(core: QueueingCore, tree: Mapping[str, tuple[str, str]],
                    counts: Mapping[str, QueueCounts]) -> Subtrees:
    """The subtree gauges of the cohorts of ``tree`` (:func:`cohort_tree`; cycles left out)."""
    quota = {(name, flavor, resource): resource_amount(resource, v)
             for name, subtree in core.cohort_subtree_quota().items() if name in tree
             for (flavor, resource), v in subtree.items()}
    reserved: dict[tuple[str, str, str], int] = {}
    admitted: dict[str, int] = {}
    for name, cq in core.cluster_queues().items():
        chain: list[str] = []
        parent = cq.parent or ""
        while parent in tree and parent not in chain:
            chain.append(parent)
            parent = tree[parent][0]
        if not chain:
            continue
        usage = core.usage_of(name)
        count = counts[name].admitted if name in counts else 0
        for cohort in chain:
            admitted[cohort] = admitted.get(cohort, 0) + count
            for (flavor, resource), v in usage.items():
                key = (cohort, flavor, resource)
                reserved[key] = reserved.get(key, 0) + v
    return Subtrees(quota, {k: resource_amount(k[2], v) for k, v in reserved.items()}, admitted)


def _held_back(rec: WorkloadView) -> bool:
    """A reservation no write has carried out yet may still be taken back as if it never
    was (``CoreConfig.withdraw_unpublished``): its transitions are counted once published."""
    return rec.unpublished and rec.holds_quota


class MetricsFeed:
    """Feeds :class:`KueueMetrics` from a :class:`QueueingCore`."""

    def __init__(self, core: QueueingCore, metrics: KueueMetrics, *, cluster_queue_resources: bool = False,
                 local_queue_metrics: bool = True, cohort_metrics: bool = True,
                 admission_fair_sharing: bool = True) -> None:
        self.core = core
        self.metrics = metrics
        self.cluster_queue_resources = cluster_queue_resources
        self.local_queue_metrics = local_queue_metrics
        # Kueue's MetricsForCohorts gate: the hierarchy's info series (ClusterQueue and Cohort).
        self.cohort_metrics = cohort_metrics
        # Kueue's AdmissionFairSharing gate: with the Configuration's admissionFairSharing, each
        # LocalQueue's usage value.
        self.admission_fair_sharing = admission_fair_sharing
        self._seen: dict[str, _Seen] = {}
        # Workloads changed outside the core's decisions (finished or deleted by another
        # writer), for the next observe; PodsReady changes come from the core itself.
        self._touched: set[str] = set()
        self._queues: set[str] = set()
        self._local_queues: set[str] = set()
        self._cohorts: set[str] = set()

    @classmethod
    def from_config(cls, core: QueueingCore, metrics: KueueMetrics, config: Mapping[str, Any]) -> MetricsFeed:
        """Honours Configuration ``metrics.enableClusterQueueResources``, ``localQueueMetrics.enable``
        and the ``MetricsForCohorts`` and ``AdmissionFairSharing`` feature gates (on unless set
        false)."""
        section = config.get("metrics") or {}
        lq = section.get("localQueueMetrics") or {}
        gates = config.get("featureGates") or {}
        gates = gates if isinstance(gates, Mapping) else {}
        return cls(core, metrics, cluster_queue_resources=bool(section.get("enableClusterQueueResources")),
                   local_queue_metrics=lq.get("enable", True) is not False,
                   cohort_metrics=gates.get("MetricsForCohorts") is not False,
                   admission_fair_sharing=gates.get("AdmissionFairSharing") is not False)

    # -- transitions -------------------------------------------------------------------------
    def baseline(self, keys: Iterable[str] | None = None,
                 ready_since: Callable[[str], float | None] | None = None,
                 evicted_since: Callable[[str], float | None] | None = None) -> None:
        """Remember workloads as they are now without counting anything (start-up, adoption).

        ``ready_since`` gives, for a workload whose pods are ready, when they became so (its
        PodsReady condition's time), for the time from ready to a later eviction;
        ``evicted_since``, for one evicted that still holds its quota, when it was evicted
        (its Evicted condition's time), for the time until the quota is released."""
        for key in self.core.all_workloads() if keys is None else keys:
            rec = self.core.workload(key)
            if rec is not None:
                seen = self._remember(rec, self._seen.get(key))
                if seen.pods_ready and seen.ready_since is None and ready_since is not None:
                    seen.ready_since = ready_since(key)
                if rec.holds_quota and rec.stopping is not None and seen.evicted is None \
                        and evicted_since is not None:
                    at = evicted_since(key)
                    if at is not None:
                        seen.evicted = (at, rec.cluster_queue or "")

    def _remember(self, rec: WorkloadView, prev: _Seen | None) -> _Seen:
        ready = rec.status == ADMITTED and rec.pods_ready
        seen = _Seen(rec.status, len(rec.evictions), ready, rec.wl.created, stopping=rec.stopping is not None)
        if prev is not None:
            seen.queued_since, seen.first_admitted = prev.queued_since, prev.first_admitted
            seen.evicted_for, seen.evicted = prev.evicted_for, prev.evicted
            if seen.pods_ready:
                seen.ready_since = prev.ready_since
        elif rec.status == ADMITTED:
            seen.first_admitted = rec.admitted_at
        self._seen[rec.key] = seen
        return seen

    def touch(self, key: str) -> None:
        """Look at ``key`` in the next :meth:`observe` although the core did not change it
        (only a workload seen before has a transition to count or a memory to drop)."""
        if key in self._seen:
            self._touched.add(key)

    def observe(self, changes: CoreChanges, now: float,
                preemptors: Mapping[str, str] | None = None) -> set[str]:
        """Count the transitions of the workloads ``changes`` names (their statuses changed or
        their PodsReady did; also its withdrawals and replaced slices) and of those touched
        since the last call.

        ``preemptors`` maps a victim's key to the preempting ClusterQueue, for
        ``kueue_preempted_workloads_total``. Returns the keys whose PodsReady turned true:
        their status needs writing although the core did not mark them changed.
        """
        became_ready: set[str] = set()
        for cq, count in changes.withdrawals.items():
            self.metrics.withdrawn(cq, count)
        for cq, count in changes.replaced_slices.items():
            self.metrics.replaced_slices(cq, count)
        touched, self._touched = self._touched, set()
        for key in set(changes.written) | touched | changes.pods_ready:
            rec = self.core.workload(key)
            if rec is None:
                self._seen.pop(key, None)
                continue
            if not _held_back(rec) and self._observe_one(rec, now, preemptors or {}):
                became_ready.add(key)
        return became_ready

    def published(self, key: str, now: float) -> None:
        """Count the reservation of ``key`` that :meth:`observe` held back while it was
        unpublished (see ``QueueingCore.publish``)."""
        rec = self.core.workload(key)
        if rec is not None and not _held_back(rec):
            self._observe_one(rec, now, {})

    def _observe_one(self, rec: WorkloadView, now: float, preemptors: Mapping[str, str]) -> bool:
        """Count the record's transitions since it was last seen; True if its pods became ready."""
        prev = self._seen.get(rec.key) or _Seen(PENDING, 0, False, rec.wl.created)
        became_ready = self._transition(rec, prev, now, preemptors)
        self._remember(rec, prev)
        return became_ready

    def _transition(self, rec: WorkloadView, prev: _Seen, now: float,
                    preemptors: Mapping[str, str]) -> bool:
        m, cq, pc = self.metrics, rec.cluster_queue or "", rec.wl.priority_class or ""
        lq = (rec.wl.namespace, rec.wl.queue_name) if self.local_queue_metrics else None
        # Kueue times every eviction of a workload whose pods are ready from their becoming so.
        ready_since = prev.ready_since if prev.status == ADMITTED and prev.pods_ready else None
        for reason in rec.evictions[prev.evictions:]:
            label, cause = eviction_labels(reason)
            unique_label, unique_cause = eviction_labels(reason, unique=True)
            first = unique_label not in prev.evicted_for
            prev.evicted_for.add(unique_label)
            m.evicted(cq, label, cause, pc, local_queue=lq)
            if first:
                m.evicted_once(cq, unique_label, unique_cause, pc)
            if ready_since is not None:
                m.pods_ready_to_evicted(cq, label, cause, max(0.0, now - ready_since))
                ready_since = None  # a later eviction in the same batch found them stopped
            if reason == "Preempted":
                preempted_as = self.core.preempted_reason(rec.key)
                m.preempted(preemptors.get(rec.key, cq),
                            preempted_as if preempted_as is not None else "InClusterQueue")
            prev.queued_since = now  # requeued: the next wait is measured from here
            prev.evicted = (now, cq)
        held_before = prev.status in (ADMITTED, QUOTA_RESERVED)
        if held_before and rec.status == PENDING and prev.evicted is not None:
            # Kueue times an active workload's eviction until its quota is released; a
            # deactivated one is not timed, nor a reservation taken back without an eviction.
            if not rec.deactivated and rec.evictions:
                at, evicted_from = prev.evicted
                m.eviction_latency(evicted_from, eviction_labels(rec.evictions[-1])[0], now - at)
            prev.evicted = None
        # The reservation seen before is gone when it was evicted since (or was on its way out
        # then); one held now is new unless it is that one, still held while its job stops.
        gone = prev.stopping or len(rec.evictions) > prev.evictions
        new_reservation = rec.holds_quota and rec.stopping is None and (not held_before or gone)
        if new_reservation:
            reserved = rec.reserved_at if rec.reserved_at is not None else now
            m.quota_reserved(cq, pc, max(0.0, reserved - prev.queued_since), local_queue=lq)
            prev.evicted = None  # holding again: whatever was evicted was released
        if rec.status == ADMITTED and rec.stopping is None and (prev.status != ADMITTED or gone):
            admitted = rec.admitted_at if rec.admitted_at is not None else now
            checks = admitted - rec.reserved_at if rec.reserved_at is not None else None
            m.admitted_workload(cq, pc, max(0.0, admitted - prev.queued_since), checks, local_queue=lq)
            m.cohort_subtree_admitted(cohort_ancestors(self.core, cq), pc)
            if prev.first_admitted is None:
                prev.first_admitted = admitted
        ready_now = rec.status == ADMITTED and rec.pods_ready
        if ready_now and not (prev.status == ADMITTED and prev.pods_ready):
            admitted = rec.admitted_at if rec.admitted_at is not None else now
            m.pods_ready(cq, pc, max(0.0, now - prev.queued_since), max(0.0, now - admitted), local_queue=lq)
            prev.ready_since = now
        if rec.status == FINISHED and prev.status != FINISHED:
            start = prev.first_admitted if prev.first_admitted is not None else now
            m.finished_workload(cq, pc, max(0.0, now - start), local_queue=lq)
        return ready_now and not (prev.status == ADMITTED and prev.pods_ready)

    # -- gauges --------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Recompute every gauge from the core (called before each scrape)."""
        core, m = self.core, self.metrics
        counts = cluster_queue_counts(core)
        for gone in self._queues - counts.keys():
            m.forget_cluster_queue(gone)
        self._queues = set(counts)
        # Kueue reports each ClusterQueue's weighted share with its resource gauges, under fair sharing.
        shares = core.cluster_queue_shares() if self.cluster_queue_resources and \
            core.config.fair_sharing is not None else {}
        inactive = core.inactive_cluster_queues()  # (the shares brought the structure up to date)
        by_values = admitted_by_custom_values(core, m)
        for name, c in counts.items():
            m.report_pending(name, c.active, c.inadmissible)
            m.report_active(name, c.reserving, c.admitted,
                            None if by_values is None else by_values.get(name, {}))
            m.report_finished(name, c.finished)
            m.cluster_queue_status(name, "pending" if name in inactive else "active")
            parent, root = cohort_path(core, name)
            if self.cohort_metrics:
                m.cluster_queue_info(name, parent, root)
            if self.cluster_queue_resources:
                self._resources(name, parent)
            if name in shares:
                m.weighted_share(name, parent, shares[name])
        if self.cluster_queue_resources:
            m.report_resource_pending(pending_requests(core))
        self._refresh_cohorts(counts)
        if self.local_queue_metrics:
            self._refresh_local_queues()
        if core.config.tiered_reasons:  # Kueue: only under UnadmittedWorkloadsObservability
            per_cq, per_lq = unadmitted_counts(core)
            m.report_unadmitted(per_cq)
            if self.local_queue_metrics:
                m.report_local_queue_unadmitted(per_lq)

    def _refresh_cohorts(self, counts: Mapping[str, QueueCounts]) -> None:
        """``kueue_cohort_info`` per cohort (MetricsForCohorts), with fair sharing each
        cohort's ``kueue_cohort_weighted_share`` (Kueue's Cohort status ``fairSharing``), and
        the subtree gauges (quota, reservations, admitted workloads)."""
        core, m = self.core, self.metrics
        tree = cohort_tree(core)
        shares = core.cohort_shares() if core.config.fair_sharing is not None else {}
        for gone in self._cohorts - tree.keys():
            m.forget_cohort(gone)
        self._cohorts = set(tree)
        for name in sorted(tree):
            parent, root = tree[name]
            if self.cohort_metrics:
                m.cohort_info(name, parent, root)
            if name in shares:
                m.cohort_weighted_share(name, shares[name])
        subtrees = cohort_subtrees(core, tree, counts)
        members: dict[str, list[str]] = {}
        if m.custom is not None:
            for cq in sorted(counts):
                for cohort in cohort_ancestors(core, cq):
                    members.setdefault(cohort, []).append(cq)
        m.report_cohort_subtrees(subtrees.quota, subtrees.reservations, subtrees.admitted,
                                 members if m.custom is not None else None)

    def _resources(self, name: str, cohort: str) -> None:
        cq = self.core.cluster_queues()[name]
        usage = self.core.usage_of(name)
        for (flavor, resource), quota in sorted(cq.quotas.items()):
            used = resource_amount(resource, usage.get((flavor, resource), 0))
            self.metrics.cluster_queue_resources(
                cohort, name, flavor, resource, nominal=resource_amount(resource, quota.nominal),
                reservation=used, usage=used,
                borrowing_limit=None if quota.borrowing_limit is None else resource_amount(
                    resource, quota.borrowing_limit),
                lending_limit=None if quota.lending_limit is None else resource_amount(
                    resource, quota.lending_limit))

    def _refresh_local_queues(self) -> None:
        core, m = self.core, self.metrics
        # Kueue reports a LocalQueue's admission fair sharing usage, under its gate, whenever
        # the Configuration has admissionFairSharing (whatever its ClusterQueue's admission mode).
        afs = self.admission_fair_sharing and core.config.admission_fair_sharing is not None
        counts, usage = local_queue_counts(core)
        local_queues, cluster_queues = core.local_queues(), core.cluster_queues()
        inactive = core.inactive_cluster_queues()
        for gone in self._local_queues - counts.keys():
            ns, name = gone.split("/", 1)
            m.forget_local_queue(ns, name)
        self._local_queues = set(counts)
        for key, c in counts.items():
            ns, name = key.split("/", 1)
            m.report_local_queue_pending(ns, name, c.active, c.inadmissible)
            m.report_local_queue_active(ns, name, c.reserving, c.admitted)
            m.report_local_queue_finished(ns, name, c.finished)
            lq = local_queues[key]
            active = lq.cluster_queue in cluster_queues and lq.cluster_queue not in inactive \
                and lq.stop_policy == "None"
            m.local_queue_status(ns, name, "True" if active else "False")
            for (flavor, resource), v in sorted(usage[key].items()):
                amount = resource_amount(resource, v)
                m.local_queue_resources(ns, name, flavor, resource, reservation=amount, usage=amount)
            if afs and lq.cluster_queue in cluster_queues:
                m.local_queue_afs_usage(ns, name, lq.cluster_queue, core.local_queue_usage(key))
