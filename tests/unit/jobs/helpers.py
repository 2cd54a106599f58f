"""Shared fixtures for lifecycle tests: an admitted Workload and a flavor with node labels."""

from __future__ import annotations

from typing import Any

FLAVORS: dict[str, Any] = {
    "on-demand": {
        "spec": {
            "nodeLabels": {"instance-type": "on-demand"},
            "tolerations": [{"key": "spot", "operator": "Exists"}],
        }
    },
}


def admitted(workload: dict[str, Any], podsets: list[str], cq: str = "cq") -> dict[str, Any]:
    """``workload`` with an admission assigning flavor on-demand to every podset."""
    counts = {ps["name"]: ps["count"] for ps in workload["spec"]["podSets"]}
    return {
        **workload,
        "status": {
            "admission": {
                "clusterQueue": cq,
                "podSetAssignments": [
                    {"name": name, "count": counts[name], "flavors": {"cpu": "on-demand"}} for name in podsets
                ],
            },
            "conditions": [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "True"},
            ],
        },
    }
