"""Reading TAS facts off Workload objects: usage, node to replace, second-pass eligibility.

These are the Workload-side rules that the cycle, the node controller and the extender
must agree on, so they live next to the placement they feed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, TypeVar

from pykueue.api import keys

from .assignment import TopologyAssignment
from .request import PodSetRequest
from .resources import Resources
from .snapshot import NoFit

T = TypeVar("T")

DELAYED_PENDING = "Pending"
DELAYED_READY = "Ready"


def _condition_true(workload: Mapping[str, Any], ctype: str) -> bool:
    for cond in (workload.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return bool(cond.get("status") == "True")
    return False


def podset_assignments(workload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    admission = (workload.get("status") or {}).get("admission") or {}
    found: list[Mapping[str, Any]] = admission.get("podSetAssignments") or []
    return found


def topology_assignment(psa: Mapping[str, Any]) -> TopologyAssignment | None:
    raw = psa.get("topologyAssignment")
    return TopologyAssignment.from_any(raw) if raw else None


def node_to_replace(workload: Mapping[str, Any]) -> str | None:
    """The node whose pods must move: ``status.unhealthyNodes[0]`` (HEAD), else the v0.12 annotation."""
    unhealthy = (workload.get("status") or {}).get("unhealthyNodes") or []
    if unhealthy:
        return str(unhealthy[0]["name"])
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(keys.NODE_TO_REPLACE_ANNOTATION)
    return str(value) if value else None


def assigned_nodes(workload: Mapping[str, Any]) -> set[str]:
    """Lowest-level values of every topology assignment (hostnames for hostname topologies)."""
    out: set[str] = set()
    for psa in podset_assignments(workload):
        ta = topology_assignment(psa)
        if ta is not None:
            out.update(values for values, _ in ta.leaf_values())
    return out


def needs_second_pass(workload: Mapping[str, Any], *, tas_flavors: Collection[str] | None = None) -> bool:
    """Kueue's NeedsSecondPass, including the v0.12 fix #5591.

    Never for Finished, Evicted or deactivated workloads, nor without a quota reservation.
    Then either (delayed topology) admission checks exist and are all Ready, a PodSet on a
    TAS flavor waits with ``delayedTopologyRequest: Pending`` and no assignment, and the
    workload is not Admitted; or (node failure) it is Admitted and the node to replace
    appears in one of its assignments.
    """
    if _condition_true(workload, keys.WorkloadCondition.FINISHED):
        return False
    if _condition_true(workload, keys.WorkloadCondition.EVICTED):
        return False
    if not _condition_true(workload, keys.WorkloadCondition.QUOTA_RESERVED):
        return False
    if (workload.get("spec") or {}).get("active") is False:
        return False
    admitted = _condition_true(workload, keys.WorkloadCondition.ADMITTED)
    psas = podset_assignments(workload)
    if not admitted:
        checks = (workload.get("status") or {}).get("admissionChecks") or []
        if not checks or any(c.get("state") != keys.CheckState.READY for c in checks):
            return False
        for psa in psas:
            if psa.get("delayedTopologyRequest") != DELAYED_PENDING or psa.get("topologyAssignment"):
                continue
            flavors = set((psa.get("flavors") or {}).values())
            if tas_flavors is None or flavors & set(tas_flavors):
                return True
        return False
    node = node_to_replace(workload)
    return node is not None and node in assigned_nodes(workload)


def cluster_queue_for_entry(workload: Mapping[str, Any], cluster_queues: Mapping[str, T]) -> T | NoFit:
    """The ClusterQueue of a (second-pass) entry, or NoFit when the cache lacks it (#5138).

    The caller must test for NoFit before looking at any cohort of the result.
    """
    admission = (workload.get("status") or {}).get("admission") or {}
    name = str(admission.get("clusterQueue") or "")
    cq = cluster_queues.get(name)
    if cq is None:
        return NoFit("", f"ClusterQueue {name} not found")
    return cq


def podset_requests(
    workload: Mapping[str, Any],
    *,
    implied: bool = False,
    podset_updates: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[PodSetRequest]:
    """Placement requests of all PodSets, merging admission-check podSetUpdates by name.

    ``implied`` marks a TAS-only ClusterQueue (PodSets without annotations are unconstrained).
    """
    out = []
    for ps in (workload.get("spec") or {}).get("podSets") or []:
        update = (podset_updates or {}).get(str(ps.get("name"))) or {}
        out.append(
            PodSetRequest.from_podset(
                ps,
                implied=implied,
                extra_node_selector=update.get("nodeSelector"),
                extra_tolerations=tuple(update.get("tolerations") or ()),
            )
        )
    return out


def workload_tas_usage(
    workload: Mapping[str, Any], flavor_name: str | None = None
) -> list[tuple[TopologyAssignment, Resources]]:
    """(assignment, per-pod requests) of each assigned PodSet, for add/remove_usage.

    Each PodSet is charged with its *own* template requests (fix #5325); with
    ``flavor_name`` only PodSets admitted on that flavor are returned.
    """
    per_pod = {p.name: p.per_pod for p in podset_requests(workload)}
    out = []
    for psa in podset_assignments(workload):
        ta = topology_assignment(psa)
        if ta is None:
            continue
        if flavor_name is not None and flavor_name not in set((psa.get("flavors") or {}).values()):
            continue
        out.append((ta, per_pod.get(str(psa.get("name")), {})))
    return out
