"""TopologySnapshot: one TAS flavor's capacity, usage and placement entry point.

The snapshot owns a :class:`~.tree.TopologyTree` and keeps each leaf's free capacity
current as non-TAS pods and admitted workloads come and go (``add_pod``/``remove_pod``,
``add_usage``/``remove_usage``). ``place`` runs Kueue's search for a workload's PodSets
in order, charging each finished unit (a PodSet, or a leader+workers group) to the
leaves it uses before placing the next, and leaves the snapshot unchanged.

After a restart the snapshot refuses to place until ``mark_synced`` (all admitted
workloads accounted), so capacity is never promised twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import nodes as nodepred
from .assignment import DomainAssignment, TopologyAssignment
from .placement import PlacementSearch, SearchInput
from .request import PodSetRequest
from .resources import PODS, Resources
from .tree import Domain, TopologyTree, node_charge


@dataclass(frozen=True)
class Placed:
    """Every PodSet got an assignment, keyed by PodSet name."""

    assignments: dict[str, TopologyAssignment]

    def __bool__(self) -> bool:
        return True


@dataclass(frozen=True)
class NoFit:
    """Placement failed; ``reason`` is the message Kueue would show for the PodSet."""

    podset: str
    reason: str

    def __bool__(self) -> bool:
        return False


PlacementResult = Placed | NoFit

NOT_SYNCED_REASON = "topology usage is not synced yet: waiting for admitted workloads to be accounted"


def per_domain_usage(
    assignment: TopologyAssignment, per_pod: Mapping[str, int]
) -> list[tuple[tuple[str, ...], Resources]]:
    """What an assignment charges each of its domains: count x requests + count pods."""
    out = []
    for dom in assignment.domains:
        usage = {name: amount * dom.count for name, amount in per_pod.items() if name != PODS}
        usage[PODS] = dom.count
        out.append((dom.values, usage))
    return out


class TopologySnapshot:
    """Capacity and usage of one TAS ResourceFlavor over its Topology."""

    def __init__(
        self,
        topology_name: str,
        level_keys: Sequence[str],
        *,
        flavor_name: str = "",
        flavor_labels: Mapping[str, str] | None = None,
        flavor_tolerations: Sequence[Mapping[str, Any]] = (),
        flavor_taints: Sequence[Mapping[str, Any]] = (),
        synced: bool = True,
    ) -> None:
        self.topology_name = topology_name
        self.flavor_name = flavor_name
        self.flavor_labels: dict[str, str] = dict(flavor_labels or {})
        self.flavor_tolerations = tuple(flavor_tolerations)
        self.flavor_taints = tuple(flavor_taints)
        self.synced = synced
        # Kueue's TASBalancedPlacement gate: preferred requests try a balanced placement first.
        self.balanced_placement = False
        self.tree = TopologyTree(level_keys)
        self._nodes: dict[str, Mapping[str, Any]] = {}
        self._pods: dict[str, tuple[str, Resources]] = {}
        # TAS usage per leaf id survives node churn: usage of a missing leaf is kept
        # aside and charged again if the node comes back.
        self._tas_usage: dict[str, Resources] = {}

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        topology: Mapping[str, Any],
        flavor: Mapping[str, Any],
        nodes: Iterable[Mapping[str, Any]],
        pods: Iterable[Mapping[str, Any]] = (),
        *,
        synced: bool = True,
    ) -> TopologySnapshot:
        """From Kubernetes object dicts: a Topology, a ResourceFlavor, Nodes and Pods."""
        spec = flavor.get("spec") or {}
        snap = cls(
            str((topology.get("metadata") or {}).get("name", "")),
            [str(level["nodeLabel"]) for level in (topology.get("spec") or {}).get("levels") or []],
            flavor_name=str((flavor.get("metadata") or {}).get("name", "")),
            flavor_labels=spec.get("nodeLabels") or {},
            flavor_tolerations=spec.get("tolerations") or (),
            flavor_taints=spec.get("nodeTaints") or (),
            synced=synced,
        )
        for node in nodes:
            snap._nodes[nodepred.node_name(node)] = node
        snap._rebuild()
        for pod in pods:
            snap.add_pod(pod)
        return snap

    @property
    def level_keys(self) -> tuple[str, ...]:
        return self.tree.level_keys

    def _eligible(self, node: Mapping[str, Any]) -> bool:
        return (
            nodepred.belongs_to_flavor(node, self.flavor_labels, self.tree.level_keys)
            and nodepred.is_ready(node)
            and not nodepred.is_unschedulable(node)
        )

    def _rebuild(self) -> None:
        tree = TopologyTree(self.tree.level_keys)
        for name in sorted(self._nodes):
            node = self._nodes[name]
            if self._eligible(node):
                tree.add_node(node, self.flavor_taints)
        tree.sort_children()
        self.tree = tree
        for node_name, usage in self._pods.values():
            self._charge_node(node_name, usage, 1)
        for leaf_id, usage in self._tas_usage.items():
            leaf = tree.leaves.get(leaf_id)
            if leaf is not None:
                leaf.take(usage)

    # -- nodes -----------------------------------------------------------------------------
    def upsert_node(self, node: Mapping[str, Any]) -> None:
        """A node was added or changed (labels, readiness, taints, allocatable)."""
        self._nodes[nodepred.node_name(node)] = node
        self._rebuild()

    def remove_node(self, name: str) -> None:
        self._nodes.pop(name, None)
        self._rebuild()

    def node(self, name: str) -> Mapping[str, Any] | None:
        return self._nodes.get(name)

    def has_leaf(self, values: Sequence[str]) -> bool:
        return self.tree.leaf_for_values(values) is not None

    # -- non-TAS pods ----------------------------------------------------------------------
    def _charge_node(self, node_name: str, usage: Mapping[str, int], sign: int) -> None:
        leaf = self.tree.leaf_by_node.get(node_name)
        if leaf is None:
            return
        for name, amount in usage.items():
            leaf.non_tas[name] = leaf.non_tas.get(name, 0) + sign * amount
        leaf.take(usage, sign)

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        """A pod was seen; bound non-TAS, non-terminal pods consume their node's capacity."""
        meta = pod.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        self.remove_pod(key)
        charge = node_charge(pod)
        if charge is None:
            return
        self._pods[key] = charge
        self._charge_node(*charge, 1)

    def remove_pod(self, key: str) -> None:
        """Forget a pod by ``namespace/name``."""
        old = self._pods.pop(key, None)
        if old is not None:
            self._charge_node(old[0], old[1], -1)

    # -- TAS usage -------------------------------------------------------------------------
    def _leaf_key(self, values: Sequence[str]) -> str:
        return values[-1] if self.tree.hostname_leaves else ",".join(values)

    def add_usage(self, assignment: TopologyAssignment, per_pod: Mapping[str, int]) -> None:
        """Charge an admitted PodSet's assignment (per domain: count x requests + pods)."""
        self._apply_usage(assignment, per_pod, 1)

    def remove_usage(self, assignment: TopologyAssignment, per_pod: Mapping[str, int]) -> None:
        self._apply_usage(assignment, per_pod, -1)

    def _apply_usage(self, assignment: TopologyAssignment, per_pod: Mapping[str, int], sign: int) -> None:
        for values, usage in per_domain_usage(assignment, per_pod):
            key = self._leaf_key(values)
            held = self._tas_usage.setdefault(key, {})
            for name, amount in usage.items():
                held[name] = held.get(name, 0) + sign * amount
            if not any(held.values()):
                del self._tas_usage[key]
            leaf = self.tree.leaves.get(key)
            if leaf is not None:
                leaf.take(usage, sign)

    def add_workload_usage(self, podsets: Iterable[tuple[TopologyAssignment, Mapping[str, int]]]) -> None:
        """Charge every PodSet of a multi-PodSet workload, each with its own requests."""
        for assignment, per_pod in podsets:
            self.add_usage(assignment, per_pod)

    def remove_workload_usage(self, podsets: Iterable[tuple[TopologyAssignment, Mapping[str, int]]]) -> None:
        for assignment, per_pod in podsets:
            self.remove_usage(assignment, per_pod)

    def still_fits(self, placed: Iterable[tuple[TopologyAssignment, Mapping[str, int]]]) -> bool:
        """A placement found earlier fits the current free capacity of its domains (what
        Kueue checks of a nominated assignment once earlier admissions took their share)."""
        need: dict[str, Resources] = {}
        for assignment, per_pod in placed:
            for values, usage in per_domain_usage(assignment, per_pod):
                held = need.setdefault(self._leaf_key(values), {})
                for name, amount in usage.items():
                    held[name] = held.get(name, 0) + amount
        for key, usage in need.items():
            leaf = self.tree.leaves.get(key)
            if leaf is None or any(leaf.free.get(name, 0) < amount for name, amount in usage.items()):
                return False
        return True

    def mark_synced(self) -> None:
        """All admitted workloads are accounted: placements may start."""
        self.synced = True

    def free_capacity(self, values: Sequence[str]) -> Resources:
        """Free capacity of any domain (hostname or full tuple for leaves, a prefix above)."""
        leaf = self.tree.leaf_for_values(values)
        if leaf is not None:
            return dict(leaf.free)
        total: Resources = {}
        prefix = tuple(values)
        for dom in self.tree.leaves.values():
            if dom.values[: len(prefix)] == prefix:
                for name, amount in dom.free.items():
                    total[name] = total.get(name, 0) + amount
        return total

    def with_all_levels(self, assignment: TopologyAssignment) -> TopologyAssignment:
        """The assignment with every topology level spelled out (e.g. rack and hostname).

        Hostname topologies store only hostnames; this view is for humans and ``simulate``.
        Domains whose node is gone keep the values they had.
        """
        if assignment.levels == self.tree.level_keys:
            return assignment
        domains = []
        for dom in assignment.domains:
            leaf = self.tree.leaf_for_values(dom.values)
            values = leaf.values if leaf is not None else dom.values
            domains.append(DomainAssignment(values, dom.count))
        return TopologyAssignment(self.tree.level_keys, tuple(domains))

    def leaves(self) -> list[Domain]:
        return sorted(self.tree.leaves.values(), key=lambda d: d.values)

    # -- placement -------------------------------------------------------------------------
    def place(self, podsets: Sequence[PodSetRequest], *, simulate_empty: bool = False,
              freed: Iterable[tuple[TopologyAssignment, Mapping[str, int]]] = (),
              taken: Iterable[tuple[TopologyAssignment, Mapping[str, int]]] = ()) -> PlacementResult:
        """Place a workload's PodSets in order; PodSets sharing a group name go together.

        Earlier units' usage is charged (per domain) before the next is placed; the
        snapshot itself is not changed — call :meth:`add_usage` once admitted. ``freed``
        are admitted placements to count as gone (preemption targets being simulated away);
        ``taken`` placements not charged yet to count as used (the workload's own pod sets
        placed on a sibling flavor that shares these nodes).
        """
        if not self.synced:
            return NoFit(podsets[0].name if podsets else "", NOT_SYNCED_REASON)
        assumed: dict[str, Resources] = {}
        for assignment, per_pod in freed:
            for values, usage in per_domain_usage(assignment, per_pod):
                held = assumed.setdefault(self._leaf_key(values), {})
                for name, amount in usage.items():
                    held[name] = held.get(name, 0) - amount
        for assignment, per_pod in taken:
            for values, usage in per_domain_usage(assignment, per_pod):
                held = assumed.setdefault(self._leaf_key(values), {})
                for name, amount in usage.items():
                    held[name] = held.get(name, 0) + amount
        result: dict[str, TopologyAssignment] = {}
        for unit in _units(podsets):
            if len(unit) == 2:
                leader, workers = sorted(unit, key=lambda p: p.count)
                if leader.count != 1:
                    return NoFit(
                        leader.name, f"podset group {unit[0].topology.group_name!r} needs a single-pod leader"
                    )
                inp = SearchInput(workers, leader=leader, assumed=assumed, simulate_empty=simulate_empty,
                                  balanced=self.balanced_placement)
            elif len(unit) == 1:
                workers = unit[0]
                inp = SearchInput(workers, assumed=assumed, simulate_empty=simulate_empty,
                                  balanced=self.balanced_placement)
            else:
                return NoFit(
                    unit[0].name, f"podset group {unit[0].topology.group_name!r} has more than 2 podsets"
                )
            found = self.search(inp)
            if isinstance(found, str):
                return NoFit(workers.name, found)
            for ps in unit:
                assignment = found[ps.name]
                result[ps.name] = assignment
                for values, usage in per_domain_usage(assignment, ps.per_pod):
                    held = assumed.setdefault(self._leaf_key(values), {})
                    for name, amount in usage.items():
                        held[name] = held.get(name, 0) + amount
        return Placed(result)

    def closest_domains(self, request: PodSetRequest, limit: int) -> list[tuple[tuple[str, ...], int]]:
        """Where the pod set comes closest to fitting (see PlacementSearch.closest)."""
        if not self.synced:
            return []
        return PlacementSearch(self.tree, self.topology_name, self.flavor_tolerations,
                               SearchInput(request)).closest(limit)

    def search(self, inp: SearchInput) -> dict[str, TopologyAssignment] | str:
        """One raw search (used by place and node replacement)."""
        return PlacementSearch(self.tree, self.topology_name, self.flavor_tolerations, inp).run()


def _units(podsets: Sequence[PodSetRequest]) -> list[list[PodSetRequest]]:
    """PodSets in order, grouped by podset-group-name when they use required/preferred."""
    units: list[list[PodSetRequest]] = []
    by_group: dict[str, list[PodSetRequest]] = {}
    for ps in podsets:
        group = ps.topology.group_name
        if group and (ps.topology.required or ps.topology.preferred):
            if group in by_group:
                by_group[group].append(ps)
                continue
            by_group[group] = [ps]
            units.append(by_group[group])
        else:
            units.append([ps])
    return units
