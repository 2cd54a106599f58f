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
from manager.core.workload_state import PENDING, WorkloadRecord

PAGE_SIZE = 100
PENDING_STATE = "pending"
ADMITTED_STATE = "admitted"  # holds quota: QuotaReserved or Admitted
STATES = (PENDING_STATE, ADMITTED_STATE)

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


def _queue_order(rec: WorkloadRecord) -> tuple[float, float, str]:
    # The visibility API's order (higher priority first, then earlier in the queue).
    return (-rec.priority, rec.queue_ts, rec.key)


@dataclass
class DashboardIndex:
    """The core's workloads grouped and ordered once; pages are slices of these lists."""

    pending: list[WorkloadRecord] = field(default_factory=list)  # by ClusterQueue, then position
    admitted: list[WorkloadRecord] = field(default_factory=list)  # newest reservation first
    # key -> (position in ClusterQueue, position in LocalQueue), 1-based, pending only.
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)
    pending_by_cq: dict[str, int] = field(default_factory=dict)
    admitted_by_cq: dict[str, int] = field(default_factory=dict)
    pending_by_lq: dict[str, int] = field(default_factory=dict)
    admitted_by_lq: dict[str, int] = field(default_factory=dict)
    finished: int = 0
    # The cohort tree flattened depth first: (depth, node) rows.
    tree: list[tuple[int, QuotaNode]] = field(default_factory=list)


def build_index(core: QueueingCore) -> DashboardIndex:
    index = DashboardIndex()
    by_cq: dict[str, list[WorkloadRecord]] = {}
    for rec in core.workloads.values():
        if rec.status == PENDING:
            if not rec.deactivated and rec.cluster_queue:
                by_cq.setdefault(rec.cluster_queue, []).append(rec)
            else:  # waits outside any ClusterQueue (no queue, deactivated): listed last
                by_cq.setdefault("", []).append(rec)
        elif rec.holds_quota:
            index.admitted.append(rec)
            cq = rec.cluster_queue or ""
            index.admitted_by_cq[cq] = index.admitted_by_cq.get(cq, 0) + 1
            lq = f"{rec.wl.namespace}/{rec.wl.queue_name}"
            index.admitted_by_lq[lq] = index.admitted_by_lq.get(lq, 0) + 1
        else:
            index.finished += 1
    for cq in sorted(by_cq, key=lambda name: (name == "", name)):
        queue = by_cq[cq]
        queue.sort(key=_queue_order)
        if cq:
            index.pending_by_cq[cq] = len(queue)
        in_lq: dict[str, int] = {}
        for place, rec in enumerate(queue, 1):
            lq = f"{rec.wl.namespace}/{rec.wl.queue_name}"
            in_lq[lq] = in_lq.get(lq, 0) + 1
            if cq:
                index.positions[rec.key] = (place, in_lq[lq])
        for lq, count in in_lq.items():
            index.pending_by_lq[lq] = index.pending_by_lq.get(lq, 0) + count
        index.pending.extend(queue)
    # Newest reservation first: an admission shows up at the top of the first page.
    index.admitted.sort(key=lambda r: (-(r.reserved_at or 0.0), -r.reserved_seq, r.key))
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
        rows.append({"namespace": lq.namespace, "name": lq.name, "clusterQueue": lq.cluster_queue,
                     "stopPolicy": lq.stop_policy, "pending": index.pending_by_lq.get(key, 0),
                     "admitted": index.admitted_by_lq.get(key, 0)})
    return _paged(rows, page, len(keys), size)


def _flavors(rec: WorkloadRecord) -> dict[str, dict[str, str]]:
    if rec.assignment is None or not rec.holds_quota:
        return {}
    return {psa.name: dict(sorted(psa.flavors.items())) for psa in rec.assignment.podsets}


def workload_row(rec: WorkloadRecord, index: DashboardIndex) -> dict[str, Any]:
    pending = rec.status == PENDING
    place = index.positions.get(rec.key)
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
