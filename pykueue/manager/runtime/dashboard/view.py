"""What the dashboard shows, as JSON-able dicts built from the queueing core: pure.

Every function here reads a :class:`QueueingCore` (the in-memory state every replica keeps
from its informers) and returns plain dicts; nothing awaits, nothing touches the network,
and the same core gives the same output, so the pages are unit-tested without a server.

With thousands of workloads a page must not cost work per workload beyond one pass: each
change of the core gets a :class:`DashboardIndex` (workloads grouped by ClusterQueue, in one
pass), and a page of ``PAGE_SIZE`` rows sorts, numbers and renders only the queues and rows
it shows. :func:`fingerprint` is the cheap test of "did anything change" the server polls to
tell browsers to refetch.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pykueue.api.quantity import resource_quantity
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.objects import FR, format_time
from pykueue.manager.core.quota import QuotaNodeView, QuotaTree
from pykueue.manager.core.tas.assignment import TopologyAssignment
from pykueue.manager.core.tas.tree import Domain
from pykueue.manager.core.tas_hook import TasPlacer
from pykueue.manager.core.tiers import record_tier
from pykueue.manager.core.workload_state import ADMITTED, PENDING, QUOTA_RESERVED, WorkloadView

PAGE_SIZE = 100
PENDING_STATE = "pending"
ADMITTED_STATE = "admitted"  # holds quota: QuotaReserved or Admitted
STATES = (PENDING_STATE, ADMITTED_STATE)
_HOLDING = frozenset({QUOTA_RESERVED, ADMITTED})

Explainer = Callable[[QueueingCore, str], dict[str, Any]]


def _q(resource: str, value: int) -> str:
    return str(resource_quantity(resource, value))


def fingerprint(core: QueueingCore) -> tuple[int, ...]:
    """Changes whenever anything the dashboard shows may have changed.

    Workload transitions bump ``generation``; a re-read object or a new pending verdict
    replaces ``wl`` or ``pending``; queue objects are replaced on every update. Summing
    identities is not a hash of the content, only a change detector: one pass, no allocation.
    """
    generations = identities = 0
    workloads = core.all_workloads()
    for rec in workloads.values():
        generations += rec.generation
        identities += id(rec.wl) + id(rec.pending)
    queues = sum(map(id, core.cluster_queues().values())) + sum(map(id, core.local_queues().values())) \
        + sum(map(id, core.cohorts().values())) + sum(map(id, core.flavors().values()))
    tas = core.topology if isinstance(core.topology, TasPlacer) else None
    topology = (len(tas.nodes), len(tas.pods), len(tas.topologies)) if tas is not None else (0, 0, 0)
    return (len(workloads), generations, identities, queues, len(core.inactive_cluster_queues()), *topology)


def _queue_order(rec: WorkloadView) -> tuple[int, float, str]:
    # The visibility API's order: higher priority first, then earlier in the queue.
    return (-rec.priority, rec.queue_ts, rec.wl.key)


def _newest_first(rec: WorkloadView) -> tuple[float, int]:
    # An admission shows up at the top of the first page; ties keep the core's order (both
    # sorted and nsmallest are stable), which spares building 10,000 key strings.
    return (-(rec.reserved_at or 0.0), -rec.reserved_seq)


def _lq(rec: WorkloadView) -> tuple[str, str]:
    return (rec.wl.namespace, rec.wl.queue_name)


class DashboardIndex:
    """The core's workloads grouped by one pass; everything else is computed on demand.

    A page shows a hundred rows of thousands, so the grouping is the only work done for every
    revision: a ClusterQueue's pending workloads are sorted, and positions numbered, when a
    page shows one of them; the newest admissions are picked (not sorted) for the page asked.
    """

    def __init__(self, by_cq: dict[str, list[WorkloadView]], holders: list[WorkloadView],
                 finished: int, tree: list[tuple[int, QuotaNodeView]], follower: bool = False) -> None:
        # ClusterQueue -> its pending workloads ("" for those waiting in none: no queue,
        # deactivated), in queue order once ``queue`` sorted them.
        self._by_cq = by_cq
        self._cq_order = sorted(by_cq, key=lambda name: (name == "", name))
        self._sorted: set[str] = set()
        self.holders = holders  # workloads holding quota, in the core's order
        self.finished = finished
        self.tree = tree  # the cohort tree flattened depth first: (depth, node) rows
        # A follower's core queues workloads but never evaluates them: why one waits is what
        # the leader wrote into its QuotaReserved condition.
        self.follower = follower
        # The core's quota tree the rows were read from (rebuilt, not mutated, when queues or
        # cohorts change), so the next revision can keep the rows while it is the same.
        self.structure: QuotaTree | None = None
        self.pending_total = sum(len(q) for q in by_cq.values())
        self._positions: dict[str, tuple[int, int]] = {}
        self._admitted_by_cq: dict[str, list[WorkloadView]] | None = None
        self._newest: list[WorkloadView] = []

    def queue(self, cq: str) -> list[WorkloadView]:
        queue = self._by_cq.get(cq, [])
        if cq not in self._sorted:
            self._sorted.add(cq)
            queue.sort(key=_queue_order)
            in_lq: dict[tuple[str, str], int] = {}
            for place, rec in enumerate(queue, 1):
                lq = _lq(rec)
                in_lq[lq] = at = in_lq.get(lq, 0) + 1
                if cq:
                    self._positions[rec.wl.key] = (place, at)
        return queue

    def position(self, rec: WorkloadView) -> tuple[int, int] | None:
        """(position in its ClusterQueue, in its LocalQueue), 1-based, of a pending workload;
        None when it waits in no ClusterQueue."""
        if rec.cluster_queue and not rec.deactivated:
            self.queue(rec.cluster_queue)
        return self._positions.get(rec.wl.key)

    def pending_count(self, cq: str) -> int:
        return len(self._by_cq.get(cq, ()))

    def _holding(self) -> dict[str, list[WorkloadView]]:
        if self._admitted_by_cq is None:
            self._admitted_by_cq = {}
            for rec in self.holders:
                self._admitted_by_cq.setdefault(rec.cluster_queue or "", []).append(rec)
        return self._admitted_by_cq

    def admitted_count(self, cq: str) -> int:
        return len(self._holding().get(cq, ()))

    def local_queue_counts(self, namespace: str, name: str, cluster_queue: str) -> tuple[int, int]:
        """(pending, admitted) through a LocalQueue; its ClusterQueue is fixed (the field is
        immutable), so only that queue's workloads and the unqueued ones are looked at."""
        lq = (namespace, name)
        pending = sum(1 for r in self._by_cq.get(cluster_queue, ()) if _lq(r) == lq)
        pending += sum(1 for r in self._by_cq.get("", ()) if _lq(r) == lq)
        admitted = sum(1 for r in self._holding().get(cluster_queue, ()) if _lq(r) == lq)
        return pending, admitted

    def pending(self, start: int, end: int) -> list[WorkloadView]:
        """Pending workloads ``start:end`` in ClusterQueue order, then queue order."""
        out: list[WorkloadView] = []
        offset = 0
        for cq in self._cq_order:
            size = len(self._by_cq[cq])
            if offset + size > start and offset < end:
                out.extend(self.queue(cq)[max(0, start - offset):end - offset])
            offset += size
            if offset >= end:
                break
        return out

    def pending_where(self, namespace: str | None, cluster_queue: str | None) -> list[WorkloadView]:
        cqs = [cluster_queue] if cluster_queue is not None else self._cq_order
        return [r for cq in cqs for r in self.queue(cq) if namespace is None or r.wl.namespace == namespace]

    def admitted(self, start: int, end: int) -> list[WorkloadView]:
        """Workloads holding quota ``start:end``, newest reservation first."""
        if len(self._newest) < end:
            self._newest = heapq.nsmallest(end, self.holders, key=_newest_first) \
                if end < len(self.holders) // 4 else sorted(self.holders, key=_newest_first)
        return self._newest[start:end]

    def admitted_where(self, namespace: str | None, cluster_queue: str | None) -> list[WorkloadView]:
        pool = self._holding().get(cluster_queue, []) if cluster_queue is not None else self.holders
        return sorted((r for r in pool if namespace is None or r.wl.namespace == namespace),
                      key=_newest_first)


def build_index(core: QueueingCore, previous: DashboardIndex | None = None,
                follower: bool = False) -> DashboardIndex:
    """The one pass over every workload a revision costs (see :class:`DashboardIndex`); the
    flattened cohort tree of ``previous`` is kept while the core's tree is the same one."""
    by_cq: dict[str, list[WorkloadView]] = {}
    holders: list[WorkloadView] = []
    finished = 0
    for rec in core.all_workloads().values():
        status = rec.status
        if status == PENDING:
            cq = rec.cluster_queue if rec.cluster_queue and not rec.deactivated else ""
            queue = by_cq.get(cq)
            if queue is None:
                by_cq[cq] = [rec]
            else:
                queue.append(rec)
        elif status in _HOLDING:
            holders.append(rec)
        else:
            finished += 1
    core.usage_of("")  # brings the quota tree up to date (it is rebuilt lazily)
    # Compared by identity and held (not by id(), which a new tree could reuse).
    structure = core.quota_tree()
    same = previous is not None and previous.structure is structure
    tree = previous.tree if previous is not None and same else _flatten_tree(structure)
    index = DashboardIndex(by_cq, holders, finished, tree, follower)
    index.structure = structure
    return index


def _flatten_tree(structure: QuotaTree) -> list[tuple[int, QuotaNodeView]]:
    roots = [n for n in structure.cohorts.values() if n.parent is None]
    roots += [n for n in structure.cluster_queues.values() if n.parent is None]
    out: list[tuple[int, QuotaNodeView]] = []
    stack = [(0, n) for n in sorted(roots, key=_tree_order, reverse=True)]
    while stack:
        depth, node = stack.pop()
        out.append((depth, node))
        stack.extend((depth + 1, c) for c in sorted(node.children, key=_tree_order, reverse=True))
    return out


def _tree_order(node: QuotaNodeView) -> tuple[bool, str]:
    return (node.is_cq, node.name)  # cohorts before queues, then by name


# -- pages ----------------------------------------------------------------------------------


def page_bounds(page: int, total: int, size: int = PAGE_SIZE) -> tuple[int, int, int]:
    """(page clamped to the existing ones, start, end) of a 0-based page."""
    pages = max(1, -(-total // size))
    page = min(max(0, page), pages - 1)
    return page, page * size, min(total, (page + 1) * size)


def _paged(items: list[dict[str, Any]] | None, page: int, total: int, size: int) -> dict[str, Any]:
    pages = max(1, -(-total // size))
    return {"page": page, "pages": pages, "pageSize": size, "total": total, "items": items or []}


def overview(core: QueueingCore, index: DashboardIndex) -> dict[str, Any]:
    """The counts at the top of every page."""
    return {
        "clusterQueues": len(core.cluster_queues()),
        "cohorts": len(core.quota_tree().cohorts),
        "localQueues": len(core.local_queues()),
        "pending": index.pending_total,
        "admitted": len(index.holders),
        "finished": index.finished,
        "workloads": len(core.all_workloads()),
        "inactiveClusterQueues": len(core.inactive_cluster_queues()),
    }


def _quota_rows(core: QueueingCore, node: QuotaNodeView) -> list[dict[str, Any]]:
    """Per flavor and resource: nominal quota, limits, usage and what is borrowed."""
    usage = core.usage_at(node)
    if node.is_cq:
        cq = core.cluster_queues()[node.name]
        frs: Iterable[FR] = [(f, r) for g in cq.groups for f in g.flavors for r in g.covered]
    else:
        frs = sorted(set(node.quotas) | set(node.subtree) | set(usage))
    rows = []
    for flavor, res in frs:
        quota = node.quota((flavor, res))
        used = usage.get((flavor, res), 0)
        subtree = node.subtree.get((flavor, res), 0)
        row: dict[str, Any] = {
            "flavor": flavor, "resource": res,
            "nominal": _q(res, quota.nominal), "used": _q(res, used),
            # Borrowed: used beyond what the node's subtree provides (its own nominal for a queue).
            "borrowed": _q(res, max(0, used - subtree)),
            "usedPercent": round(100 * used / subtree) if subtree else (100 if used else 0),
        }
        if not node.is_cq:
            row["subtree"] = _q(res, subtree)
        if quota.borrowing_limit is not None:
            row["borrowingLimit"] = _q(res, quota.borrowing_limit)
        if quota.lending_limit is not None:
            row["lendingLimit"] = _q(res, quota.lending_limit)
        rows.append(row)
    return rows


def _tree_row(core: QueueingCore, index: DashboardIndex, depth: int, node: QuotaNodeView) -> dict[str, Any]:
    row: dict[str, Any] = {
        "kind": "ClusterQueue" if node.is_cq else "Cohort", "name": node.name, "depth": depth,
        "parent": node.parent.name if node.parent is not None else "",
        "resources": _quota_rows(core, node),
    }
    if node.is_cq:
        inactive = core.inactive_cluster_queues().get(node.name)
        row.update(pending=index.pending_count(node.name),
                   admitted=index.admitted_count(node.name),
                   active=inactive is None, inactiveReason=inactive.detail if inactive else "")
    else:
        row["clusterQueues"] = len(node.cluster_queues())
    return row


def cohort_tree_page(core: QueueingCore, index: DashboardIndex, page: int = 0,
                     size: int = PAGE_SIZE) -> dict[str, Any]:
    """The cohort tree, depth first, as rows with their depth, one page of it."""
    page, start, end = page_bounds(page, len(index.tree), size)
    rows = [_tree_row(core, index, depth, node) for depth, node in index.tree[start:end]]
    return _paged(rows, page, len(index.tree), size)


def local_queues_page(core: QueueingCore, index: DashboardIndex, page: int = 0,
                      namespace: str | None = None, size: int = PAGE_SIZE) -> dict[str, Any]:
    local_queues = core.local_queues()
    keys = sorted(k for k, lq in local_queues.items() if namespace is None or lq.namespace == namespace)
    page, start, end = page_bounds(page, len(keys), size)
    rows = []
    for key in keys[start:end]:
        lq = local_queues[key]
        pending, admitted = index.local_queue_counts(lq.namespace, lq.name, lq.cluster_queue)
        rows.append({"namespace": lq.namespace, "name": lq.name, "clusterQueue": lq.cluster_queue,
                     "stopPolicy": lq.stop_policy, "pending": pending, "admitted": admitted})
    return _paged(rows, page, len(keys), size)


def _flavors(rec: WorkloadView) -> dict[str, dict[str, str]]:
    if rec.assignment is None or not rec.holds_quota:
        return {}
    return {psa.name: dict(sorted(psa.flavors.items())) for psa in rec.assignment.podsets}


def _stored_reason(rec: WorkloadView) -> tuple[str, str]:
    """The tier and message of the stored ``QuotaReserved=False`` condition, else the core's."""
    for condition in (rec.wl.source.get("status") or {}).get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "QuotaReserved" \
                and condition.get("status") == "False" and condition.get("reason"):
            return str(condition["reason"]), str(condition.get("message") or "")
    return record_tier(rec).value, rec.reason


def workload_row(rec: WorkloadView, index: DashboardIndex) -> dict[str, Any]:
    pending = rec.status == PENDING
    place = index.position(rec) if pending else None
    row: dict[str, Any] = {
        "key": rec.key, "namespace": rec.wl.namespace, "name": rec.wl.name,
        "clusterQueue": rec.cluster_queue or "", "localQueue": rec.wl.queue_name,
        "priority": rec.priority, "status": rec.status, "owner": rec.wl.owner or "",
        "created": format_time(rec.wl.created),
    }
    if pending:
        tier, message = _stored_reason(rec) if index.follower else (record_tier(rec).value, rec.reason)
        row.update(positionInClusterQueue=place[0] if place else None,
                   positionInLocalQueue=place[1] if place else None, tier=tier, message=message)
    else:
        row["flavors"] = _flavors(rec)
    return row


def workloads_page(index: DashboardIndex, state: str, page: int = 0, *, namespace: str | None = None,
                   cluster_queue: str | None = None, size: int = PAGE_SIZE) -> dict[str, Any]:
    """Pending (in queue order) or admitted (newest first) workloads, one page, optionally
    of one namespace and/or ClusterQueue."""
    if state not in STATES:
        raise ValueError(f"state must be one of {', '.join(STATES)}, not {state!r}")
    pending = state == PENDING_STATE
    if namespace is None and cluster_queue is None:
        total = index.pending_total if pending else len(index.holders)
        page, start, end = page_bounds(page, total, size)
        records = index.pending(start, end) if pending else index.admitted(start, end)
    else:
        matching = index.pending_where(namespace, cluster_queue) if pending \
            else index.admitted_where(namespace, cluster_queue)
        total = len(matching)
        page, start, end = page_bounds(page, total, size)
        records = matching[start:end]
    return _paged([workload_row(r, index) for r in records], page, total, size)


# -- one workload ---------------------------------------------------------------------------


def _topology_view(core: QueueingCore, raw: Mapping[str, Any] | None,
                   flavors: Iterable[str]) -> dict[str, Any] | None:
    if not raw:
        return None
    tas = core.topology
    if isinstance(tas, TasPlacer):
        return tas.simple_view(raw, flavors, core.flavors())
    return TopologyAssignment.from_any(raw).to_simple()


def _admission(core: QueueingCore, rec: WorkloadView) -> dict[str, Any] | None:
    if not rec.holds_quota or rec.assignment is None:
        return None
    podsets = []
    for psa in rec.assignment.podsets:
        podsets.append({
            "name": psa.name, "count": psa.count, "flavors": dict(sorted(psa.flavors.items())),
            "usage": {r: _q(r, v) for r, v in sorted(psa.usage.items())},
            "topologyAssignment": _topology_view(core, psa.topology_assignment, psa.flavors.values()),
        })
    return {"clusterQueue": rec.cluster_queue or "", "podSets": podsets,
            "reservedAt": format_time(rec.reserved_at) if rec.reserved_at is not None else None,
            "admittedAt": format_time(rec.admitted_at) if rec.admitted_at is not None else None}


def workload_detail(core: QueueingCore, index: DashboardIndex, key: str,
                    explainer: Explainer | None = None) -> dict[str, Any] | None:
    """Conditions as stored, the admission with flavors and topology, and for a pending
    workload its tier, message and (with ``explainer``) the explanation; None when unknown."""
    rec = core.workload(key)
    if rec is None:
        return None
    status = rec.wl.source.get("status") or {}
    detail = workload_row(rec, index)
    detail.update(
        conditions=[dict(c) for c in status.get("conditions") or () if isinstance(c, dict)],
        podSets=[{"name": ps.name, "count": ps.count,
                  "requests": {r: _q(r, v) for r, v in sorted(ps.requests.items())}}
                 for ps in rec.wl.podsets],
        admission=_admission(core, rec),
        evictions=list(rec.evictions),
        admissionChecks=dict(sorted(rec.checks.items())),
    )
    if rec.status == PENDING and explainer is not None:
        try:
            detail["explanation"] = explainer(core, key)
        except Exception as exc:  # the typed reason above still says why it waits
            detail["explanationError"] = f"{type(exc).__name__}: {exc}"
    return detail


# -- topology -------------------------------------------------------------------------------


def _resources(values: Mapping[str, int]) -> dict[str, str]:
    return {r: _q(r, v) for r, v in sorted(values.items()) if v}


def _placed_by_leaf(core: QueueingCore, flavor: str, leaf_of: Callable[[Sequence[str]], Domain | None]
                    ) -> dict[str, dict[str, int]]:
    """Leaf id -> workload key -> pods placed there on this flavor."""
    out: dict[str, dict[str, int]] = {}
    for rec in core.all_workloads().values():
        if not rec.holds_quota or rec.assignment is None:
            continue
        for psa in rec.assignment.podsets:
            if not psa.topology_assignment or flavor not in psa.flavors.values():
                continue
            for dom in TopologyAssignment.from_any(psa.topology_assignment).domains:
                leaf = leaf_of(dom.values)
                if leaf is not None:
                    placed = out.setdefault(leaf.id, {})
                    placed[rec.key] = placed.get(rec.key, 0) + dom.count
    return out


def _domain(dom: Domain, level_keys: Sequence[str], placed: Mapping[str, Mapping[str, int]]
            ) -> tuple[dict[str, Any], dict[str, int], dict[str, int], dict[str, int]]:
    """A domain with its children; returns it with its allocatable, free and placed totals."""
    if not dom.children:
        allocatable, free = dict(dom.allocatable), dict(dom.free)
        workloads = dict(placed.get(dom.id, {}))
        children: list[dict[str, Any]] = []
    else:
        allocatable, free, workloads, children = {}, {}, {}, []
        for child in dom.children:
            view, a, f, w = _domain(child, level_keys, placed)
            children.append(view)
            for total, part in ((allocatable, a), (free, f), (workloads, w)):
                for k, v in part.items():
                    total[k] = total.get(k, 0) + v
    used = {r: allocatable.get(r, 0) - free.get(r, 0) for r in allocatable}
    view = {"id": dom.id, "level": level_keys[dom.level], "value": dom.values[-1],
            "allocatable": _resources(allocatable), "used": _resources(used),
            "usedPercent": _busiest(allocatable, used),
            "workloads": [{"workload": k, "pods": n} for k, n in sorted(workloads.items())],
            "children": children}
    return view, allocatable, free, workloads


def _busiest(allocatable: Mapping[str, int], used: Mapping[str, int]) -> int:
    shares = [100 * used.get(r, 0) / a for r, a in allocatable.items() if a > 0 and r != "pods"]
    return round(max(shares, default=0))


def topology_view(core: QueueingCore) -> dict[str, Any]:
    """Per topology-aware flavor: its levels and domains (e.g. blocks, racks, nodes) with
    capacity, usage and the workloads placed there."""
    tas = core.topology
    flavors: list[dict[str, Any]] = []
    if isinstance(tas, TasPlacer):
        known = core.flavors()
        for name in sorted(known):
            flavor = known[name]
            if not flavor.topology_name:
                continue
            snap = tas.snapshot_for(flavor)
            entry: dict[str, Any] = {"flavor": name, "topology": flavor.topology_name}
            if isinstance(snap, str):
                entry.update(levels=[], domains=[], error=snap)
            else:
                tree = snap.tree
                placed = _placed_by_leaf(core, name, tree.leaf_for_values)
                entry.update(levels=list(tree.level_keys), nodes=len(tree.leaves),
                             domains=[_domain(root, tree.level_keys, placed)[0] for root in tree.roots])
            flavors.append(entry)
    return {"flavors": flavors}


def change_summary(core: QueueingCore, index: DashboardIndex, revision: int) -> dict[str, Any]:
    """What a live update carries: a revision to compare and the counts; the page refetches."""
    return {"revision": revision, "totals": overview(core, index)}
