"""``pykueue explain`` names the check a workload waits on and what its request says."""

from __future__ import annotations

import copy

from pykueue.manager.scenario.cluster_snapshot import ClusterListing
from pykueue.manager.scenario.explain import admission_checks, explain, text
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
    # Accepted, and what the autoscaler still tries: the Provisioned=False condition says more.
    assert checks == [
        {"name": "prov", "state": "Pending", "message": "Reset to Pending after eviction. Previously: Retry",
         "provisioningRequest": {"name": "wl-prov-2", "attempt": 2,
                                 "state": "NotProvisioned (CapacityIsNotFound)",
                                 "message": "Capacity is not found, CA will try to find it later."}},
        {"name": "manual", "state": "Ready", "message": ""}]
    only_accepted = copy.deepcopy(items)
    only_accepted["ProvisioningRequest"][1]["status"]["conditions"].pop(1)
    [entry] = explain(ClusterListing(only_accepted, base.config, now=NOW), ["team/wl"])
    assert entry["admissionChecks"][0]["provisioningRequest"]["state"] == "Accepted"
    [entry] = explain(listing, ["team/wl"])
    rendered = text(entry)
    assert "Admission check prov: Pending: Reset to Pending after eviction. Previously: Retry" in rendered
    assert ("  ProvisioningRequest wl-prov-2 (attempt 2): NotProvisioned (CapacityIsNotFound): "
            "Capacity is not found, CA will try to find it later.") in rendered


def test_a_reader_that_may_not_list_provisioning_requests_still_gets_the_rest() -> None:
    import asyncio

    import pytest

    from pykueue.kube import resources as res
    from pykueue.kube.client import ApiError
    from pykueue.live_cluster import ClusterReadError, _list_kind

    class Forbidden:
        async def get(self, path: str, query: object = None) -> dict[str, object]:
            raise ApiError(403, "Forbidden", "cannot list")

    assert asyncio.run(_list_kind(Forbidden(), res.PROVISIONING_REQUESTS)) == []  # type: ignore[arg-type]
    with pytest.raises(ClusterReadError, match="cannot list workloads"):
        asyncio.run(_list_kind(Forbidden(), res.WORKLOADS))  # type: ignore[arg-type]
