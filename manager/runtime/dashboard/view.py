"""What the dashboard shows, as JSON-able dicts built from the queueing core: pure.

Every function here reads a :class:`QueueingCore` (the in-memory state every replica keeps
from its informers) and returns plain dicts; nothing awaits, nothing touches the network,
and the same core gives the same output, so the pages are unit-tested without a server.

With thousands of workloads the expensive part is grouping and ordering them, so that is
done once per change of the core into a :class:`DashboardIndex`; the pages are slices of
it (``PAGE_SIZE`` rows), and a pending workload's message is rendered only when its row is
on the page asked for. :func:`fingerprint` is the cheap test of "did anything change" the
server polls to tell browsers to refetch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from api.quantity import resource_quantity
from manager.core.engine import QueueingCore
from manager.core.objects import FR, format_time
from manager.core.quota import QuotaNode
from manager.core.tas.assignment import TopologyAssignment
from manager.core.tas.tree import Domain
from manager.core.tas_hook import TasPlacer
from manager.core.tiers import record_tier
from manager.core.workload_state import ADMITTED, PENDING, QUOTA_RESERVED, WorkloadRecord

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
    for rec in core.workloads.values():
        generations += rec.generation
        identities += id(rec.wl) + id(rec.pending)
    queues = sum(map(id, core.cq_defs.values())) + sum(map(id, core.local_queues.values())) \
        + sum(map(id, core.cohort_defs.values())) + sum(map(id, core.flavors.values()))
    tas = core.tas if isinstance(core.tas, TasPlacer) else None
    topology = (len(tas.nodes), len(tas.pods), len(tas.topologies)) if tas is not None else (0, 0, 0)
    return (len(core.workloads), generations, identities, queues, len(core.inactive), *topology)


@dataclass
class DashboardIndex:
    """The core's workloads grouped and ordered once; pages are slices of these lists."""

    pending: list[WorkloadRecord] = field(default_factory=list)  # by ClusterQueue, then position
    admitted: list[WorkloadRecord] = field(default_factory=list)  # newest reservation first
    # ClusterQueue -> its pending workloads in queue order.
    queues: dict[str, list[WorkloadRecord]] = field(default_factory=dict)
    # key -> (position in ClusterQueue, position in LocalQueue), 1-based; filled per
    # ClusterQueue when one of its workloads is shown (see ``position``).
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)
    _numbered: set[str] = field(default_factory=set)
    pending_by_cq: dict[str, int] = field(default_factory=dict)
    admitted_by_cq: dict[str, int] = field(default_factory=dict)
    # (namespace, LocalQueue name) -> count
    pending_by_lq: dict[tuple[str, str], int] = field(default_factory=dict)
    admitted_by_lq: dict[tuple[str, str], int] = field(default_factory=dict)
    finished: int = 0
    # The cohort tree flattened depth first: (depth, node) rows.
    tree: list[tuple[int, QuotaNode]] = field(default_factory=list)

    def position(self, rec: WorkloadRecord) -> tuple[int, int] | None:
        """(position in its ClusterQueue, in its LocalQueue) of a pending workload; None when
        it waits in no ClusterQueue. A page shows a hundred of thousands: numbered lazily."""
        cq = rec.cluster_queue or ""
        if cq not in self._numbered and cq in self.queues:
            self._numbered.add(cq)
            in_lq: dict[tuple[str, str], int] = {}
            for place, queued in enumerate(self.queues[cq], 1):
                wl = queued.wl
                lq = (wl.namespace, wl.queue_name)
                in_lq[lq] = at = in_lq.get(lq, 0) + 1
                self.positions[wl.key] = (place, at)
        return self.positions.get(rec.key)


def build_index(core: QueueingCore) -> DashboardIndex:
    """One pass to group, one sort per ClusterQueue and one of the admitted. The record's key
    is the dict's key, and the sorts go over tuples of numbers (ties broken by the core's
    order, which is deterministic): with 15,000 workloads, key functions or string
    comparisons would be most of the time."""
    index = DashboardIndex()
    # ClusterQueue -> [(-priority, queue time, key, record)]: the visibility API's order.
    by_cq: dict[str, list[tuple[int, float, str, WorkloadRecord]]] = {}
    admitted: list[tuple[float, int, int]] = []
    holders: list[WorkloadRecord] = []
    admitted_by_cq, admitted_by_lq = index.admitted_by_cq, index.admitted_by_lq
    finished = 0
    for key, rec in core.workloads.items():
        status = rec.status
        if status == PENDING:
            # Waiting outside any ClusterQueue (no queue, deactivated): listed last, unnumbered.
            cq = rec.cluster_queue if rec.cluster_queue and not rec.deactivated else ""
            entry = (-rec.priority, rec.queue_ts, key, rec)
            queue = by_cq.get(cq)
            if queue is None:
                by_cq[cq] = [entry]
            else:
                queue.append(entry)
        elif status in _HOLDING:
            # Newest reservation first: an admission shows up at the top of the first page.
            admitted.append((-(rec.reserved_at or 0.0), -rec.reserved_seq, len(holders)))
            holders.append(rec)
            cq = rec.cluster_queue or ""
            admitted_by_cq[cq] = admitted_by_cq.get(cq, 0) + 1
            wl = rec.wl
            lq = (wl.namespace, wl.queue_name)
            admitted_by_lq[lq] = admitted_by_lq.get(lq, 0) + 1
        else:
            finished += 1
    index.finished = finished
    pending, pending_by_lq = index.pending, index.pending_by_lq
    for cq in sorted(by_cq, key=lambda name: (name == "", name)):
        queue = by_cq[cq]
        queue.sort()  # keys are unique, so records are never compared
        ordered = [entry[3] for entry in queue]
        if cq:
            index.pending_by_cq[cq] = len(queue)
            index.queues[cq] = ordered
        pending.extend(ordered)
        for rec in ordered:
            wl = rec.wl
            lq = (wl.namespace, wl.queue_name)
            pending_by_lq[lq] = pending_by_lq.get(lq, 0) + 1
    admitted.sort()
    index.admitted = [holders[i] for _, _, i in admitted]
    index.tree = _flatten_tree(core)
    return index


def _flatten_tree(core: QueueingCore) -> list[tuple[int, QuotaNode]]:
    core.usage_of("")  # brings the quota tree up to date (it is rebuilt lazily)
    roots = [n for n in core.cohort_nodes.values() if n.parent is None]
    roots += [n for n in core.nodes.values() if n.parent is None]
    out: list[tuple[int, QuotaNode]] = []
    stack = [(0, n) for n in sorted(roots, key=_tree_order, reverse=True)]
    while stack:
        depth, node = stack.pop()
        out.append((depth, node))
        stack.extend((depth + 1, c) for c in sorted(node.children, key=_tree_order, reverse=True))
    return out


def _tree_order(node: QuotaNode) -> tuple[bool, str]:
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
        "clusterQueues": len(core.cq_defs),
        "cohorts": len(core.cohort_nodes),
        "localQueues": len(core.local_queues),
        "pending": len(index.pending),
        "admitted": len(index.admitted),
        "finished": index.finished,
        "workloads": len(core.workloads),
        "inactiveClusterQueues": len(core.inactive),
    }


def _quota_rows(core: QueueingCore, node: QuotaNode) -> list[dict[str, Any]]:
    """Per flavor and resource: nominal quota, limits, usage and what is borrowed."""
    usage = core.usage.of(node)
    if node.is_cq:
        cq = core.cq_defs[node.name]
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


def _tree_row(core: QueueingCore, index: DashboardIndex, depth: int, node: QuotaNode) -> dict[str, Any]:
    row: dict[str, Any] = {
        "kind": "ClusterQueue" if node.is_cq else "Cohort", "name": node.name, "depth": depth,
        "parent": node.parent.name if node.parent is not None else "",
        "resources": _quota_rows(core, node),
    }
    if node.is_cq:
        inactive = core.inactive.get(node.name)
        row.update(pending=index.pending_by_cq.get(node.name, 0),
                   admitted=index.admitted_by_cq.get(node.name, 0),
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
    keys = sorted(k for k, lq in core.local_queues.items() if namespace is None or lq.namespace == namespace)
    page, start, end = page_bounds(page, len(keys), size)
    rows = []
    for key in keys[start:end]:
        lq = core.local_queues[key]
        counted = (lq.namespace, lq.name)
        rows.append({"namespace": lq.namespace, "name": lq.name, "clusterQueue": lq.cluster_queue,
                     "stopPolicy": lq.stop_policy, "pending": index.pending_by_lq.get(counted, 0),
                     "admitted": index.admitted_by_lq.get(counted, 0)})
    return _paged(rows, page, len(keys), size)


def _flavors(rec: WorkloadRecord) -> dict[str, dict[str, str]]:
    if rec.assignment is None or not rec.holds_quota:
        return {}
    return {psa.name: dict(sorted(psa.flavors.items())) for psa in rec.assignment.podsets}


def workload_row(rec: WorkloadRecord, index: DashboardIndex) -> dict[str, Any]:
    pending = rec.status == PENDING
    place = index.position(rec) if pending else None
    row: dict[str, Any] = {
        "key": rec.key, "namespace": rec.wl.namespace, "name": rec.wl.name,
        "clusterQueue": rec.cluster_queue or "", "localQueue": rec.wl.queue_name,
        "priority": rec.priority, "status": rec.status, "owner": rec.wl.owner or "",
        "created": format_time(rec.wl.created),
    }
    if pending:
        row.update(positionInClusterQueue=place[0] if place else None,
                   positionInLocalQueue=place[1] if place else None,
                   tier=record_tier(rec).value, message=rec.reason)
    else:
        row["flavors"] = _flavors(rec)
    return row


def workloads_page(index: DashboardIndex, state: str, page: int = 0, *, namespace: str | None = None,
                   cluster_queue: str | None = None, size: int = PAGE_SIZE) -> dict[str, Any]:
    """Pending (in queue order) or admitted (newest first) workloads, one page, optionally
    of one namespace and/or ClusterQueue."""
    if state not in STATES:
        raise ValueError(f"state must be one of {', '.join(STATES)}, not {state!r}")
    records: Sequence[WorkloadRecord] = index.pending if state == PENDING_STATE else index.admitted
    if namespace is not None or cluster_queue is not None:
        records = [r for r in records if (namespace is None or r.wl.namespace == namespace)
                   and (cluster_queue is None or r.cluster_queue == cluster_queue)]
    page, start, end = page_bounds(page, len(records), size)
    return _paged([workload_row(r, index) for r in records[start:end]], page, len(records), size)


# -- one workload ---------------------------------------------------------------------------


def _topology_view(core: QueueingCore, raw: Mapping[str, Any] | None,
                   flavors: Iterable[str]) -> dict[str, Any] | None:
    if not raw:
        return None
    tas = core.tas
    if isinstance(tas, TasPlacer):
        return tas.simple_view(raw, flavors, core.flavors)
    return TopologyAssignment.from_any(raw).to_simple()


def _admission(core: QueueingCore, rec: WorkloadRecord) -> dict[str, Any] | None:
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
    rec = core.workloads.get(key)
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
    for rec in core.workloads.values():
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
    tas = core.tas
    flavors: list[dict[str, Any]] = []
    if isinstance(tas, TasPlacer):
        for name in sorted(core.flavors):
            flavor = core.flavors[name]
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
