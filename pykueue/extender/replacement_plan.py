"""Where a failed node's pods go: the queue manager's rule, fed from the API.

The choice itself is ``manager.core.tas.replacement.replace_failed_node`` — one rule for
the manager's second pass and for the extender — which needs a capacity snapshot of the
PodSet's TAS flavor. This module gathers that snapshot's inputs through the port (the
flavor, its Topology, nodes, bound pods for non-TAS usage, and every admitted Workload
of the flavor for TAS usage) and then plans purely. The reads are cluster-wide, but they
only happen for a pod that replaces a failed node, which is rare.

Like Kueue, the plan moves the failed node's whole count at once (possibly split over
several nodes); the extender then only accepts a bind onto a planned node.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON
from pykueue.extender.port import ClusterPort
from pykueue.manager.core.tas.assignment import AssignmentError, TopologyAssignment, decode_v1beta2
from pykueue.manager.core.tas.replacement import NoReplacement, Replacement, replace_failed_node
from pykueue.manager.core.tas.request import PodSetRequest
from pykueue.manager.core.tas.snapshot import TopologySnapshot


@dataclass(frozen=True)
class PlanInputs:
    flavor: JSON
    topology: JSON
    nodes: list[JSON]
    bound_pods: list[JSON]
    workloads: list[JSON]


def _flavor_name(psa: Mapping[str, Any]) -> str | None:
    names = sorted({str(v) for v in (psa.get("flavors") or {}).values()})
    return names[0] if names else None


async def load_plan_inputs(
    port: ClusterPort, workload: Mapping[str, Any], psa_index: int
) -> PlanInputs | str:
    """The snapshot inputs, or why they cannot be had."""
    psa = workload["status"]["admission"]["podSetAssignments"][psa_index]
    flavor_name = _flavor_name(psa)
    if flavor_name is None:
        return "the podset assignment names no flavor"
    flavor = await port.get_resource_flavor(flavor_name)
    if flavor is None:
        return f"ResourceFlavor {flavor_name} not found"
    topology_name = (flavor.get("spec") or {}).get("topologyName")
    if not topology_name:
        return f"ResourceFlavor {flavor_name} has no topologyName"
    topology = await port.get_topology(str(topology_name))
    if topology is None:
        return f"Topology {topology_name} not found"
    nodes, pods, workloads = await asyncio.gather(
        port.list_nodes(), port.list_bound_pods(), port.list_workloads()
    )
    return PlanInputs(flavor, topology, nodes, pods, workloads)


def _holds_quota(workload: Mapping[str, Any]) -> bool:
    status = workload.get("status") or {}
    if not status.get("admission"):
        return False
    finished = any(
        c.get("type") == keys.WorkloadCondition.FINISHED and c.get("status") == "True"
        for c in status.get("conditions") or []
        if isinstance(c, Mapping)
    )
    return not finished


def _podset_spec(workload: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    for ps in (workload.get("spec") or {}).get("podSets") or []:
        if isinstance(ps, Mapping) and ps.get("name") == name:
            return ps
    return None


def build_snapshot(inputs: PlanInputs) -> TopologySnapshot:
    """Capacity of the flavor minus non-TAS pods and every admitted TAS assignment on it.

    As Kueue's ``TASHandleOverlappingFlavors`` (on by default; the extender reads no
    Configuration): when the topology ends at nodes, assignments of other flavors that end
    at nodes count too, since flavors may share nodes."""
    snap = TopologySnapshot.build(inputs.topology, inputs.flavor, inputs.nodes, inputs.bound_pods)
    flavor_name = str((inputs.flavor.get("metadata") or {}).get("name", ""))
    for wl in inputs.workloads:
        if not _holds_quota(wl):
            continue
        for psa in wl["status"]["admission"].get("podSetAssignments") or []:
            raw = psa.get("topologyAssignment")
            spec = _podset_spec(wl, str(psa.get("name")))
            if not raw or spec is None:
                continue
            try:
                assignment = decode_v1beta2(raw)
                if _flavor_name(psa) != flavor_name and not (
                        snap.tree.hostname_leaves and assignment.levels[-1:] == (keys.HOSTNAME_LABEL,)):
                    continue
                snap.add_usage(assignment, PodSetRequest.from_podset(spec).per_pod)
            except (AssignmentError, ValueError, TypeError, KeyError):
                continue  # one broken Workload must not block replacing another's node
    return snap


def plan_replacement(
    inputs: PlanInputs,
    workload: Mapping[str, Any],
    podset: str,
    assignment: TopologyAssignment,
    failed_node: str,
) -> Replacement | NoReplacement:
    spec = _podset_spec(workload, podset)
    if spec is None:
        return NoReplacement(failed_node, f"podset {podset} is not in the Workload spec")
    request = PodSetRequest.from_podset(spec)
    return replace_failed_node(assignment, failed_node, build_snapshot(inputs), request)
