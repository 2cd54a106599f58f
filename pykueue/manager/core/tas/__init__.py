"""Topology Aware Scheduling (TAS): pure placement of PodSets onto a node topology.

Kueue-compatible behaviour, synchronous and deterministic, no I/O. One
:class:`TopologySnapshot` per TAS ResourceFlavor::

    snap = TopologySnapshot.build(topology, flavor, nodes, pods)   # Kubernetes object dicts
    for assignment, per_pod in workload_tas_usage(admitted_wl, "tas-flavor"):
        snap.add_usage(assignment, per_pod)                        # admitted workloads
    result = snap.place(podset_requests(pending_wl))               # Placed | NoFit
    if result:                                                      # Placed is truthy
        ta = result.assignments["main"]
        ta.to_v1beta2()   # status.admission.podSetAssignments[].topologyAssignment
        ta.to_simple()    # {"levels": [...], "domains": [{"values": [...], "count": N}]}
        snap.with_all_levels(ta).to_simple()   # same, every level spelled out (simulate view)
    else:
        print(result.reason)   # e.g. 'topology "default" allows to fit only 3 out of 4 pod(s)'

Node failure — ONE rule, shared by the queue manager's second pass and the kube-scheduler
extender at bind time::

    node = node_to_replace(workload)            # status.unhealthyNodes[0] / v0.12 annotation
    rules = NodeFailureRules.from_gates(config_feature_gates)
    workload_health(node_obj, now, rules, progressing_pods=..., podset_tolerations=...)
    # Health.FAILED (mark unhealthy) / HEALTHY (clear the mark) / WAIT, as Kueue v0.19.2
    out = replace_failed_node(assignment, node, snap, podset_request)
    # Replacement(assignment=<rewritten>, added=...)  or  NoReplacement(reason="NodeFailures")

Profiles follow Kueue HEAD defaults: BestFit for required/preferred, LeastFreeCapacity for
unconstrained, implied and slice-only requests. No-fit messages use Kueue's wording,
including the ". Total nodes: N; excluded: ..." statistics.

Second pass (TAS + ProvisioningRequest, node replacement): :func:`needs_second_pass`;
:func:`cluster_queue_for_entry` returns NoFit for a ClusterQueue missing from the cache.
A snapshot built with ``synced=False`` refuses to place until :meth:`TopologySnapshot.mark_synced`.
"""

from __future__ import annotations

from .assignment import AssignmentError, DomainAssignment, TopologyAssignment
from .node_health import Health, NodeFailureRules, lost_outright, recheck_after, workload_health
from .placement import SearchInput
from .replacement import NODE_FAILURE_DELAY, NoReplacement, Replacement, is_node_failed, replace_failed_node
from .request import PodSetRequest, SliceLayer, TopologyRequest
from .snapshot import NOT_SYNCED_REASON, NoFit, Placed, PlacementResult, TopologySnapshot
from .workload import (
    assigned_nodes,
    cluster_queue_for_entry,
    needs_second_pass,
    node_to_replace,
    podset_requests,
    workload_tas_usage,
)

__all__ = [
    "NODE_FAILURE_DELAY",
    "NOT_SYNCED_REASON",
    "AssignmentError",
    "DomainAssignment",
    "Health",
    "NoFit",
    "NoReplacement",
    "NodeFailureRules",
    "Placed",
    "PlacementResult",
    "PodSetRequest",
    "Replacement",
    "SearchInput",
    "SliceLayer",
    "TopologyAssignment",
    "TopologyRequest",
    "TopologySnapshot",
    "assigned_nodes",
    "cluster_queue_for_entry",
    "is_node_failed",
    "lost_outright",
    "needs_second_pass",
    "node_to_replace",
    "podset_requests",
    "recheck_after",
    "replace_failed_node",
    "workload_health",
    "workload_tas_usage",
]
