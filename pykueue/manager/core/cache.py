"""The cached objects and the quota tree (Kueue's ``pkg/cache``).

:class:`ClusterCache` keeps what the core read of every object but Workloads (flavors,
ClusterQueues, Cohorts, LocalQueues, priority classes, admission checks, namespaces), the
quota tree built from them with each ClusterQueue's activity, and what is held on it: the
usage ledger and, per ClusterQueue, the workloads holding quota there.

A structural change (a queue, cohort, flavor or check) only marks the cache ``dirty``; the
tree is rebuilt once before it is next read (see ``WorkloadLifecycle.ensure``), so loading
a thousand queues stays linear. :class:`~.quota.QuotaTree` is the tree as built: the same object
until the next rebuild.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from .fair_sharing import WeightError, dominant_share, parse_weight
from .objects import (
    FR,
    AdmissionCheckDef,
    ClusterQueueDef,
    Flavor,
    LocalQueueDef,
    ObjectError,
    QueueDef,
    WorkloadDef,
    admission_check_from,
    cluster_queue_from,
    cohort_from,
    flavor_from,
    local_queue_from,
)
from .queue_activity import ACTIVE, ActiveCondition, Inactivity, cluster_queue_inactivity
from .quota import QuotaNode, QuotaNodeView, QuotaTree, Usage, available, compute_subtree, local_available
from .reasons import Pending, PendingReason
from .snapshot import Snapshot
from .workload_state import WorkloadRecord


class ClusterCache:
    def __init__(self, unreported_checks_active: bool) -> None:
        self._unreported_checks_active = unreported_checks_active
        self.flavors: dict[str, Flavor] = {}
        self.cq_defs: dict[str, ClusterQueueDef] = {}
        self.cohort_defs: dict[str, QueueDef] = {}
        self.local_queues: dict[str, LocalQueueDef] = {}
        self.priority_classes: dict[str, int] = {}
        self.checks: dict[str, AdmissionCheckDef] = {}
        self.namespaces: dict[str, dict[str, str]] = {}
        self.fair_weights: dict[str, float] = {}  # "ClusterQueue/<name>" or "Cohort/<name>" -> weight
        self.terminating: set[str] = set()  # ClusterQueues being deleted: they admit nothing new
        self.nodes: dict[str, QuotaNode] = {}
        self.cohort_nodes: dict[str, QuotaNode] = {}
        self.tree = QuotaTree(MappingProxyType(self.nodes), MappingProxyType(self.cohort_nodes))
        self.inactive: dict[str, PendingReason] = {}
        # Why each inactive ClusterQueue is so, every cause (the Active condition lists them).
        self.inactivity: dict[str, Inactivity] = {}
        self.usage = Usage()
        self.holding: dict[str, dict[str, WorkloadRecord]] = {}
        self.holding_versions: dict[str, int] = {}  # see Snapshot.holding_versions
        # Kueue's AllocatableResourceGeneration: per ClusterQueue, advanced when a holder
        # releases its quota there, and for all on a change of the quota tree.
        self.generations: dict[str, int] = {}
        self._holding_version = itertools.count(1)
        self._tree_queues: dict[str, int] = {}  # root key -> ClusterQueues in its tree
        self.dirty = True

    # ------------------------------------------------------------ objects

    def apply(self, obj: dict[str, Any]) -> None:
        """Create or update any object but a Workload; other kinds raise ObjectError.

        Only a change of what the core reads marks the tree for a rebuild: status writes
        echo back as updates of the same spec, and a rebuild re-routes every workload."""
        kind = obj.get("kind")
        table: dict[str, Any]
        name: str
        value: object
        weight_changed = False
        if kind == "ResourceFlavor":
            f = flavor_from(obj)
            table, name, value = self.flavors, f.name, f
        elif kind == "ClusterQueue":
            cq = cluster_queue_from(obj)
            weight_changed = self._weight("ClusterQueue", cq.name, obj)
            table, name, value = self.cq_defs, cq.name, cq
        elif kind == "Cohort":
            c = cohort_from(obj)
            weight_changed = self._weight("Cohort", c.name, obj)
            table, name, value = self.cohort_defs, c.name, c
        elif kind == "LocalQueue":
            lq = local_queue_from(obj)
            table, name, value = self.local_queues, lq.key, lq
        elif kind == "WorkloadPriorityClass":
            pc_name = (obj.get("metadata") or {}).get("name")
            if not pc_name:
                raise ObjectError("WorkloadPriorityClass without metadata.name")
            table, name, value = self.priority_classes, pc_name, int(obj.get("value") or 0)
        elif kind == "AdmissionCheck":
            ac = admission_check_from(obj, self._unreported_checks_active)
            table, name, value = self.checks, ac.name, ac
        elif kind == "Namespace":
            meta = obj.get("metadata") or {}
            ns = meta.get("name")
            if not ns:
                raise ObjectError("Namespace without metadata.name")
            labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
            labels["kubernetes.io/metadata.name"] = ns
            table, name, value = self.namespaces, ns, labels
        else:
            raise ObjectError(f"unsupported kind {kind!r}")
        self._store(table, name, value, weight_changed)

    def _store(self, table: dict[str, Any], name: str, value: object, changed: bool) -> None:
        if changed or name not in table or table[name] != value:
            table[name] = value
            self.dirty = True

    def delete(self, kind: str, namespace: str | None, name: str) -> bool:
        """Forget an object but a Workload; returns False when there was nothing to delete."""
        tables: dict[str, dict[str, Any]] = {
            "ResourceFlavor": self.flavors, "ClusterQueue": self.cq_defs, "Cohort": self.cohort_defs,
            "WorkloadPriorityClass": self.priority_classes, "AdmissionCheck": self.checks,
            "Namespace": self.namespaces,
        }
        table = tables.get(kind)
        if kind == "LocalQueue":
            table, name = self.local_queues, f"{namespace or 'default'}/{name}"
        if table is None or name not in table:
            return False
        del table[name]
        self.dirty = True
        return True

    def _weight(self, kind: str, name: str, obj: dict[str, Any]) -> bool:
        """Record a fair-sharing weight; True if it changed."""
        fs = (obj.get("spec") or {}).get("fairSharing") or {}
        try:
            weight = parse_weight(fs.get("weight"))
        except WeightError as exc:
            raise ObjectError(f"{kind} {name}: {exc}") from exc
        key = f"{kind}/{name}"
        changed = self.fair_weights.get(key) != weight
        self.fair_weights[key] = weight
        return changed

    def set_terminating(self, name: str, terminating: bool) -> None:
        """A ClusterQueue being deleted is inactive (Kueue: reason Terminating) until it is gone;
        what it admitted keeps its quota."""
        if terminating != (name in self.terminating):
            (self.terminating.add if terminating else self.terminating.discard)(name)
            self.dirty = True

    def priority_of(self, wl: WorkloadDef) -> int:
        """The workload's priority: its WorkloadPriorityClass's value, if it names a known one."""
        return self.priority_classes.get(wl.priority_class, wl.priority) if wl.priority_class else wl.priority

    def local_queue_of(self, wl: WorkloadDef) -> LocalQueueDef | None:
        return self.local_queues.get(f"{wl.namespace}/{wl.queue_name}")

    # ------------------------------------------------------------ structure

    def rebuild(self, workloads: Iterable[WorkloadRecord]) -> None:
        """Rebuild the quota tree, every ClusterQueue's activity and the usage ledger (from
        the workloads holding quota)."""
        self.dirty = False
        for name in self.cq_defs:
            self.generations[name] = self.generations.get(name, 0) + 1
        nodes = {n: QuotaNode(n, True, d.quotas) for n, d in self.cq_defs.items()}
        cohorts = {n: QuotaNode(n, False, d.quotas) for n, d in self.cohort_defs.items()}

        def cohort(name: str) -> QuotaNode:
            if name not in cohorts:
                cohorts[name] = QuotaNode(name, False, {})  # implicit cohort
            return cohorts[name]

        for name, cq in self.cq_defs.items():
            if cq.parent:
                nodes[name].parent = cohort(cq.parent)
        for name, cdef in list(self.cohort_defs.items()):
            if cdef.parent:
                cohorts[name].parent = cohort(cdef.parent)
        cyclic: set[str] = set()
        for name, cnode in cohorts.items():
            seen: set[str] = set()
            n: QuotaNode | None = cnode
            while n is not None:
                if n.name in seen:
                    cyclic.add(name)
                    break
                seen.add(n.name)
                n = n.parent
        for name in cyclic:
            cohorts[name].parent = None  # break the cycle; its queues are inactive anyway
        for node in (*nodes.values(), *cohorts.values()):
            if node.parent is not None:
                node.parent.children.append(node)
        for node in cohorts.values():
            if node.parent is None:
                compute_subtree(node)
        for node in nodes.values():
            if node.parent is None:
                compute_subtree(node)
        self.nodes, self.cohort_nodes = nodes, cohorts
        self.tree = QuotaTree(MappingProxyType(nodes), MappingProxyType(cohorts))
        self._tree_queues = {}
        self.inactive, self.inactivity = {}, {}
        for name, cq in self.cq_defs.items():
            why = self._inactivity(cq, cyclic)
            if why.blocks_admission:
                self.inactivity[name] = why
                self.inactive[name] = PendingReason(Pending.CLUSTER_QUEUE_INACTIVE, name, why.detail())
        usage = Usage()
        for rec in workloads:
            holder = nodes.get(rec.cluster_queue or "") if rec.holds_quota else None
            if holder is not None:
                usage.add_all(holder, rec.usage)
        self.usage = usage
        for name in self.cq_defs:
            # Every queue is versioned, holders or not: what preemption keeps across
            # snapshots is keyed on the versions of all queues of a cohort.
            self.holding_versions.setdefault(name, next(self._holding_version))

    def _inactivity(self, cq: ClusterQueueDef, cyclic: set[str]) -> Inactivity:
        in_cycle = bool(cq.parent) and any(n in cyclic for n in self._ancestors(cq.parent or ""))
        return cluster_queue_inactivity(cq, self.flavors, self.checks,
                                        terminating=cq.name in self.terminating, cohort_cycle=in_cycle)

    def _ancestors(self, cohort: str) -> list[str]:
        out: list[str] = []
        name: str | None = cohort
        while name and name not in out:
            out.append(name)
            d = self.cohort_defs.get(name)
            name = d.parent if d else None
        return out

    def tree_queues(self, key: str, root: QuotaNode) -> int:
        """How many ClusterQueues the tree under ``root`` (``key``: its timer key) has."""
        queues = self._tree_queues.get(key)
        if queues is None:
            queues = self._tree_queues[key] = sum(1 for _ in root.cluster_queues())
        return queues

    def root_node(self, key: str) -> QuotaNode | None:
        """The node a requeue timer key ("ClusterQueue/<name>" or "Cohort/<name>") names."""
        kind_of_root, _, name = key.partition("/")
        return (self.nodes if kind_of_root == "ClusterQueue" else self.cohort_nodes).get(name)

    def path(self, cq: str | None) -> str:
        """"/root/.../cq", as Kueue names a queue in preemption messages."""
        parts: list[str] = []
        n = self.nodes.get(cq or "")
        while n is not None:
            parts.append(n.name)
            n = n.parent
        return "/" + "/".join(reversed(parts)) if parts else "UNKNOWN"

    # ------------------------------------------------------------ holders and usage

    def hold(self, cq: str, rec: WorkloadRecord) -> None:
        """``rec`` holds quota in ``cq`` (its usage is charged apart: see ``charge``)."""
        self.holding.setdefault(cq, {})[rec.key] = rec
        self.holders_changed(cq)

    def unhold(self, cq: str | None, key: str) -> None:
        if self.holding.get(cq or "", {}).pop(key, None) is not None:
            self.holders_changed(cq)
            self.generations[cq or ""] = self.generations.get(cq or "", 0) + 1

    def holds(self, cq: str | None, key: str) -> bool:
        return key in self.holding.get(cq or "", ())

    def holders_changed(self, cq: str | None) -> None:
        """A holder of ``cq`` came or went, or moved in victim order (see Snapshot.holding_versions)."""
        self.holding_versions[cq or ""] = next(self._holding_version)

    def charge(self, cq: str | None, amounts: Mapping[FR, int], sign: int = 1) -> QuotaNode | None:
        """Add (``sign`` -1: remove) usage on the ClusterQueue's node; returns the node, None
        when the queue is not in the tree."""
        node = self.nodes.get(cq or "")
        if node is not None:
            self.usage.add_all(node, amounts, sign=sign)
        return node

    # ------------------------------------------------------------ reading (the tree up to date)

    def snapshot(self, workloads: Mapping[str, WorkloadRecord],
                 topology_levels: Mapping[str, tuple[str, ...]]) -> Snapshot:
        return Snapshot(self.cq_defs, self.nodes, self.flavors, self.namespaces, self.inactive,
                        self.usage.overlay(), self.holding, self.fair_weights,
                        topology_levels, workloads, self.holding_versions)

    def cluster_queue_condition(self, name: str) -> ActiveCondition | None:
        if name not in self.cq_defs:
            return None
        return self.inactivity.get(name, ACTIVE).condition()

    def usage_of(self, cq: str) -> dict[FR, int]:
        node = self.nodes.get(cq)
        return dict(self.usage.of(node)) if node is not None else {}

    def usage_at(self, node: QuotaNodeView) -> dict[FR, int]:
        return dict(self.usage.of(node)) if isinstance(node, QuotaNode) else {}

    def headroom(self, cq: str, fr: FR) -> tuple[int, int]:
        """(what the queue could still take on ``fr``, the part of it its own local quota
        holds); (0, 0) for a queue not in the tree."""
        node = self.nodes.get(cq)
        if node is None:
            return 0, 0
        return available(node, self.usage, fr), local_available(node, self.usage, fr)

    def cluster_queue_shares(self) -> dict[str, float]:
        return {name: dominant_share(node, self.usage, self.fair_weights)
                for name, node in self.nodes.items()}

    def cohort_shares(self) -> dict[str, float]:
        return {name: dominant_share(node, self.usage, self.fair_weights)
                for name, node in self.cohort_nodes.items()}

    def cohort_subtree_quota(self) -> dict[str, dict[FR, int]]:
        return {name: dict(node.subtree) for name, node in self.cohort_nodes.items()}

    def activity(self, name: str) -> str:
        why = self.inactive.get(name)
        return why.message() if why is not None else "active"
