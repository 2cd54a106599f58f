"""The topology tree of one TAS flavor: domains per level, leaves with free capacity.

Built once from the Topology, the ResourceFlavor and the Nodes, then kept up to date
incrementally: pod and workload usage only adjust the free capacity of the leaves they
touch, so a placement never rebuilds the tree. Each domain also carries scratch counters
(``state``, ``slice``, ``leader`` ...) that a placement search overwrites; they mean
nothing between searches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pykueue.api import keys

from . import nodes as nodepred
from .resources import PODS, Resources, add_into, parse_resource_list, pod_spec_requests


class Domain:
    """A topology domain; leaves additionally hold capacity and (hostname leaves) their node."""

    __slots__ = (
        "allocatable",
        "children",
        "fits",
        "free",
        "id",
        "leader",
        "level",
        "node",
        "non_tas",
        "parent",
        "slice",
        "slice_wl",
        "state",
        "state_wl",
        "taints",
        "values",
    )

    def __init__(self, values: tuple[str, ...], level: int, domain_id: str) -> None:
        self.values = values
        self.level = level
        self.id = domain_id
        self.parent: Domain | None = None
        self.children: list[Domain] = []
        self.node: Mapping[str, Any] | None = None
        self.taints: tuple[Mapping[str, Any], ...] = ()
        self.allocatable: Resources = {}
        self.non_tas: Resources = {}
        self.free: Resources = {}  # change it only through take(), which forgets fits
        # Leaves: how many copies of a requirement (by the tree's requirement id) fit free,
        # and the resource short when none does; valid until free changes.
        self.fits: dict[int, tuple[int, str]] = {}
        self.state = 0
        self.state_wl = 0
        self.slice = 0
        self.slice_wl = 0
        self.leader = 0

    def __repr__(self) -> str:
        return f"Domain({self.id!r}, state={self.state})"

    def take(self, usage: Mapping[str, int], sign: int = 1) -> None:
        """Take ``usage`` from the free capacity (give it back with ``sign=-1``)."""
        free = self.free
        for name, amount in usage.items():
            free[name] = free.get(name, 0) - sign * amount
        self.fits.clear()


TAS_POD_ANNOTATIONS = (
    keys.PODSET_REQUIRED_TOPOLOGY,
    keys.PODSET_PREFERRED_TOPOLOGY,
    keys.PODSET_UNCONSTRAINED_TOPOLOGY,
    keys.PODSET_SLICE_REQUIRED_TOPOLOGY,
    keys.PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
)


def is_tas_pod(pod: Mapping[str, Any]) -> bool:
    """TAS pods are accounted through their workload's assignment, never one by one."""
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if any(k in annotations for k in TAS_POD_ANNOTATIONS):
        return True
    return (meta.get("labels") or {}).get(keys.TAS_LABEL) == "true"


def consumes_node_capacity(pod: Mapping[str, Any]) -> bool:
    """Bound, not terminated, and not a TAS pod: its requests come off the node."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return False
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return not is_tas_pod(pod)


def node_charge(pod: Mapping[str, Any]) -> tuple[str, Resources] | None:
    """The node a pod takes capacity from and how much; None when it takes none."""
    if not consumes_node_capacity(pod):
        return None
    return str(pod["spec"]["nodeName"]), pod_usage(pod)


def pod_usage(pod: Mapping[str, Any]) -> Resources:
    usage = pod_spec_requests(pod.get("spec") or {})
    usage[PODS] = usage.get(PODS, 0) + 1
    return usage


def domain_id(values: Sequence[str], hostname_leaf: bool) -> str:
    """Kueue's domain id: the bare hostname for node leaves, else values joined by ','."""
    return values[-1] if hostname_leaf else ",".join(values)


_REQUIREMENT_IDS = 1024  # requirements numbered at once per tree
LEAF_FITS = 64  # requirements a leaf remembers its fit for


class TopologyTree:
    """Domains of one flavor's topology over the nodes that serve it."""

    def __init__(self, level_keys: Sequence[str]) -> None:
        if not level_keys:
            raise ValueError("a topology needs at least one level")
        self.level_keys: tuple[str, ...] = tuple(level_keys)
        self.hostname_leaves = self.level_keys[-1] == keys.HOSTNAME_LABEL
        self.levels: list[dict[tuple[str, ...], Domain]] = [{} for _ in self.level_keys]
        self.leaves: dict[str, Domain] = {}
        self.leaf_by_node: dict[str, Domain] = {}
        self.roots: list[Domain] = []
        # Requirements seen by placements, numbered for the leaves' fits memo (never reused).
        self._requirement_ids: dict[tuple[tuple[str, int], ...], int] = {}
        self._next_requirement_id = 0
        # Node filters depend only on the podset's scheduling constraints and the (static)
        # nodes, so their verdicts are cached per constraint set: leaf id -> exclusion.
        self.exclusion_cache: dict[str, dict[str, tuple[str, str]]] = {}

    def requirement_id(self, requirement: tuple[tuple[str, int], ...]) -> int:
        """A number for ``requirement`` that no other requirement of this tree has had."""
        rid = self._requirement_ids.get(requirement)
        if rid is None:
            if len(self._requirement_ids) >= _REQUIREMENT_IDS:
                self._requirement_ids.clear()  # leaves forget old numbers as they fill up
            rid = self._requirement_ids[requirement] = self._next_requirement_id
            self._next_requirement_id += 1
        return rid

    @property
    def lowest(self) -> int:
        return len(self.level_keys) - 1

    def _domain(self, values: tuple[str, ...]) -> Domain:
        level = len(values) - 1
        found = self.levels[level].get(values)
        if found is not None:
            return found
        dom = Domain(values, level, domain_id(values, self.hostname_leaves and level == self.lowest))
        self.levels[level][values] = dom
        if level == 0:
            self.roots.append(dom)
        else:
            parent = self._domain(values[:-1])
            dom.parent = parent
            parent.children.append(dom)
        return dom

    def add_node(self, node: Mapping[str, Any], extra_taints: Sequence[Mapping[str, Any]] = ()) -> Domain:
        labels = nodepred.node_labels(node)
        values = tuple(str(labels[k]) for k in self.level_keys)
        leaf = self._domain(values)
        alloc = parse_resource_list((node.get("status") or {}).get("allocatable"))
        if self.hostname_leaves:
            leaf.node = node
            leaf.taints = tuple((node.get("spec") or {}).get("taints") or ()) + tuple(extra_taints)
            leaf.allocatable = alloc
        else:
            # Non-hostname leaves pool the capacity of all their nodes.
            add_into(leaf.allocatable, alloc)
        leaf.free = dict(leaf.allocatable)
        leaf.take(leaf.non_tas)
        self.leaves[leaf.id] = leaf
        self.leaf_by_node[nodepred.node_name(node)] = leaf
        return leaf

    def sort_children(self) -> None:
        """Deterministic child order (by values) regardless of node arrival order."""
        for level in self.levels:
            for dom in level.values():
                dom.children.sort(key=lambda d: d.values)
        self.roots.sort(key=lambda d: d.values)

    def leaf_for_values(self, values: Sequence[str]) -> Domain | None:
        """The leaf an assignment domain names (hostname alone, or the full tuple)."""
        if self.hostname_leaves:
            return self.leaves.get(values[-1]) if values else None
        return self.leaves.get(",".join(values))
