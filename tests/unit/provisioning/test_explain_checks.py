"""``pykueue explain`` names the check a workload waits on and what its request says."""

from __future__ import annotations

import copy

from manager.scenario.cluster_snapshot import ClusterListing
from manager.scenario.explain import admission_checks, explain, text
from tests.unit.core.test_what_if import NOW, _admitted, _listing


def _request(name: str, *conditions: dict[str, str]) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "team"}, "status": {"conditions": list(conditions)}}


def test_a_provisioning_check_shows_its_latest_request_and_what_the_autoscaler_said() -> None:
    waiting = _admitted("team", "wl", "cq", "1")
    waiting["status"]["conditions"] = waiting["status"]["conditions"][:1]  # quota reserved, not admitted
    waiting["status"]["admissionChecks"] = [
        {"name": "prov", "state": "Pending", "message": "Reset to Pending after eviction. Previously: Retry"},
        {"name": "manual", "state": "Ready", "message": ""}]
    base = _listing(workloads=(waiting,))
    items = {**base.items,
             "AdmissionCheck": [{"metadata": {"name": "prov"},
                                 "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}},
                                {"metadata": {"name": "manual"},
                                 "spec": {"controllerName": "example.com/x"}}],
             "ProvisioningRequest": [
                 _request("wl-prov-1", {"type": "Failed", "status": "True", "message": "no capacity"}),
                 _request("wl-prov-2", {"type": "Accepted", "status": "True", "message": ""},
                          {"type": "Provisioned", "status": "False", "reason": "CapacityIsNotFound",
                           "message": "Capacity is not found, CA will try to find it later."}),
                 _request("other-prov-3")]}
    listing = ClusterListing(items, base.config, now=NOW)
    checks = admission_checks(listing, "team/wl")
    assert checks == [
        {"name": "prov", "state": "Pending", "message": "Reset to Pending after eviction. Previously: Retry",
         "provisioningRequest": {"name": "wl-prov-2", "attempt": 2, "state": "Accepted", "message": ""}},
        {"name": "manual", "state": "Ready", "message": ""}]
    not_accepted = copy.deepcopy(items)
    not_accepted["ProvisioningRequest"][1]["status"]["conditions"].pop(0)
    [entry] = explain(ClusterListing(not_accepted, base.config, now=NOW), ["team/wl"])
    rendered = text(entry)
    assert "Admission check prov: Pending: Reset to Pending after eviction. Previously: Retry" in rendered
    assert ("  ProvisioningRequest wl-prov-2 (attempt 2): NotProvisioned (CapacityIsNotFound): "
            "Capacity is not found, CA will try to find it later.") in rendered
