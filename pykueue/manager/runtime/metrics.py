"""Kueue's Prometheus metrics, with Kueue's exact names, label names and histogram buckets.

Dashboards and alerts written for Kueue must work unchanged, so the families below follow
``pkg/metrics`` (see ../shared/spec/ops-perf.md §1), including the v0.12 additions (ready
wait time per ClusterQueue and LocalQueue, admitted-until-ready, unique evictions). Every
family except ``kueue_build_info`` carries ``replica_role`` (leader / follower / standalone).
Each family declared is fed: an empty one would be a promise the manager never keeps. Two
families of a Kueue later than v0.19.2 (the release whose API pykueue speaks) are left out,
``kueue_pending_scheduling_hashes`` and ``kueue_preemption_target_recomputations_total``:
:data:`NOT_DECLARED` says why.

Metrics live in a dedicated ``CollectorRegistry`` owned by ``KueueMetrics`` -- never the
process-global one -- so tests and several managers in one process do not collide. The
typed helpers are what reconcilers call; they keep label spelling in one place.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import math
import platform
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.utils import floatToGoString

from pykueue.manager.runtime.custom_labels import (
    CLUSTER_QUEUE,
    COHORT,
    KIND_ORDER,
    LOCAL_QUEUE,
    WORKLOAD,
    CustomLabels,
)

# -- bucket families -------------------------------------------------------------------------
B14: tuple[float, ...] = (1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10240)
B16: tuple[float, ...] = (*B14, 20480, 40960)
DEF: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)  # Go's DefBuckets
WCL: tuple[float, ...] = tuple(round(0.01 * 2**k, 2) for k in range(11))
# controller-runtime's work queue histograms: 10 ns to 1000 s, a decade a bucket.
WORKQUEUE_BUCKETS: tuple[float, ...] = tuple(10.0 ** k for k in range(-8, 4))

REPLICA_ROLE = "replica_role"


class ReplicaRole(StrEnum):
    LEADER = "leader"
    FOLLOWER = "follower"
    STANDALONE = "standalone"


class Kind(StrEnum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


@dataclass(frozen=True)
class Family:
    name: str
    """Exposed name, with ``_total`` for counters, exactly as Kueue exposes it."""
    kind: Kind
    labels: tuple[str, ...]
    """Label names without ``replica_role``."""
    buckets: tuple[float, ...] = ()
    replica_role: bool = True


_CQ_PC = ("cluster_queue", "priority_class")
_CQ_RES = ("cohort", "cluster_queue", "flavor", "resource")
_LQ = ("name", "namespace")
_C, _G, _H = Kind.COUNTER, Kind.GAUGE, Kind.HISTOGRAM

FAMILIES: tuple[Family, ...] = (
    # health / scheduler
    Family("kueue_admission_attempts_total", _C, ("result",)),
    Family("kueue_admission_attempt_duration_seconds", _H, ("result",), DEF),
    Family("multikueue_workloads_dispatched_total", _C, ("cluster_queue", "cluster")),
    Family("multikueue_workloads_admitted_total", _C, ("cluster_queue", "cluster")),
    Family("kueue_workload_creation_latency_seconds", _H, ("job_kind",), WCL),
    Family("kueue_pod_scheduling_gate_removal_seconds", _H, ("name", "cluster_queue", "is_group"), DEF),
    # ClusterQueue
    Family("kueue_build_info", _G, ("git_version", "git_commit", "build_date", "go_version", "compiler",
                                    "platform"), replica_role=False),
    Family("kueue_pending_workloads", _G, ("cluster_queue", "status")),
    Family("kueue_admission_cycle_preemption_skips", _G, ("cluster_queue",)),
    Family("kueue_quota_reserved_workloads_total", _C, _CQ_PC),
    Family("kueue_quota_reserved_wait_time_seconds", _H, _CQ_PC, B14),
    Family("kueue_admitted_workloads_total", _C, _CQ_PC),
    Family("kueue_admission_wait_time_seconds", _H, _CQ_PC, B16),
    Family("kueue_admission_checks_wait_time_seconds", _H, _CQ_PC, B14),
    Family("kueue_ready_wait_time_seconds", _H, _CQ_PC, B14),
    Family("kueue_admitted_until_ready_wait_time_seconds", _H, _CQ_PC, B14),
    Family("kueue_finished_workloads", _G, ("cluster_queue",)),
    Family("kueue_finished_workloads_total", _C, _CQ_PC),
    Family("kueue_execution_time_seconds", _H, _CQ_PC, B16),
    Family("kueue_evicted_workloads_total", _C, ("cluster_queue", "reason", "underlying_cause",
                                                 "priority_class")),
    Family("kueue_evicted_workloads_once_total", _C, ("cluster_queue", "reason", "underlying_cause",
                                                      "priority_class")),
    Family("kueue_pods_ready_to_evicted_time_seconds", _H, ("cluster_queue", "reason", "underlying_cause"),
           B14),
    Family("kueue_workload_eviction_latency_seconds", _H, ("cluster_queue", "reason"), B14),
    Family("kueue_preempted_workloads_total", _C, ("preempting_cluster_queue", "reason")),
    Family("kueue_replaced_workload_slices_total", _C, ("cluster_queue",)),
    Family("kueue_reserving_active_workloads", _G, ("cluster_queue",)),
    Family("kueue_admitted_active_workloads", _G, ("cluster_queue",)),
    Family("kueue_cluster_queue_status", _G, ("cluster_queue", "status")),
    Family("kueue_unadmitted_workloads", _G, ("cluster_queue", "reason", "underlying_cause")),
    Family("kueue_cluster_queue_resource_pending", _G, ("cluster_queue", "resource")),
    Family("kueue_cluster_queue_info", _G, ("cluster_queue", "parent_cohort", "root_cohort")),
    # optional ClusterQueue resource metrics
    Family("kueue_cluster_queue_resource_reservation", _G, _CQ_RES),
    Family("kueue_cluster_queue_resource_usage", _G, _CQ_RES),
    Family("kueue_cluster_queue_nominal_quota", _G, _CQ_RES),
    Family("kueue_cluster_queue_borrowing_limit", _G, _CQ_RES),
    Family("kueue_cluster_queue_lending_limit", _G, _CQ_RES),
    Family("kueue_cluster_queue_weighted_share", _G, ("cluster_queue", "cohort")),
    # Cohort
    Family("kueue_cohort_weighted_share", _G, ("cohort",)),
    Family("kueue_cohort_subtree_quota", _G, ("cohort", "flavor", "resource")),
    Family("kueue_cohort_subtree_resource_reservations", _G, ("cohort", "flavor", "resource")),
    Family("kueue_cohort_subtree_admitted_workloads_total", _C, ("cohort", "priority_class")),
    Family("kueue_cohort_subtree_admitted_active_workloads", _G, ("cohort",)),
    Family("kueue_cohort_info", _G, ("cohort", "parent_cohort", "root_cohort")),
    # LocalQueue
    Family("kueue_local_queue_pending_workloads", _G, (*_LQ, "status")),
    Family("kueue_local_queue_quota_reserved_workloads_total", _C, (*_LQ, "priority_class")),
    Family("kueue_local_queue_quota_reserved_wait_time_seconds", _H, (*_LQ, "priority_class"), B14),
    Family("kueue_local_queue_admitted_workloads_total", _C, (*_LQ, "priority_class")),
    Family("kueue_local_queue_admission_wait_time_seconds", _H, (*_LQ, "priority_class"), B14),
    Family("kueue_local_queue_admission_checks_wait_time_seconds", _H, (*_LQ, "priority_class"), B14),
    Family("kueue_local_queue_ready_wait_time_seconds", _H, (*_LQ, "priority_class"), B14),
    Family("kueue_local_queue_admitted_until_ready_wait_time_seconds", _H, (*_LQ, "priority_class"), B14),
    Family("kueue_local_queue_finished_workloads", _G, _LQ),
    Family("kueue_local_queue_finished_workloads_total", _C, (*_LQ, "priority_class")),
    Family("kueue_local_queue_execution_time_seconds", _H, (*_LQ, "priority_class"), B16),
    Family("kueue_local_queue_evicted_workloads_total", _C, (*_LQ, "reason", "underlying_cause",
                                                             "priority_class")),
    Family("kueue_local_queue_reserving_active_workloads", _G, _LQ),
    Family("kueue_local_queue_admitted_active_workloads", _G, _LQ),
    Family("kueue_local_queue_status", _G, (*_LQ, "active")),
    Family("kueue_local_queue_resource_reservation", _G, (*_LQ, "flavor", "resource")),
    Family("kueue_local_queue_resource_usage", _G, (*_LQ, "flavor", "resource")),
    Family("kueue_local_queue_admission_fair_sharing_usage", _G, (*_LQ, "cluster_queue")),
    Family("kueue_local_queue_unadmitted_workloads", _G, (*_LQ, "cluster_queue", "reason",
                                                          "underlying_cause")),
)

# Families of Kueue's main branch after v0.19.2 that pykueue leaves out, and why.
NOT_DECLARED: Mapping[str, str] = {
    "kueue_pending_scheduling_hashes":
        "not in Kueue v0.19.2; a later Kueue counts the distinct values of its scheduling "
        "equivalence hash (the whole pod spec's shape among them) among pending workloads, and "
        "pykueue's equivalence shapes are coarser, so the count would not be Kueue's",
    "kueue_preemption_target_recomputations_total":
        "not in Kueue v0.19.2; it counts a later Kueue's recomputation of overlapping "
        "preemption targets, which pykueue (like v0.19.2) never does: an entry whose targets "
        "overlap is skipped, counted in kueue_admission_cycle_preemption_skips",
}

# Families that carry no custom labels although they name a ClusterQueue (as in Kueue).
_NO_CUSTOM = frozenset({"kueue_admission_attempts_total", "kueue_admission_attempt_duration_seconds",
                        "multikueue_workloads_dispatched_total", "multikueue_workloads_admitted_total"})


def family_sources(family: Family) -> tuple[str, ...]:
    """The source kinds (``custom_labels``) whose custom labels a family carries, as in Kueue
    v0.19.2's ``pkg/metrics``: a ClusterQueue's on ClusterQueue families, a LocalQueue's on
    LocalQueue families and on the Workload creation latency, a Cohort's on Cohort families;
    the admitted active workloads add the Workload's, and the cohort subtree admitted active
    workloads carry a ClusterQueue's (Kueue reports that gauge from each of the subtree's
    ClusterQueues, with their values)."""
    if not family.replica_role or family.name in _NO_CUSTOM:
        return ()
    if family.name == "kueue_admitted_active_workloads":
        return (CLUSTER_QUEUE, WORKLOAD)
    if family.name == "kueue_cohort_subtree_admitted_active_workloads":
        return (CLUSTER_QUEUE,)
    if family.name == "kueue_workload_creation_latency_seconds" or family.labels[:2] == _LQ:
        return (LOCAL_QUEUE,)
    if family.name.startswith("kueue_cohort_"):
        return (COHORT,)
    if "cluster_queue" in family.labels or "preempting_cluster_queue" in family.labels:
        return (CLUSTER_QUEUE,)
    return ()


def _source_key(family: Family, kind: str, labels: Sequence[str]) -> str:
    """Which object a series of ``family`` is about, for its ``kind`` custom labels."""
    if kind == CLUSTER_QUEUE:
        for name in ("cluster_queue", "preempting_cluster_queue"):
            if name in family.labels:
                return labels[family.labels.index(name)]
    elif kind == LOCAL_QUEUE and family.labels[:2] == _LQ:
        return f"{labels[1]}/{labels[0]}"
    elif kind == COHORT and "cohort" in family.labels:
        return labels[family.labels.index("cohort")]
    return ""


CLUSTER_QUEUE_STATUSES = ("pending", "active", "terminating")
LOCAL_QUEUE_ACTIVE_VALUES = ("True", "False", "Unknown")


# Go's names of the machines Python reports, for ``platform`` as Kueue writes it (GOOS/GOARCH).
_GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386"}


def build_labels() -> tuple[str, str, str, str, str, str]:
    """``kueue_build_info``'s labels for this process, each meaning what it means in Kueue.

    Kueue's release tag is ours (the installed distribution's version); no commit or build
    date is stamped into a Python distribution, so those say ``unknown``; the runtime that
    Kueue names with Go's version and compiler is Python's here.
    """
    try:
        version = f"v{importlib.metadata.version('pykueue')}"
    except importlib.metadata.PackageNotFoundError:
        version = "v0.0.0-unknown"
    machine = platform.machine().lower()
    return (version, "unknown", "unknown", f"python{platform.python_version()}", sys.implementation.name,
            f"{sys.platform}/{_GO_ARCH.get(machine, machine)}")


class _Unchecked:
    """Registers a collector without its names.

    prometheus_client reserves a counter's base name, so ``kueue_finished_workloads_total``
    (counter) would clash with the ``kueue_finished_workloads`` gauge although the text
    exposition of both is distinct and valid -- Kueue exposes exactly this pair.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def collect(self) -> Iterable[Any]:
        return self._inner.collect()  # type: ignore[no-any-return]


class KueueMetrics:
    """All Kueue metric families in one private registry, plus helpers for the reconcilers."""

    def __init__(self, role: ReplicaRole = ReplicaRole.STANDALONE,
                 registry: CollectorRegistry | None = None, custom: CustomLabels | None = None) -> None:
        """``custom``: the Configuration's ``metrics.customLabels`` (None: none, or gate off)."""
        # Kueue (Go) exposes no ``*_created`` series; prometheus_client adds one per counter and
        # histogram child unless told otherwise before the metrics are created.
        prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=False)
        self.role = role
        self._metrics: dict[str, Any] = {}
        self.custom = custom
        self._families = {f.name: f for f in FAMILIES}
        self._sources: dict[str, tuple[str, ...]] = {}
        if custom is not None:
            for f in FAMILIES:
                kinds = tuple(k for k in family_sources(f) if k in custom.kinds())
                if kinds:
                    self._sources[f.name] = kinds
        # What the page shows, in order: (exposed name, type, help, metric); see _render.
        self._exposed: list[tuple[str, Kind, str, Any]] = []
        # Recomputes the state gauges right before each exposition (the queue manager's feed).
        self.before_scrape: Callable[[], None] | None = None
        gauge_names = {f.name for f in FAMILIES if f.kind is Kind.GAUGE}
        for family in FAMILIES:
            labels = (*family.labels, REPLICA_ROLE) if family.replica_role else family.labels
            if custom is not None and family.name in self._sources:
                labels = (*labels, *custom.names(self._sources[family.name]))
            doc = family.name.replace("_", " ")
            metric: Any
            if family.kind is Kind.COUNTER:
                base = family.name.removesuffix("_total")
                clashes = base in gauge_names
                metric = Counter(base, doc, labels, registry=None if clashes else self.registry)
                if clashes:
                    self.registry.register(_Unchecked(metric))
            elif family.kind is Kind.GAUGE:
                metric = Gauge(family.name, doc, labels, registry=self.registry)
            else:
                metric = Histogram(family.name, doc, labels, buckets=family.buckets, registry=self.registry)
            self._metrics[family.name] = metric
            self._exposed.append((family.name, family.kind, doc, metric))
        # controller-runtime's work queue timings, which Kueue's manager exposes beside its own.
        self._queue_wait = Histogram("workqueue_queue_duration_seconds",
                                     "How long in seconds an item stays in workqueue before being requested",
                                     ("name",), buckets=WORKQUEUE_BUCKETS, registry=self.registry)
        self._queue_work = Histogram("workqueue_work_duration_seconds",
                                     "How long in seconds processing an item from workqueue takes",
                                     ("name",), buckets=WORKQUEUE_BUCKETS, registry=self.registry)
        # pykueue's own: a preemption target whose reservation no write had carried yet is
        # taken back as if never admitted, so Kueue's eviction and preemption counters do
        # not see it; Kueue, which writes every reservation, counts such a victim as
        # preempted. This keeps the scheduler's full count of preemptions readable.
        self._withdrawn = Counter("pykueue_withdrawn_reservations",
                                  "Quota reservations taken back by a preemption before any "
                                  "write carried them", ("cluster_queue",), registry=self.registry)
        extra = ((Kind.HISTOGRAM, self._queue_wait), (Kind.HISTOGRAM, self._queue_work),
                 (Kind.COUNTER, self._withdrawn))
        self._exposed += [(m._name + ("_total" if kind is Kind.COUNTER else ""), kind, m._documentation, m)
                          for kind, m in extra]
        # The cohort (and full labels) of each ClusterQueue's weighted share series, to drop it on a move.
        self._share_cohort: dict[str, tuple[str, tuple[str, ...]]] = {}
        # The info series last set per ("cluster_queue" | "cohort", name): parent, root and role.
        self._info: dict[tuple[str, str], tuple[str, str, str]] = {}
        # Set once, as Kueue sets it when its metrics are made.
        self.build_info(*build_labels())

    # -- generic access --------------------------------------------------------------------
    def metric(self, name: str) -> Any:
        """The prometheus_client object of a family, by its exposed name."""
        return self._metrics[name]

    def _child(self, name: str, *labels: str, given: Mapping[str, Sequence[str]] | None = None) -> Any:
        """The series of ``labels``; ``given``: custom label values by source kind, where the
        labels do not name the object (a Workload's, the subtree's ClusterQueue's)."""
        return self._metrics[name].labels(*labels, self.role.value, *self._custom(name, labels, given))

    def _custom(self, name: str, labels: Sequence[str],
                given: Mapping[str, Sequence[str]] | None = None) -> tuple[str, ...]:
        kinds = self._sources.get(name)
        if not kinds or self.custom is None:
            return ()
        family = self._families[name]
        out: list[str] = []
        for kind in KIND_ORDER:
            if kind not in kinds:
                continue
            if given is not None and kind in given:
                out.extend(given[kind])
            else:
                out.extend(self.custom.values(kind, _source_key(family, kind, labels)))
        return tuple(out)

    def custom_source(self, kind: str, key: str, labels: Mapping[str, str] | None,
                      annotations: Mapping[str, str] | None, deleted: bool = False) -> None:
        """A ClusterQueue, LocalQueue (``namespace/name``) or Cohort was seen (or deleted): its
        custom label values. When they changed, its series go, as Kueue clears them; the
        gauges come back with the new values at the next scrape."""
        if self.custom is None or kind not in self.custom.kinds():
            return
        if deleted:
            self.custom.delete(kind, key)
            return
        if not self.custom.store(kind, key, labels, annotations):
            return
        if kind == CLUSTER_QUEUE:
            self.forget_cluster_queue(key)
        elif kind == LOCAL_QUEUE:
            ns, _, name = key.partition("/")
            self.forget_local_queue(ns, name)
        elif kind == COHORT:
            self.forget_cohort(key)

    def workload_values(self, labels: Mapping[str, str] | None,
                        annotations: Mapping[str, str] | None) -> tuple[str, ...]:
        """A Workload's custom label values (empty without Workload custom labels)."""
        if self.custom is None or WORKLOAD not in self.custom.kinds():
            return ()
        return self.custom.extract(WORKLOAD, labels, annotations)

    def exposition(self) -> bytes:
        """The text page (format 0.0.4) of every family, as :func:`render` writes it."""
        if self.before_scrape is not None:
            self.before_scrape()
        return render(self._exposed)

    def set_role(self, role: ReplicaRole) -> None:
        """Switch the ``replica_role`` label; gauges are cleared to be re-synced from the caches.

        Kueue does the same on election, so a new leader never exposes follower-era gauges.
        """
        if role is self.role:
            return
        self.role = role
        for family in FAMILIES:
            if family.kind is Kind.GAUGE and family.replica_role:
                self._metrics[family.name].clear()

    def forget_cluster_queue(self, cluster_queue: str) -> None:
        """Drop every series of a deleted ClusterQueue."""
        self._forget("cluster_queue", cluster_queue)
        self._forget("preempting_cluster_queue", cluster_queue)
        self._share_cohort.pop(cluster_queue, None)
        self._info.pop(("cluster_queue", cluster_queue), None)
        if (cluster_queue,) in _label_sets(self._withdrawn):
            self._withdrawn.remove(cluster_queue)

    def forget_local_queue(self, namespace: str, name: str) -> None:
        for family in FAMILIES:
            if family.labels[:2] == _LQ:
                metric = self._metrics[family.name]
                for values in _label_sets(metric):
                    if values[0] == name and values[1] == namespace:
                        metric.remove(*values)

    def forget_cohort(self, cohort: str) -> None:
        self._info.pop(("cohort", cohort), None)
        for family in FAMILIES:
            if family.name.startswith("kueue_cohort_"):
                self._forget_in(family, "cohort", cohort)

    def _forget(self, label: str, value: str) -> None:
        for family in FAMILIES:
            self._forget_in(family, label, value)

    def _forget_in(self, family: Family, label: str, value: str) -> None:
        if label not in family.labels:
            return
        index = family.labels.index(label)
        metric = self._metrics[family.name]
        for values in _label_sets(metric):
            if values[index] == value:
                metric.remove(*values)

    # -- work queues (kube.workqueue.QueueTiming) -------------------------------------------
    def waited(self, queue: str, seconds: float) -> None:
        self._queue_wait.labels(queue).observe(seconds)

    def worked(self, queue: str, seconds: float) -> None:
        self._queue_work.labels(queue).observe(seconds)

    # -- scheduler -------------------------------------------------------------------------
    def withdrawn(self, cluster_queue: str, count: int) -> None:
        self._withdrawn.labels(cluster_queue).inc(count)

    def admission_attempt(self, success: bool, duration_s: float) -> None:
        result = "success" if success else "inadmissible"
        self._child("kueue_admission_attempts_total", result).inc()
        self._child("kueue_admission_attempt_duration_seconds", result).observe(duration_s)

    def workload_creation_latency(self, job_kind: str, seconds: float, local_queue: str = "") -> None:
        """From a job's creation to its Workload's (both the API server's timestamps);
        ``local_queue`` (``namespace/name``) for the custom labels."""
        given = None if self.custom is None else {LOCAL_QUEUE: self.custom.values(LOCAL_QUEUE, local_queue)}
        self._child("kueue_workload_creation_latency_seconds", job_kind, given=given).observe(seconds)

    def pod_scheduling_gate_removal(self, gate: str, cluster_queue: str, is_group: bool,
                                    seconds: float) -> None:
        """A write lifted ``gate`` from one pod, ``seconds`` after its Workload was admitted."""
        self._child("kueue_pod_scheduling_gate_removal_seconds", gate, cluster_queue,
                    "true" if is_group else "false").observe(max(0.0, seconds))

    def admission_cycle_preemption_skips(self, cluster_queue: str, count: int) -> None:
        """Entries of one cycle that had preemption targets but were skipped (set, as Kueue
        does, only for a ClusterQueue that had such an entry in that cycle)."""
        self._child("kueue_admission_cycle_preemption_skips", cluster_queue).set(count)

    def multikueue_dispatched(self, cluster_queue: str, cluster: str) -> None:
        """A copy of a Workload created in worker ``cluster``."""
        self._child("multikueue_workloads_dispatched_total", cluster_queue, cluster).inc()

    def multikueue_admitted(self, cluster_queue: str, cluster: str) -> None:
        """A MultiKueue check turned Ready because worker ``cluster`` reserved the copy."""
        self._child("multikueue_workloads_admitted_total", cluster_queue, cluster).inc()

    def build_info(self, git_version: str, git_commit: str, build_date: str, go_version: str,
                   compiler: str, platform: str) -> None:
        self._metrics["kueue_build_info"].labels(git_version, git_commit, build_date, go_version, compiler,
                                                 platform).set(1)

    # -- ClusterQueue ----------------------------------------------------------------------
    def report_pending(self, cluster_queue: str, active: int, inadmissible: int) -> None:
        self._child("kueue_pending_workloads", cluster_queue, "active").set(active)
        self._child("kueue_pending_workloads", cluster_queue, "inadmissible").set(inadmissible)

    def quota_reserved(self, cluster_queue: str, priority_class: str, wait_s: float,
                       local_queue: tuple[str, str] | None = None) -> None:
        """A workload got quota; ``wait_s`` since creation or last requeue. ``local_queue`` = (ns, name)."""
        self._child("kueue_quota_reserved_workloads_total", cluster_queue, priority_class).inc()
        self._child("kueue_quota_reserved_wait_time_seconds", cluster_queue, priority_class).observe(wait_s)
        if local_queue is not None:
            ns, name = local_queue
            self._child("kueue_local_queue_quota_reserved_workloads_total", name, ns, priority_class).inc()
            self._child("kueue_local_queue_quota_reserved_wait_time_seconds", name, ns,
                        priority_class).observe(wait_s)

    def admitted_workload(self, cluster_queue: str, priority_class: str, wait_s: float,
                          checks_wait_s: float | None = None,
                          local_queue: tuple[str, str] | None = None) -> None:
        """Admitted; ``wait_s`` since creation/requeue, ``checks_wait_s`` since quota reservation."""
        self._child("kueue_admitted_workloads_total", cluster_queue, priority_class).inc()
        self._child("kueue_admission_wait_time_seconds", cluster_queue, priority_class).observe(wait_s)
        if checks_wait_s is not None:
            self._child("kueue_admission_checks_wait_time_seconds", cluster_queue,
                        priority_class).observe(checks_wait_s)
        if local_queue is not None:
            ns, name = local_queue
            self._child("kueue_local_queue_admitted_workloads_total", name, ns, priority_class).inc()
            self._child("kueue_local_queue_admission_wait_time_seconds", name, ns,
                        priority_class).observe(wait_s)
            if checks_wait_s is not None:
                self._child("kueue_local_queue_admission_checks_wait_time_seconds", name, ns,
                            priority_class).observe(checks_wait_s)

    def pods_ready(self, cluster_queue: str, priority_class: str, since_created_s: float,
                   since_admitted_s: float, local_queue: tuple[str, str] | None = None) -> None:
        """PodsReady became true (v0.12 ready-time histograms)."""
        self._child("kueue_ready_wait_time_seconds", cluster_queue, priority_class).observe(since_created_s)
        self._child("kueue_admitted_until_ready_wait_time_seconds", cluster_queue,
                    priority_class).observe(since_admitted_s)
        if local_queue is not None:
            ns, name = local_queue
            self._child("kueue_local_queue_ready_wait_time_seconds", name, ns,
                        priority_class).observe(since_created_s)
            self._child("kueue_local_queue_admitted_until_ready_wait_time_seconds", name, ns,
                        priority_class).observe(since_admitted_s)

    def finished_workload(self, cluster_queue: str, priority_class: str, execution_s: float,
                          local_queue: tuple[str, str] | None = None) -> None:
        self._child("kueue_finished_workloads_total", cluster_queue, priority_class).inc()
        self._child("kueue_execution_time_seconds", cluster_queue, priority_class).observe(execution_s)
        if local_queue is not None:
            ns, name = local_queue
            self._child("kueue_local_queue_finished_workloads_total", name, ns, priority_class).inc()
            self._child("kueue_local_queue_execution_time_seconds", name, ns,
                        priority_class).observe(execution_s)

    def report_finished(self, cluster_queue: str, count: int) -> None:
        self._child("kueue_finished_workloads", cluster_queue).set(count)

    def evicted(self, cluster_queue: str, reason: str, underlying_cause: str = "", priority_class: str = "",
                *, first_for_reason: bool = False, local_queue: tuple[str, str] | None = None) -> None:
        """Count an eviction; ``first_for_reason`` also counts it in the unique-evictions family."""
        labels = (cluster_queue, reason, underlying_cause, priority_class)
        self._child("kueue_evicted_workloads_total", *labels).inc()
        if first_for_reason:
            self._child("kueue_evicted_workloads_once_total", *labels).inc()
        if local_queue is not None:
            ns, name = local_queue
            self._child("kueue_local_queue_evicted_workloads_total", name, ns, reason, underlying_cause,
                        priority_class).inc()

    def evicted_once(self, cluster_queue: str, reason: str, underlying_cause: str,
                     priority_class: str) -> None:
        """A workload's first eviction for ``reason`` (v0.12 unique evictions)."""
        self._child("kueue_evicted_workloads_once_total", cluster_queue, reason, underlying_cause,
                    priority_class).inc()

    def pods_ready_to_evicted(self, cluster_queue: str, reason: str, underlying_cause: str,
                              seconds: float) -> None:
        self._child("kueue_pods_ready_to_evicted_time_seconds", cluster_queue, reason,
                    underlying_cause).observe(seconds)

    def eviction_latency(self, cluster_queue: str, reason: str, seconds: float) -> None:
        """From an eviction to the release of the quota it held (clamped at 0, as Kueue does)."""
        self._child("kueue_workload_eviction_latency_seconds", cluster_queue, reason).observe(
            max(0.0, seconds))

    def replaced_slices(self, cluster_queue: str, count: int) -> None:
        """Elastic job slices finished because a scaled-up slice took their place."""
        self._child("kueue_replaced_workload_slices_total", cluster_queue).inc(count)

    def preempted(self, preempting_cluster_queue: str, reason: str) -> None:
        """One victim, attributed to the preemptor's ClusterQueue."""
        self._child("kueue_preempted_workloads_total", preempting_cluster_queue, reason).inc()

    def report_active(self, cluster_queue: str, reserving: int, admitted: int,
                      admitted_by: Mapping[tuple[str, ...], int] | None = None) -> None:
        """``admitted_by``: with Workload custom labels, the admitted count per the workloads'
        values (Kueue keeps a series per combination)."""
        self._child("kueue_reserving_active_workloads", cluster_queue).set(reserving)
        if admitted_by is None or "kueue_admitted_active_workloads" not in self._sources or \
                WORKLOAD not in self._sources["kueue_admitted_active_workloads"]:
            self._child("kueue_admitted_active_workloads", cluster_queue).set(admitted)
            return
        metric = self._metrics["kueue_admitted_active_workloads"]
        keep = set()
        for values, count in admitted_by.items():
            child = self._child("kueue_admitted_active_workloads", cluster_queue, given={WORKLOAD: values})
            child.set(count)
            keep.add((cluster_queue, self.role.value,
                      *self._custom("kueue_admitted_active_workloads", (cluster_queue,), {WORKLOAD: values})))
        for labels in _label_sets(metric):
            if labels[0] == cluster_queue and labels not in keep:
                metric.remove(*labels)

    def cluster_queue_status(self, cluster_queue: str, status: str) -> None:
        """Set 1 on ``status`` (pending|active|terminating) and 0 on the others."""
        if status not in CLUSTER_QUEUE_STATUSES:
            raise ValueError(f"unknown ClusterQueue status {status!r}")
        for candidate in CLUSTER_QUEUE_STATUSES:
            self._child("kueue_cluster_queue_status", cluster_queue, candidate).set(
                1 if candidate == status else 0)

    def cluster_queue_info(self, cluster_queue: str, parent_cohort: str, root_cohort: str) -> None:
        # Set before each scrape for every queue: only a move drops the old series (a scan of
        # the family, which per queue would make a scrape quadratic in the queues).
        info = (parent_cohort, root_cohort, self.role.value)
        if self._info.get(("cluster_queue", cluster_queue)) != info:
            self._forget_in(_family("kueue_cluster_queue_info"), "cluster_queue", cluster_queue)
            self._info[("cluster_queue", cluster_queue)] = info
        self._child("kueue_cluster_queue_info", cluster_queue, parent_cohort, root_cohort).set(1)

    def cluster_queue_resources(self, cohort: str, cluster_queue: str, flavor: str, resource: str, *,
                                nominal: float, reservation: float, usage: float,
                                borrowing_limit: float | None = None,
                                lending_limit: float | None = None) -> None:
        """The optional per-flavor resource gauges; an unset limit is exposed as +Inf, like Kueue."""
        labels = (cohort, cluster_queue, flavor, resource)
        self._child("kueue_cluster_queue_nominal_quota", *labels).set(nominal)
        self._child("kueue_cluster_queue_resource_reservation", *labels).set(reservation)
        self._child("kueue_cluster_queue_resource_usage", *labels).set(usage)
        self._child("kueue_cluster_queue_borrowing_limit", *labels).set(
            math.inf if borrowing_limit is None else borrowing_limit)
        self._child("kueue_cluster_queue_lending_limit", *labels).set(
            math.inf if lending_limit is None else lending_limit)

    def weighted_share(self, cluster_queue: str, cohort: str, share: float) -> None:
        """The ClusterQueue's weighted share; +Inf (weight 0 and borrowing) is NaN, as in Kueue.
        A queue that moved to another cohort loses the series of the old one."""
        metric = self._metrics["kueue_cluster_queue_weighted_share"]
        before = self._share_cohort.get(cluster_queue)
        if before is not None and before[0] != cohort:
            with contextlib.suppress(KeyError):  # (a scan of the family per queue would be quadratic)
                metric.remove(*before[1])
        self._share_cohort[cluster_queue] = (cohort, (
            cluster_queue, cohort, self.role.value,
            *self._custom("kueue_cluster_queue_weighted_share", (cluster_queue, cohort))))
        self._child("kueue_cluster_queue_weighted_share", cluster_queue, cohort).set(
            math.nan if share == math.inf else share)

    def report_resource_pending(self, amounts: Mapping[tuple[str, str], float]) -> None:
        """``kueue_cluster_queue_resource_pending`` per (cluster_queue, resource), replacing
        every series (zeros included: Kueue shows a configured resource nothing asks for)."""
        self._sync("kueue_cluster_queue_resource_pending", amounts.items())

    def report_unadmitted(self, counts: Mapping[tuple[str, str, str], int]) -> None:
        """``kueue_unadmitted_workloads`` per (cluster_queue, reason, underlying_cause), replacing
        every series: one that no workload has any more is gone, as Kueue clears it."""
        self._replace("kueue_unadmitted_workloads", counts.items())

    def report_local_queue_unadmitted(self, counts: Mapping[tuple[str, str, str, str, str], int]) -> None:
        """Per (name, namespace, cluster_queue, reason, underlying_cause) of a LocalQueue."""
        self._replace("kueue_local_queue_unadmitted_workloads", counts.items())

    def _replace(self, name: str, counts: Iterable[tuple[tuple[str, ...], int]]) -> None:
        metric = self._metrics[name]
        metric.clear()
        for labels, count in sorted(counts):
            if count > 0:
                self._child(name, *labels).set(count)

    def _sync(self, name: str, values: Iterable[tuple[tuple[str, ...], float]]) -> None:
        """Set the family to exactly ``values``: series not among them are removed, the
        others set in place (no moment without them, unlike :meth:`_replace`)."""
        metric = self._metrics[name]
        role = self.role.value
        wanted = {(*labels, role, *self._custom(name, labels)): value for labels, value in values}
        for labels in _label_sets(metric):
            if labels not in wanted:
                metric.remove(*labels)
        for labels, value in wanted.items():
            metric.labels(*labels).set(value)

    # -- LocalQueue ------------------------------------------------------------------------
    def report_local_queue_pending(self, namespace: str, name: str, active: int, inadmissible: int) -> None:
        self._child("kueue_local_queue_pending_workloads", name, namespace, "active").set(active)
        self._child("kueue_local_queue_pending_workloads", name, namespace, "inadmissible").set(inadmissible)

    def local_queue_status(self, namespace: str, name: str, active: str) -> None:
        """Set 1 on ``active`` (True|False|Unknown) and 0 on the others."""
        if active not in LOCAL_QUEUE_ACTIVE_VALUES:
            raise ValueError(f"unknown LocalQueue active value {active!r}")
        for candidate in LOCAL_QUEUE_ACTIVE_VALUES:
            self._child("kueue_local_queue_status", name, namespace, candidate).set(
                1 if candidate == active else 0)

    def report_local_queue_active(self, namespace: str, name: str, reserving: int, admitted: int) -> None:
        self._child("kueue_local_queue_reserving_active_workloads", name, namespace).set(reserving)
        self._child("kueue_local_queue_admitted_active_workloads", name, namespace).set(admitted)

    def report_local_queue_finished(self, namespace: str, name: str, count: int) -> None:
        self._child("kueue_local_queue_finished_workloads", name, namespace).set(count)

    def local_queue_afs_usage(self, namespace: str, name: str, cluster_queue: str, usage: float) -> None:
        """The LocalQueue's admission fair sharing usage (+Inf for a weight of 0, as in Kueue)."""
        self._child("kueue_local_queue_admission_fair_sharing_usage", name, namespace,
                    cluster_queue).set(usage)

    def local_queue_resources(self, namespace: str, name: str, flavor: str, resource: str, *,
                              reservation: float, usage: float) -> None:
        labels = (name, namespace, flavor, resource)
        self._child("kueue_local_queue_resource_reservation", *labels).set(reservation)
        self._child("kueue_local_queue_resource_usage", *labels).set(usage)

    # -- Cohort ----------------------------------------------------------------------------
    def cohort_info(self, cohort: str, parent_cohort: str, root_cohort: str) -> None:
        info = (parent_cohort, root_cohort, self.role.value)
        if self._info.get(("cohort", cohort)) != info:
            self._forget_in(_family("kueue_cohort_info"), "cohort", cohort)
            self._info[("cohort", cohort)] = info
        self._child("kueue_cohort_info", cohort, parent_cohort, root_cohort).set(1)

    def cohort_weighted_share(self, cohort: str, share: float) -> None:
        self._child("kueue_cohort_weighted_share", cohort).set(share)

    def report_cohort_subtrees(self, quota: Mapping[tuple[str, str, str], float],
                               reservations: Mapping[tuple[str, str, str], float],
                               admitted: Mapping[str, int],
                               members: Mapping[str, Iterable[str]] | None = None) -> None:
        """Per (cohort, flavor, resource) the subtree's quota and reservations, a series only
        while above 0 as in Kueue; per cohort the admitted workloads of its subtree.
        ``members``: each cohort's ClusterQueues, whose custom label values the admitted
        count is reported with (one series per distinct combination, as Kueue)."""
        self._sync("kueue_cohort_subtree_quota", ((k, v) for k, v in quota.items() if v > 0))
        self._sync("kueue_cohort_subtree_resource_reservations",
                   ((k, v) for k, v in reservations.items() if v > 0))
        name = "kueue_cohort_subtree_admitted_active_workloads"
        if self.custom is None or name not in self._sources or members is None:
            self._sync(name, (((k,), v) for k, v in admitted.items()))
            return
        metric, role = self._metrics[name], self.role.value
        wanted: dict[tuple[str, ...], int] = {}
        for cohort, count in admitted.items():
            for cq in members.get(cohort, ()):
                wanted[(cohort, role, *self.custom.values(CLUSTER_QUEUE, cq))] = count
        for labels in _label_sets(metric):
            if labels not in wanted:
                metric.remove(*labels)
        for labels, count in wanted.items():
            metric.labels(*labels).set(count)

    def cohort_subtree_admitted(self, cohorts: Iterable[str], priority_class: str) -> None:
        """An admission, counted in each cohort from its ClusterQueue's parent to the root."""
        for cohort in cohorts:
            self._child("kueue_cohort_subtree_admitted_workloads_total", cohort, priority_class).inc()


def _number(value: float) -> str:
    """A sample value as Go's client writes it: ``3``, ``0.25``, ``+Inf``, ``NaN``."""
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    text: str = floatToGoString(value)  # type: ignore[no-untyped-call]
    return text


def _label_value(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    return value


def render(exposed: Iterable[tuple[str, Kind, str, Any]]) -> bytes:
    """The Prometheus text page of ``exposed`` (exposed name, type, help, labelled metric).

    prometheus_client's own ``generate_latest`` builds a sample object per line and escapes
    every label name of it; at 1,000 ClusterQueues and as many LocalQueues (about 150,000
    lines, mostly histogram buckets) that took 1.7 s. Here each series' label set is
    written once and its lines are plain string joins. Label names are sorted as both
    clients sort them, ``le`` last as Go's client puts it; values are written as Go writes
    them (``1``, not ``1.0``), the page Kueue serves.
    """
    out: list[str] = []
    for name, kind, doc, metric in exposed:
        help_text = doc.replace("\\", "\\\\").replace("\n", "\\n")
        out.append(f"# HELP {name} {help_text}\n# TYPE {name} {kind.value}\n")
        names: tuple[str, ...] = metric._labelnames
        order = sorted(range(len(names)), key=names.__getitem__)
        if kind is Kind.HISTOGRAM:
            base = name
            bounds = [f'le="{_number(b)}"' for b in metric._upper_bounds]
        for values, child in _children(metric):
            labels = ",".join([f'{names[i]}="{_label_value(values[i])}"' for i in order])
            if kind is not Kind.HISTOGRAM:
                out.append(f"{name}{{{labels}}} {_number(child._value.get())}\n")
                continue
            # Bucket counts are whole numbers (each observation adds 1); read without the
            # value's own lock, as a scrape may read a count one observation old anyway.
            acc = 0
            for le, bucket in zip(bounds, child._buckets, strict=True):
                acc += int(bucket._value)
                out.append(f"{base}_bucket{{{labels},{le}}} {acc}\n")
            out.append(f"{base}_sum{{{labels}}} {_number(child._sum.get())}\n"
                       f"{base}_count{{{labels}}} {acc}\n")
    return "".join(out).encode()


def _children(metric: Any) -> list[tuple[tuple[str, ...], Any]]:
    # As _label_sets: the child map is prometheus_client's only record of its series.
    with metric._lock:
        return list(metric._metrics.items())


def _family(name: str) -> Family:
    for family in FAMILIES:
        if family.name == name:
            return family
    raise KeyError(name)


def _label_sets(metric: Any) -> Sequence[tuple[str, ...]]:
    # prometheus_client has no public iterator over a metric's children; its child map is the
    # only source of the label tuples to remove.
    with metric._lock:
        return list(metric._metrics)
