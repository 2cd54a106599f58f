"""Second-pass eligibility (TAS + ProvisioningRequest, node replacement) and its guards."""

from __future__ import annotations

from typing import Any

from pykueue.manager.core.tas import NoFit, cluster_queue_for_entry, needs_second_pass

from .fixtures import HOST


def condition(ctype: str, status: str = "True") -> dict[str, str]:
    return {"type": ctype, "status": status}


def delayed_workload(check_state: str = "Ready", **status: Any) -> dict[str, Any]:
    wl: dict[str, Any] = {
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": {"podSets": [{"name": "main", "count": 2}]},
        "status": {
            "conditions": [condition("QuotaReserved")],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": "tas-flavor"}, "delayedTopologyRequest": "Pending"}
                ],
            },
            "admissionChecks": [{"name": "prov", "state": check_state}],
        },
    }
    wl["status"].update(status)
    return wl


def admitted_workload(unhealthy: str | None) -> dict[str, Any]:
    wl = delayed_workload()
    wl["status"]["conditions"].append(condition("Admitted"))
    psa = wl["status"]["admission"]["podSetAssignments"][0]
    psa["delayedTopologyRequest"] = "Ready"
    psa["topologyAssignment"] = {
        "levels": [HOST],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [{"individual": {"prefix": "kwok-node-", "roots": ["0", "1"]}}],
                "podCounts": {"universal": 1},
            }
        ],
    }
    if unhealthy:
        wl["status"]["unhealthyNodes"] = [{"name": unhealthy}]
    return wl


def test_delayed_topology_with_all_checks_ready_needs_second_pass() -> None:
    assert needs_second_pass(delayed_workload())
    assert needs_second_pass(delayed_workload(), tas_flavors={"tas-flavor"})


def test_not_ready_checks_wait() -> None:
    assert not needs_second_pass(delayed_workload(check_state="Pending"))


def test_non_tas_flavor_does_not_need_second_pass() -> None:
    assert not needs_second_pass(delayed_workload(), tas_flavors={"other"})


def test_finished_evicted_or_unreserved_never_need_second_pass_regression_5591() -> None:
    finished = delayed_workload()
    finished["status"]["conditions"].append(condition("Finished"))
    evicted = delayed_workload()
    evicted["status"]["conditions"].append(condition("Evicted"))
    unreserved = delayed_workload()
    unreserved["status"]["conditions"] = [condition("QuotaReserved", "False")]
    deactivated = delayed_workload()
    deactivated["spec"]["active"] = False
    for wl in (finished, evicted, unreserved, deactivated):
        assert not needs_second_pass(wl)


def test_existing_assignment_means_no_second_pass() -> None:
    wl = delayed_workload()
    wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = {
        "levels": [HOST],
        "slices": [
            {
                "domainCount": 1,
                "valuesPerLevel": [{"universal": "kwok-node-0"}],
                "podCounts": {"universal": 2},
            }
        ],
    }
    assert not needs_second_pass(wl)


def test_admitted_workload_with_unhealthy_assigned_node_needs_second_pass() -> None:
    assert needs_second_pass(admitted_workload("kwok-node-1"))


def test_unhealthy_node_outside_the_assignment_is_ignored_regression_5591() -> None:
    assert not needs_second_pass(admitted_workload("kwok-node-5"))
    assert not needs_second_pass(admitted_workload(None))


def test_evicted_admitted_workload_with_failed_node_is_not_retried() -> None:
    wl = admitted_workload("kwok-node-1")
    wl["status"]["conditions"].append(condition("Evicted"))
    assert not needs_second_pass(wl)


def test_missing_cluster_queue_is_no_fit_before_any_cohort_lookup_regression_5138() -> None:
    class CQ:
        @property
        def cohort(self) -> str:
            raise AssertionError("cohort must not be read for a missing queue")

    entry = cluster_queue_for_entry(delayed_workload(), {})
    assert isinstance(entry, NoFit)
    assert entry.reason == "ClusterQueue cq not found"
    cq = CQ()
    assert cluster_queue_for_entry(delayed_workload(), {"cq": cq}) is cq
