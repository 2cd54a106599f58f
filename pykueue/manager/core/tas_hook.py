"""The TAS adapter of the scheduling cycle: one TopologySnapshot per TAS flavor, kept in sync.

:class:`TasPlacer` implements :class:`~manager.core.hooks.TopologyHook` (placement during
nomination) and :class:`~manager.core.hooks.TopologyTracker` (what the engine tells it
and asks it as workloads come and go), so the pure TAS core in :mod:`manager.core.tas`
sees the same capacity the queue manager promised:

* object events: Topologies, Nodes, Pods (non-TAS pods consume node capacity) and
  AdmissionChecks (ProvisioningRequest-style checks delay topology assignment);
* nomination: all PodSets of a workload on one TAS flavor are placed together, in order,
  each charging its own domains before the next (groups go as one unit); PodSets without
  annotations in a TAS-only ClusterQueue are implied unconstrained, as in Kueue;
* reservation: the placement is computed again on the current usage (an earlier admission
  of the same cycle may have taken the domains; the flavor stays) and charged per domain;
  release (finish, eviction, deletion) gives it back;
* second pass: delayed topology requests once every check is Ready, and node replacement
  after :meth:`TasPlacer.fail_node` (the node is recorded as unhealthy first, then either
  replaced inside the required domain or the workload is evicted with ``NodeFailures``);
* sync: with ``synced=False`` nothing is placed (admitted workloads are not all accounted
  yet) until :meth:`TasPlacer.mark_synced`.

Usage snapshots are rebuilt lazily (when a Topology, Node, Pod or flavor changed) from the
objects and the charges held; between rebuilds charges are applied incrementally.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pykueue.api import keys

from .assignment import Assignment, Entry, PodSetAssignment
from .objects import ClusterQueueDef, Flavor, WorkloadDef
from .reasons import TAS_NODE_CONTROLLER, EvictionNote, multiple_node_failures_message
from .snapshot import Snapshot
from .tas import (
    NOT_SYNCED_REASON,
    NoFit,
    NoReplacement,
    PodSetRequest,
    TopologyAssignment,
    TopologySnapshot,
    cluster_queue_for_entry,
    needs_second_pass,
    podset_requests,
    replace_failed_node,
)
from .tas.nodes import ready_condition
from .tas.request import topology_request_from_annotations
from .tas.resources import Resources
from .tas.tree import node_charge
from .workload_state import ADMITTED, FINISHED, PENDING, QUOTA_RESERVED, WorkloadRecord

DELAYED_PENDING = "Pending"
DELAYED_READY = "Ready"
# Second-pass outcomes the engine acts on.
SECOND_PASS_ADMIT = "Admit"
SECOND_PASS_EVICT = "Evict"
SECOND_PASS_UPDATED = "Updated"
SECOND_PASS_FAILED = "Failed"
NO_LONGER_FITS = "Workload no longer fits after processing another workload"
ONLY_TAS = "supports only TopologyAwareScheduling"
_HOLD = "\0hold/"  # charge key prefix of a preempting workload's held placement


@dataclass(frozen=True)
class Charge:
    """Usage of one admitted PodSet on one TAS flavor."""

    flavor: str
    podset: str
    assignment: TopologyAssignment
    per_pod: Resources


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _flavor_object(flavor: Flavor) -> dict[str, Any]:
    return {"metadata": {"name": flavor.name},
            "spec": {"nodeLabels": dict(flavor.node_labels), "tolerations": list(flavor.tolerations),
                     "nodeTaints": list(flavor.node_taints), "topologyName": flavor.topology_name}}


def _tas_flavor(psa: PodSetAssignment, flavors: Mapping[str, Flavor]) -> Flavor | None:
    for fname in sorted(set(psa.flavors.values())):
        f = flavors.get(fname)
        if f is not None and f.topology_name:
            return f
    return None


def tas_only(cq: ClusterQueueDef, flavors: Mapping[str, Flavor]) -> bool:
    """Every flavor of the ClusterQueue is a TAS flavor (PodSets then imply unconstrained)."""
    names = [f for g in cq.groups for f in g.flavors]
    return bool(names) and all((flavors.get(n) is not None and bool(flavors[n].topology_name)) for n in names)


def topology_request_field(annotations: Mapping[str, str]) -> dict[str, Any] | None:
    """``spec.podSets[].topologyRequest`` as Kueue's job integration derives it from annotations."""
    req = topology_request_from_annotations(annotations)
    if not req.is_tas:
        return None
    out: dict[str, Any] = {}
    if req.required:
        out["required"] = req.required
    elif req.preferred:
        out["preferred"] = req.preferred
    elif req.unconstrained:
        out["unconstrained"] = True
    if len(req.slice_layers) > 1 or annotations.get(keys.PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS):
        out["podsetSliceRequiredTopologyConstraints"] = [
            {"topology": layer.level, "size": layer.size} for layer in req.slice_layers]
    elif req.slice_layers:
        out["podSetSliceRequiredTopology"] = req.slice_layers[0].level
        out["podSetSliceSize"] = req.slice_layers[0].size
    elif req.slice_level_without_size:
        out["podSetSliceRequiredTopology"] = req.slice_level_without_size
    if req.group_name:
        out["podSetGroupName"] = req.group_name
    return out


def with_topology_requests(workload: dict[str, Any]) -> dict[str, Any]:
    """Fill ``topologyRequest`` of PodSets whose template asks for TAS (as Kueue's job reconciler does)."""
    for ps in (workload.get("spec") or {}).get("podSets") or ():
        if ps.get("topologyRequest"):
            continue
        annotations = ((ps.get("template") or {}).get("metadata") or {}).get("annotations") or {}
        field = topology_request_field(annotations)
        if field is not None:
            ps["topologyRequest"] = field
    return workload


def _placement_view(node: Mapping[str, Any]) -> tuple[Any, ...]:
    """What placement and node-failure handling read of a Node: labels, taints,
    schedulability, allocatable, and the Ready condition's status and transition time
    (not its heartbeat, which the kubelet, or kwok, renews every few tens of seconds)."""
    spec, status = node.get("spec") or {}, node.get("status") or {}
    ready = ready_condition(node) or {}
    return ((node.get("metadata") or {}).get("labels"), spec.get("taints"), spec.get("unschedulable"),
            status.get("allocatable"), ready.get("status"), ready.get("lastTransitionTime"))


_ON_EMPTY_LIMIT = 4096  # request shapes remembered per snapshot
_Placement = dict[str, TopologyAssignment] | str  # per PodSet, or why none
_PLACED_LIMIT = 4096  # heads whose last placement is kept for their reservation
_MemoKey = tuple[str, frozenset[str] | None]  # a request shape, and the workloads counted as gone


def _unchanged(was: tuple[Any, ...], now: tuple[Any, ...], identical: int) -> bool:
    """Two placements' inputs match: the first ``identical`` are the same objects (a
    workload or an assignment, not merely an equal one), the rest are equal."""
    return all(a is b for a, b in zip(was[:identical], now[:identical], strict=True)) \
        and was[identical:] == now[identical:]


class TasPlacer:
    """TopologyHook + TopologyTracker over the pure TAS core (see the module docstring)."""

    def __init__(self, *, synced: bool = True, overlapping_flavors: bool = True,
                 balanced_placement: bool = False) -> None:
        # TASHandleOverlappingFlavors: TAS usage meets across flavors that share nodes.
        self.overlapping_flavors = overlapping_flavors
        # TASBalancedPlacement (alpha, off): preferred requests are placed balanced when they can.
        self.balanced_placement = balanced_placement
        self.topologies: dict[str, dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}  # only those that take node capacity
        self.provisioning_checks: set[str] = set()
        self._synced = synced
        self._version = 0
        self._snaps: dict[str, tuple[Flavor, int, TopologySnapshot]] = {}
        self._charges: dict[str, list[Charge]] = {}
        self._holds: set[str] = set()  # the charge keys of held placements (see hold)
        self._delayed: dict[str, dict[str, str]] = {}  # workload key -> podset -> Pending/Ready
        self._unhealthy: dict[str, list[str]] = {}  # workload key -> unhealthy nodes (first is replaced)
        self._failures: dict[str, str] = {}  # workload key -> last placement failure
        self._tas_only: dict[str, bool] = {}  # workload key -> implied topology at reservation
        # Placements on the empty cluster, per flavor, valid while its snapshot is: they read
        # only nodes and non-TAS pods, and every head that needs preemption asks (twice).
        self._on_empty: dict[str, tuple[TopologySnapshot, dict[str, _Placement]]] = {}
        # Each head's last placement and what it was computed on, so its reservation later
        # in the cycle reuses it when no capacity was charged or released since (placement is
        # deterministic on the same usage). Every charge and release bumps the epoch.
        self._epoch = 0
        self._placed: dict[str, tuple[tuple[Any, ...], dict[str, TopologyAssignment]]] = {}
        # Per flavor, placements by request shape and workloads counted as gone, valid for
        # one snapshot and epoch (see _place_flavor).
        self._memo: dict[str, tuple[TopologySnapshot, int, dict[_MemoKey, _Placement]]] = {}
        self._parsed_requests: dict[tuple[str, bool], tuple[WorkloadDef, dict[str, PodSetRequest]]] = {}

    # -- objects ---------------------------------------------------------------------------

    def apply(self, obj: Mapping[str, Any]) -> bool:
        """Take a Topology, Node, Pod or AdmissionCheck; False for other kinds, and for a
        Node whose update changed nothing placement reads (its status heartbeats)."""
        kind, name = obj.get("kind"), _name(obj)
        if kind == "Topology":
            self.topologies[name] = dict(obj)
        elif kind == "Node":
            old = self.nodes.get(name)
            self.nodes[name] = dict(obj)
            if old is not None and _placement_view(old) == _placement_view(obj):
                return False  # a heartbeat: nothing a placement reads changed
        elif kind == "Pod":
            # Every pod event of a TAS workload (each of its pods created, bound, running,
            # finished) would otherwise rebuild the topology snapshots and requeue every queue.
            key, view = self._pod_key(obj), node_charge(obj)
            old = self.pods.get(key)
            if view is None:
                if self.pods.pop(key, None) is None:
                    return False
            else:
                self.pods[key] = dict(obj)
                if old is not None and node_charge(old) == view:
                    return False
        elif kind == "AdmissionCheck":
            if (obj.get("spec") or {}).get("controllerName") == keys.PROVISIONING_REQUEST_CONTROLLER:
                self.provisioning_checks.add(name)
            else:
                self.provisioning_checks.discard(name)
            return True
        else:
            return False
        self._version += 1
        return True

    def delete(self, kind: str, namespace: str | None, name: str) -> bool:
        if kind == "Topology":
            found = self.topologies.pop(name, None) is not None
        elif kind == "Node":
            found = self.nodes.pop(name, None) is not None
        elif kind == "Pod":
            found = self.pods.pop(f"{namespace or 'default'}/{name}", None) is not None
        elif kind == "AdmissionCheck":
            found = name in self.provisioning_checks
            self.provisioning_checks.discard(name)
            return found
        else:
            return False
        if found:
            self._version += 1
        return found

    @staticmethod
    def _pod_key(pod: Mapping[str, Any]) -> str:
        meta = pod.get("metadata") or {}
        return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"

    # -- sync ------------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        """False until every admitted workload's usage is accounted (after a restart)."""
        return self._synced

    def mark_synced(self) -> None:
        self._synced = True
        for _, _, snap in self._snaps.values():
            snap.mark_synced()

    # -- snapshots -------------------------------------------------------------------------

    def topology_levels(self) -> dict[str, tuple[str, ...]]:
        """Each known Topology's level node labels, top first."""
        out = {}
        for name, t in self.topologies.items():
            levels = (t.get("spec") or {}).get("levels") or ()
            out[name] = tuple(str(lv.get("nodeLabel") or "") for lv in levels)
        return out

    def snapshot_for(self, flavor: Flavor) -> TopologySnapshot | str:
        """The flavor's current TopologySnapshot, or why there is none."""
        topo_name = flavor.topology_name or ""
        topo = self.topologies.get(topo_name)
        if topo is None:
            return f'topology "{topo_name}" not found'
        cached = self._snaps.get(flavor.name)
        if cached is not None and cached[0] == flavor and cached[1] == self._version:
            return cached[2]
        snap = TopologySnapshot.build(topo, _flavor_object(flavor), self.nodes.values(), self.pods.values(),
                                      synced=self._synced)
        snap.balanced_placement = self.balanced_placement
        for key in sorted(self._charges):
            for ch in self._charges[key]:
                if self._counts_on(flavor.name, snap, ch):
                    snap.add_usage(ch.assignment, ch.per_pod)
        self._snaps[flavor.name] = (flavor, self._version, snap)
        return snap

    def _counts_on(self, flavor: str, snap: TopologySnapshot, ch: Charge) -> bool:
        """Whether a charge takes capacity in the flavor's snapshot: its own flavor's, and
        with ``TASHandleOverlappingFlavors`` any flavor's placed on nodes, when this
        flavor's topology ends at nodes too (their usage then meets on the same hosts)."""
        if ch.flavor == flavor:
            return True
        return self.overlapping_flavors and snap.tree.hostname_leaves \
            and bool(ch.assignment.levels) and ch.assignment.levels[-1] == keys.HOSTNAME_LABEL

    def _charge(self, key: str, charges: Sequence[Charge], sign: int) -> None:
        self._epoch += 1
        for fl, version, snap in self._snaps.values():
            if version != self._version:
                continue
            for ch in charges:
                if self._counts_on(fl.name, snap, ch):
                    if sign > 0:
                        snap.add_usage(ch.assignment, ch.per_pod)
                    else:
                        snap.remove_usage(ch.assignment, ch.per_pod)

    # -- placement -------------------------------------------------------------------------

    def _parsed(self, wl: WorkloadDef, implied: bool = False) -> dict[str, PodSetRequest]:
        """The workload's pod set requests by name, parsed once per workload object."""
        got = self._parsed_requests.get((wl.key, implied))
        if got is not None and got[0] is wl:
            return got[1]
        if len(self._parsed_requests) >= _PLACED_LIMIT:
            self._parsed_requests.clear()
        by_name = {r.name: r for r in podset_requests(wl.source, implied=implied)}
        self._parsed_requests[(wl.key, implied)] = (wl, by_name)
        return by_name

    def _per_pod(self, wl: WorkloadDef) -> dict[str, Resources]:
        """Each pod set's per-pod requests (whichever parse is at hand: the implied flag
        does not change them)."""
        got = self._parsed_requests.get((wl.key, True))
        by_name = got[1] if got is not None and got[0] is wl else self._parsed(wl)
        return {name: r.per_pod for name, r in by_name.items()}

    def _requests(self, wl: WorkloadDef, implied: bool, podsets: Iterable[PodSetAssignment]
                  ) -> tuple[list[PodSetRequest], str]:
        """The pod sets' requests at their assigned counts, and their text: equal texts ask
        for equal placements, whichever workload asks."""
        by_name = self._parsed(wl, implied)
        out = []
        for psa in podsets:
            req = by_name.get(psa.name)
            if req is not None:
                out.append(req if req.count == psa.count else replace(req, count=psa.count))
        return out, repr(out)

    def _place_flavor(self, wl: WorkloadDef, flavor: Flavor, podsets: Sequence[PodSetAssignment],
                      implied: bool, freed: frozenset[str] | None = frozenset(),
                      siblings: Sequence[Charge] = ()) -> dict[str, TopologyAssignment] | str:
        """Place on the flavor's usage; ``freed``: workloads counted as gone (None: all);
        ``siblings``: the workload's pod sets placed on its other TAS flavors this time.
        The answer is shared with every caller of the same shape: do not mutate."""
        snap = self.snapshot_for(flavor)
        if isinstance(snap, str):
            return snap
        reqs, shape = self._requests(wl, implied, podsets)
        for req in reqs:
            if not req.topology.is_tas and not req.implied:
                return f'Flavor "{flavor.name}" {ONLY_TAS}'
        taken = [(ch.assignment, ch.per_pod) for ch in siblings if self._counts_on(flavor.name, snap, ch)]
        if taken:
            # TASHandleOverlappingFlavors: a pod set must not take the room the workload's
            # pod sets on a sibling flavor take on the same nodes (not memoized: rare).
            gone = [(ch.assignment, ch.per_pod) for k in sorted(freed or ())
                    for ch in self._charges.get(k, ()) if self._counts_on(flavor.name, snap, ch)]
            result = snap.place(reqs, simulate_empty=freed is None, freed=gone, taken=taken)
            return result.reason if isinstance(result, NoFit) else result.assignments
        if freed is None and snap.synced:
            return self._place_on_empty(flavor.name, snap, reqs, shape)
        # Heads of one shape ask for the same placement until capacity is charged or
        # released (placement is deterministic on the same usage): search once per epoch.
        memo = self._memo.get(flavor.name)
        if memo is None or memo[0] is not snap or memo[1] != self._epoch or len(memo[2]) >= _ON_EMPTY_LIMIT:
            memo = self._memo[flavor.name] = (snap, self._epoch, {})
        key = (shape, freed)
        got = memo[2].get(key)
        if got is None:
            gone = [(ch.assignment, ch.per_pod) for k in sorted(freed or ())
                    for ch in self._charges.get(k, ()) if self._counts_on(flavor.name, snap, ch)]
            result = snap.place(reqs, simulate_empty=freed is None, freed=gone)
            got = memo[2][key] = result.reason if isinstance(result, NoFit) else result.assignments
        return got

    def _place_on_empty(self, flavor: str, snap: TopologySnapshot, reqs: list[PodSetRequest],
                        shape: str) -> _Placement:
        """Shared between callers: do not mutate."""
        memo = self._on_empty.get(flavor)
        if memo is None or memo[0] is not snap or len(memo[1]) >= _ON_EMPTY_LIMIT:
            memo = self._on_empty[flavor] = (snap, {})
        got = memo[1].get(shape)
        if got is None:
            result = snap.place(reqs, simulate_empty=True)
            got = memo[1][shape] = result.reason if isinstance(result, NoFit) else result.assignments
        return got

    def _delays(self, cq: ClusterQueueDef, flavor: str) -> bool:
        """The ClusterQueue runs a ProvisioningRequest check for this flavor (two-phase TAS)."""
        return any(r.name in self.provisioning_checks and (not r.on_flavors or flavor in r.on_flavors)
                   for r in cq.checks)

    def place(self, snapshot: Snapshot, entry: Entry, assignment: Assignment,
              podset_index: int, topology_name: str) -> dict[str, Any] | bool | None:
        wl = entry.workload
        cq = snapshot.cluster_queues.get(entry.cluster_queue)
        psa = assignment.podsets[podset_index]
        flavor = _tas_flavor(psa, snapshot.flavors)
        if cq is None or flavor is None:
            self._failures[wl.key] = f"ClusterQueue {entry.cluster_queue} not found"
            return None
        if self._delays(cq, flavor.name):
            return True  # first pass: quota only; the topology comes once the checks are Ready
        if not self._synced:
            self._failures[wl.key] = NOT_SYNCED_REASON
            return None
        same = [p for p in assignment.podsets if _tas_flavor(p, snapshot.flavors) == flavor]
        implied = tas_only(cq, snapshot.flavors)
        siblings = self._siblings(wl, assignment, podset_index, flavor, snapshot.flavors)
        found = self._place_flavor(wl, flavor, same, implied, siblings=siblings)
        if isinstance(found, str):
            self._failures[wl.key] = found
            return None
        self._failures.pop(wl.key, None)
        if len(self._placed) >= _PLACED_LIMIT:
            self._placed.clear()
        if not siblings:
            self._placed[wl.key] = (self._placement_inputs(wl, flavor, same, implied), found)
        return found[psa.name].to_v1beta2()

    def _siblings(self, wl: WorkloadDef, assignment: Assignment, podset_index: int, flavor: Flavor,
                  flavors: Mapping[str, Flavor]) -> list[Charge]:
        """The placements this pass gave the workload's earlier pod sets on other TAS flavors."""
        if not self.overlapping_flavors:
            return []
        per_pod: dict[str, Resources] | None = None
        out: list[Charge] = []
        for p in assignment.podsets[:podset_index]:
            other = _tas_flavor(p, flavors)
            if other is None or other == flavor or not p.topology_assignment:
                continue
            if per_pod is None:
                per_pod = self._per_pod(wl)
            ta = TopologyAssignment.from_v1beta2(p.topology_assignment)
            out.append(Charge(other.name, p.name, ta, per_pod.get(p.name, {})))
        return out

    def _placement_inputs(self, wl: WorkloadDef, flavor: Flavor, podsets: Sequence[PodSetAssignment],
                          implied: bool) -> tuple[Any, ...]:
        """What a placement depends on: the workload object, the flavor, the pod sets and
        counts, the implied-topology flag, the objects and every charge so far."""
        return (wl, flavor, tuple((p.name, p.count) for p in podsets), implied, self._version, self._epoch)

    def _place_again(self, wl: WorkloadDef, flavor: Flavor, podsets: Sequence[PodSetAssignment],
                     implied: bool, siblings: Sequence[Charge] = ()) -> dict[str, TopologyAssignment] | str:
        """The placement :meth:`place` found for this head, if nothing it read changed since;
        else a new one."""
        if siblings:
            self._placed.pop(wl.key, None)
            return self._place_flavor(wl, flavor, podsets, implied, siblings=siblings)
        last = self._placed.pop(wl.key, None)
        if last is not None:
            now = self._placement_inputs(wl, flavor, podsets, implied)
            if _unchanged(last[0], now, 1):
                return last[1]
            # Charged since (earlier admissions of the cycle), objects unchanged: keep the
            # placement if its domains still hold it, as Kueue checks the nominated one.
            snap = self.snapshot_for(flavor)
            if _unchanged(last[0][:-1], now[:-1], 2) and isinstance(snap, TopologySnapshot):
                per_pod = self._per_pod(wl)
                if snap.still_fits([(ta, per_pod.get(name, {})) for name, ta in last[1].items()]):
                    return last[1]
        return self._place_flavor(wl, flavor, podsets, implied)

    def place_freeing(self, snapshot: Snapshot, entry: Entry, assignment: Assignment, podset_index: int,
                      freed: frozenset[str] | None) -> dict[str, Any] | bool | None:
        """:meth:`place` with ``freed`` workloads counted as gone (None: every TAS workload);
        a simulation, so failures are not recorded for :meth:`explain`."""
        wl = entry.workload
        cq = snapshot.cluster_queues.get(entry.cluster_queue)
        flavor = _tas_flavor(assignment.podsets[podset_index], snapshot.flavors)
        if cq is None or flavor is None or not self._synced:
            return None
        if self._delays(cq, flavor.name):
            return True
        # The preemption search's last fit is asked for again to hold it: _place_flavor's
        # memo answers that until capacity is charged or released.
        same = [p for p in assignment.podsets if _tas_flavor(p, snapshot.flavors) == flavor]
        found = self._place_flavor(wl, flavor, same, tas_only(cq, snapshot.flavors), freed)
        if isinstance(found, str):
            return None
        return found[assignment.podsets[podset_index].name].to_v1beta2()

    def hold(self, key: str, workload: WorkloadDef, cq: ClusterQueueDef, flavors: Mapping[str, Flavor],
             assignment: Assignment, targets: Sequence[str]) -> str:
        """Charge, until :meth:`drop_holds`, where a preempting workload goes once its
        targets are gone; "" or why it no longer fits."""
        implied = tas_only(cq, flavors)
        groups: dict[str, list[PodSetAssignment]] = {}
        fl: dict[str, Flavor] = {}
        for psa in assignment.podsets:
            f = _tas_flavor(psa, flavors)
            if f is not None and not self._delays(cq, f.name):
                groups.setdefault(f.name, []).append(psa)
                fl[f.name] = f
        if not groups:
            return ""
        if not self._synced:
            return NOT_SYNCED_REASON
        per_pod = self._per_pod(workload)
        charges = []
        for fname, psas in groups.items():
            found = self._place_flavor(workload, fl[fname], psas, implied, frozenset(targets))
            if isinstance(found, str):
                return NO_LONGER_FITS
            charges += [Charge(fname, name, ta, per_pod.get(name, {})) for name, ta in found.items()]
        hold_key = _HOLD + key
        self.release(hold_key)
        self._set_charges(hold_key, charges)
        self._holds.add(hold_key)
        return ""

    def drop_holds(self) -> None:
        for key in sorted(self._holds):
            self.release(key)
        self._holds.clear()

    def closest_domains(self, wl: WorkloadDef, flavor: Flavor, podset: str, implied: bool = False,
                        limit: int = 3) -> dict[str, Any]:
        """For ``explain``: the flavor topology's domains, at the pod set's requested level, that
        take the most of its pods now (``{"levels": [...], "domains": [{"values", "fit"}]}``);
        empty when the flavor has no usable topology or the pod set asks for none."""
        snap = self.snapshot_for(flavor)
        req = next((r for r in podset_requests(wl.source, implied=implied) if r.name == podset), None)
        if isinstance(snap, str) or req is None or not (req.topology.is_tas or req.implied):
            return {}
        found = snap.closest_domains(req, limit)
        if not found:
            return {}
        depth = len(found[0][0])
        return {"levels": list(self.topologies_levels(flavor)[:depth]),
                "domains": [{"values": list(values), "fit": fit} for values, fit in found]}

    def topologies_levels(self, flavor: Flavor) -> tuple[str, ...]:
        topo = self.topologies.get(flavor.topology_name or "") or {}
        return tuple(str(lv.get("nodeLabel")) for lv in (topo.get("spec") or {}).get("levels") or ()
                     if isinstance(lv, dict))

    def explain(self, key: str) -> str:
        """Why the last placement of this workload failed ("" when it did not)."""
        return self._failures.get(key, "")

    # -- reservation and release -----------------------------------------------------------

    def reserve(self, key: str, workload: WorkloadDef, cq: ClusterQueueDef, flavors: Mapping[str, Flavor],
                assignment: Assignment) -> str:
        """Charge the placement of a workload about to reserve quota; "" or why it no longer fits.

        Placement is computed again on the current usage (keeping the flavors), so an
        admission earlier in the same cycle cannot be given the same capacity twice.
        """
        implied = tas_only(cq, flavors)
        groups: dict[str, list[PodSetAssignment]] = {}
        delayed: dict[str, str] = {}
        fl: dict[str, Flavor] = {}
        for psa in assignment.podsets:
            f = _tas_flavor(psa, flavors)
            if f is None:
                continue
            if self._delays(cq, f.name):
                psa.topology_assignment = None
                delayed[psa.name] = DELAYED_PENDING
                continue
            groups.setdefault(f.name, []).append(psa)
            fl[f.name] = f
        if not groups and not delayed and key not in self._charges:
            return ""  # no TAS flavor involved
        placed: dict[str, tuple[str, TopologyAssignment]] = {}
        per_pod = self._per_pod(workload)
        for fname, psas in groups.items():
            if not self._synced:
                return NOT_SYNCED_REASON
            siblings = [Charge(f, name, ta, per_pod.get(name, {})) for name, (f, ta) in placed.items()] \
                if self.overlapping_flavors else []
            found = self._place_again(workload, fl[fname], psas, implied, siblings)
            if isinstance(found, str):
                self._failures[key] = found
                return NO_LONGER_FITS
            for name, ta in found.items():
                placed[name] = (fname, ta)
        self.release(key)
        charges = []
        for psa in assignment.podsets:
            if psa.name in placed:
                fname, ta = placed[psa.name]
                psa.topology_assignment = ta.to_v1beta2()
                charges.append(Charge(fname, psa.name, ta, per_pod.get(psa.name, {})))
        self._set_charges(key, charges)
        if delayed:
            self._delayed[key] = delayed
        self._tas_only[key] = implied
        return ""

    def adopt(self, key: str, workload: WorkloadDef, assignment: Assignment,
              flavors: Mapping[str, Flavor]) -> None:
        """A workload already holding quota (read from its status): charge its assignments."""
        self.release(key)
        per_pod: dict[str, Any] | None = None  # read only for a topology assignment (most have none)
        charges = []
        for psa in assignment.podsets:
            raw = psa.topology_assignment
            if not raw:
                continue
            if per_pod is None:
                per_pod = self._per_pod(workload)
            f = _tas_flavor(psa, flavors)
            fname = f.name if f is not None else min(psa.flavors.values(), default="")
            ta = TopologyAssignment.from_any(raw)
            charges.append(Charge(fname, psa.name, ta, per_pod.get(psa.name, {})))
        self._set_charges(key, charges)
        status = workload.source.get("status") or {}
        delayed = {str(p.get("name") or "main"): str(p["delayedTopologyRequest"])
                   for p in (status.get("admission") or {}).get("podSetAssignments") or ()
                   if p.get("delayedTopologyRequest")}
        if delayed:
            self._delayed[key] = delayed
        unhealthy = status.get("unhealthyNodes") or []
        if unhealthy:
            self._unhealthy[key] = [str(n.get("name")) for n in unhealthy if n.get("name")]

    def _set_charges(self, key: str, charges: list[Charge]) -> None:
        if charges:
            self._charges[key] = charges
            self._charge(key, charges, 1)

    def release(self, key: str) -> None:
        """The workload no longer holds quota (finished, evicted, deleted)."""
        old = self._charges.pop(key, None)
        if old:
            self._charge(key, old, -1)
        self._delayed.pop(key, None)
        self._unhealthy.pop(key, None)
        self._tas_only.pop(key, None)

    def holds_admission(self, key: str) -> bool:
        """A PodSet still waits for its delayed topology assignment."""
        return any(v == DELAYED_PENDING for v in self._delayed.get(key, {}).values())

    def status_fields(self, key: str) -> tuple[dict[str, str], list[str]]:
        """(podset -> delayedTopologyRequest, unhealthy nodes) to write on the Workload status."""
        return dict(self._delayed.get(key, {})), list(self._unhealthy.get(key, []))

    def simple_view(self, raw: Mapping[str, Any], flavor_names: Iterable[str],
                    flavors: Mapping[str, Flavor]) -> dict[str, Any]:
        """The simulate view: every level spelled out when the flavor's snapshot is known."""
        ta = TopologyAssignment.from_any(raw)
        for fname in sorted(set(flavor_names)):
            f = flavors.get(fname)
            if f is not None and f.topology_name:
                snap = self.snapshot_for(f)
                if not isinstance(snap, str):
                    return snap.with_all_levels(ta).to_simple()
        return ta.to_simple()

    # -- node failure and second pass -------------------------------------------------------

    def fail_node(self, name: str, *, mark: bool = True) -> list[str]:
        """A node is gone (as if deleted, with its pods). Returns the workloads to evict now.

        Workloads with pods assigned there get the node recorded as unhealthy; the second
        pass replaces it. A workload that already lists a different unhealthy node is
        evicted (multiple TAS node failures). ``mark=False`` (``TASFailedNodeReplacement``
        off) only drops the node and its pods.
        """
        self.nodes.pop(name, None)
        for pkey in [k for k, p in self.pods.items() if (p.get("spec") or {}).get("nodeName") == name]:
            del self.pods[pkey]
        self._version += 1
        if not mark:
            return []
        return [key for key in self.workloads_on_node(name) if self.mark_unhealthy(key, name)]

    def workloads_on_node(self, name: str) -> dict[str, list[tuple[str, str]]]:
        """The workloads whose topology assignment names the node: key -> (PodSet, flavor)
        of each of their PodSets placed there."""
        out: dict[str, list[tuple[str, str]]] = {}
        for key in sorted(self._charges):
            for ch in self._charges[key]:
                if any(d.values and d.values[-1] == name for d in ch.assignment.domains):
                    out.setdefault(key, []).append((ch.podset, ch.flavor))
        return out

    def mark_unhealthy(self, key: str, name: str) -> bool:
        """Record the node as unhealthy for the workload; True when it must be evicted
        instead, because it already lists a different unhealthy node (Kueue's multiple
        node failures)."""
        marked = self._unhealthy.setdefault(key, [])
        if marked and name not in marked:
            return True
        if name not in marked:
            marked.append(name)
        return False

    def clear_unhealthy(self, key: str, name: str) -> bool:
        """The node is healthy again for the workload: drop it from its unhealthy nodes."""
        marked = self._unhealthy.get(key)
        if not marked or name not in marked:
            return False
        marked.remove(name)
        if not marked:
            del self._unhealthy[key]
        return True

    def unhealthy_nodes(self, key: str) -> list[str]:
        return list(self._unhealthy.get(key, ()))

    def failure_note(self, key: str, lost: str) -> EvictionNote:
        """How Kueue's node controller words the eviction :meth:`fail_node` asked for: the
        workload's nodes marked unhealthy before, then ``lost``."""
        nodes = [*self._unhealthy.get(key, ()), lost]
        return EvictionNote(multiple_node_failures_message(nodes), TAS_NODE_CONTROLLER)

    def second_pass_keys(self) -> list[str]:
        keys_ = set(self._unhealthy) | {k for k in self._delayed if self.holds_admission(k)}
        return sorted(keys_)

    def _view(self, rec: WorkloadRecord) -> dict[str, Any]:
        """The Workload object as the second-pass rules read it."""
        conds = []
        if rec.holds_quota:
            conds.append({"type": keys.WorkloadCondition.QUOTA_RESERVED, "status": "True"})
        if rec.status == ADMITTED:
            conds.append({"type": keys.WorkloadCondition.ADMITTED, "status": "True"})
        if rec.status == FINISHED:
            conds.append({"type": keys.WorkloadCondition.FINISHED, "status": "True"})
        if rec.status == PENDING and rec.evictions:
            conds.append({"type": keys.WorkloadCondition.EVICTED, "status": "True"})
        delayed = self._delayed.get(rec.key, {})
        psas = []
        for psa in (rec.assignment.podsets if rec.assignment is not None and rec.holds_quota else ()):
            item: dict[str, Any] = {"name": psa.name, "flavors": dict(psa.flavors), "count": psa.count}
            if psa.topology_assignment:
                item["topologyAssignment"] = psa.topology_assignment
            if psa.name in delayed:
                item["delayedTopologyRequest"] = delayed[psa.name]
            psas.append(item)
        status: dict[str, Any] = {
            "conditions": conds,
            "admissionChecks": [{"name": n, "state": s} for n, s in sorted(rec.checks.items())],
            "unhealthyNodes": [{"name": n} for n in self._unhealthy.get(rec.key, [])],
        }
        if rec.holds_quota:
            status["admission"] = {"clusterQueue": rec.cluster_queue or "", "podSetAssignments": psas}
        spec = dict(rec.wl.source.get("spec") or {})
        spec["active"] = not rec.deactivated
        return {"metadata": dict(rec.wl.source.get("metadata") or {}), "spec": spec, "status": status}

    def second_pass(self, rec: WorkloadRecord, cqs: Mapping[str, ClusterQueueDef],
                    flavors: Mapping[str, Flavor]) -> tuple[str, str]:
        """(outcome, message) of one second-pass attempt; outcome "" when none was needed."""
        view = self._view(rec)
        tas_flavors = [n for n, f in flavors.items() if f.topology_name]
        if not needs_second_pass(view, tas_flavors=tas_flavors):
            if rec.status not in (ADMITTED, QUOTA_RESERVED):
                self.release(rec.key)
            else:
                self._unhealthy.pop(rec.key, None)  # a stale mark (node not in any assignment)
            return "", ""
        cq = cluster_queue_for_entry(view, cqs)
        if isinstance(cq, NoFit):  # tested before anything reads the queue's cohort
            self._failures[rec.key] = cq.reason
            return SECOND_PASS_FAILED, cq.reason
        assert rec.assignment is not None
        if rec.status == QUOTA_RESERVED:
            return self._delayed_pass(rec, cq, flavors)
        return self._replace(rec, flavors)

    def _delayed_pass(self, rec: WorkloadRecord, cq: ClusterQueueDef,
                      flavors: Mapping[str, Flavor]) -> tuple[str, str]:
        assert rec.assignment is not None
        delayed = self._delayed.get(rec.key, {})
        implied = self._tas_only.get(rec.key, tas_only(cq, flavors))
        groups: dict[str, list[PodSetAssignment]] = {}
        fl: dict[str, Flavor] = {}
        for psa in rec.assignment.podsets:
            f = _tas_flavor(psa, flavors)
            if f is not None and delayed.get(psa.name) == DELAYED_PENDING:
                groups.setdefault(f.name, []).append(psa)
                fl[f.name] = f
        if not self._synced:
            return SECOND_PASS_FAILED, NOT_SYNCED_REASON
        placed: dict[str, tuple[str, TopologyAssignment]] = {}
        for fname, psas in groups.items():
            found = self._place_flavor(rec.wl, fl[fname], psas, implied)
            if isinstance(found, str):
                self._failures[rec.key] = found
                return SECOND_PASS_FAILED, found
            for name, ta in found.items():
                placed[name] = (fname, ta)
        per_pod = {r.name: r.per_pod for r in podset_requests(rec.wl.source)}
        charges = []
        for psa in rec.assignment.podsets:
            if psa.name in placed:
                fname, ta = placed[psa.name]
                psa.topology_assignment = ta.to_v1beta2()
                charges.append(Charge(fname, psa.name, ta, per_pod.get(psa.name, {})))
                delayed[psa.name] = DELAYED_READY
        self._charges.setdefault(rec.key, []).extend(charges)
        self._charge(rec.key, charges, 1)
        return SECOND_PASS_ADMIT, ""

    def _replace(self, rec: WorkloadRecord, flavors: Mapping[str, Flavor]) -> tuple[str, str]:
        assert rec.assignment is not None
        failed = self._unhealthy[rec.key][0]
        implied = self._tas_only.get(rec.key, False)
        requests = {r.name: r for r in podset_requests(rec.wl.source, implied=implied)}
        charges = self._charges.get(rec.key, [])
        new_charges: list[Charge] = []
        rewrites: dict[str, TopologyAssignment] = {}
        for ch in charges:
            f = flavors.get(ch.flavor)
            snap = self.snapshot_for(f) if f is not None else "flavor not found"
            req = requests.get(ch.podset)
            psa = next((p for p in rec.assignment.podsets if p.name == ch.podset), None)
            if isinstance(snap, str) or req is None or psa is None:
                new_charges.append(ch)
                continue
            out = replace_failed_node(ch.assignment, failed, snap, replace(req, count=psa.count))
            if isinstance(out, NoReplacement):
                return SECOND_PASS_EVICT, out.message
            rewrites[ch.podset] = out.assignment
            new_charges.append(replace(ch, assignment=out.assignment))
        self._charge(rec.key, charges, -1)
        self._charges[rec.key] = new_charges
        self._charge(rec.key, new_charges, 1)
        for psa in rec.assignment.podsets:
            if psa.name in rewrites:
                psa.topology_assignment = rewrites[psa.name].to_v1beta2()
        self._unhealthy.pop(rec.key, None)
        return SECOND_PASS_UPDATED, ""
