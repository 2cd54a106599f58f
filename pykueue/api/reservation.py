"""What of a Workload's ``status.admission`` may change while its quota stays reserved.

Kueue's API lets only the topology fields of a reserved admission change (the topology is
written or replaced after the reservation); anything else needs the reservation released
first. The webhook enforces it and the manager's status writer follows it.
"""

from __future__ import annotations

from typing import Any

TOPOLOGY_FIELDS = ("topologyAssignment", "delayedTopologyRequest")


def _without_topology(admission: Any) -> dict[str, Any]:
    out = dict(admission) if isinstance(admission, dict) else {}
    out["podSetAssignments"] = [
        {k: v for k, v in p.items() if k not in TOPOLOGY_FIELDS} if isinstance(p, dict) else p
        for p in out.get("podSetAssignments") or ()
    ]
    return out


def admission_changed(old: Any, new: Any) -> bool:
    """True when ``new`` differs from ``old`` in more than its topology fields."""
    return _without_topology(old) != _without_topology(new)
