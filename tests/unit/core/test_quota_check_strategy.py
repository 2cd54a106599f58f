"""``resources.quotaCheckStrategy`` and resources a ClusterQueue does not cover.

Kueue v0.19.2's flavor assigner skips a resource no resource group covers when it is
requested at 0 (#8079), and under IgnoreUndeclared (gate QuotaCheckStrategy) whatever is
requested of it: it gets no flavor, counts for no quota, and the Workload's admission lists
neither flavor nor usage for it. Under BlockUndeclared (the default) a non-zero request of
it is a NoFit. The ``kueue_*`` cases are Kueue's: ``pkg/scheduler/flavorassigner/
flavorassigner_test.go`` (the zero-request cases) and ``test/integration/singlecluster/
scheduler/quotacheckstrategy`` (IgnoreUndeclared; the scenario files ``quota-check-*`` hold
the rest).
"""

from __future__ import annotations

from typing import Any

from pykueue.manager.core.config import config_from
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.status import workload_status
from pykueue.manager.core.workload_state import ADMITTED, PENDING


def _core(config: dict[str, Any] | None = None, covered: tuple[str, ...] = ("cpu",),
          afs: bool = False) -> QueueingCore:
    core = QueueingCore(config_from(config))
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "default"}, "spec": {}})
    spec: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": [{
        "coveredResources": list(covered),
        "flavors": [{"name": "default", "resources": [{"name": r, "nominalQuota": 10} for r in covered]}]}]}
    if afs:
        spec["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
    core.apply({"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec})
    core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq"}})
    return core


def _wl(name: str, requests: dict[str, str], count: int = 1) -> dict[str, Any]:
    return {"kind": "Workload", "metadata": {"name": name, "namespace": "ns"}, "spec": {
        "queueName": "lq", "podSets": [{"name": "main", "count": count, "template": {"spec": {
            "containers": [{"name": "c", "resources": {"requests": requests}}]}}}]}}


def _admission(core: QueueingCore, key: str) -> dict[str, Any]:
    rec = core.workload(key)
    assert rec is not None
    (psa,) = workload_status(rec, 0.0)["admission"]["podSetAssignments"]
    return {"flavors": psa["flavors"], "resourceUsage": psa["resourceUsage"]}


IGNORE = {"resources": {"quotaCheckStrategy": "IgnoreUndeclared"}}


def test_kueue_zero_resource_request_not_in_cluster_queue_should_succeed() -> None:
    core = _core()
    core.apply(_wl("wl", {"cpu": "1", "example.com/gpu": "0"}))
    core.run_until_idle()
    assert core.workload("ns/wl").status == ADMITTED
    assert _admission(core, "ns/wl") == {"flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}}
    assert core.usage_of("cq") == {("default", "cpu"): 1000}


def test_kueue_zero_resource_request_defined_in_cluster_queue_should_get_flavor_assigned() -> None:
    core = _core(covered=("cpu", "example.com/gpu"))
    core.apply(_wl("wl", {"cpu": "1", "example.com/gpu": "0"}))
    core.run_until_idle()
    assert _admission(core, "ns/wl") == {"flavors": {"cpu": "default", "example.com/gpu": "default"},
                                         "resourceUsage": {"cpu": "1", "example.com/gpu": "0"}}


def test_kueue_ignore_undeclared_resources_and_their_entry_penalty() -> None:
    """Admitted; the undeclared resource has no flavor nor usage in the admission, the
    ClusterQueue counts cpu only, and the LocalQueue's admission fair sharing penalty is the
    same as without it."""
    afs = {"admissionFairSharing": {"usageHalfLifeTime": "1h", "usageSamplingInterval": "100ms",
                                    "resourceWeights": {"example.com/gpu": 1000}}}
    core = _core({**IGNORE, **afs}, afs=True)
    core.apply(_wl("undeclared-penalty-wl", {"cpu": "2", "example.com/gpu": "100"}))
    core.run_until_idle()
    assert core.workload("ns/undeclared-penalty-wl").status == ADMITTED
    assert _admission(core, "ns/undeclared-penalty-wl") == {"flavors": {"cpu": "default"},
                                                           "resourceUsage": {"cpu": "2"}}
    assert core.usage_of("cq") == {("default", "cpu"): 2000}
    declared_only = _core({**IGNORE, **afs}, afs=True)
    declared_only.apply(_wl("undeclared-penalty-wl", {"cpu": "2"}))
    declared_only.run_until_idle()
    assert core.local_queue_usage("ns/lq") == declared_only.local_queue_usage("ns/lq") > 0


def test_kueue_gate_disabled_does_not_admit_a_workload_with_undeclared_resources() -> None:
    core = _core({**IGNORE, "featureGates": {"QuotaCheckStrategy": False}})
    core.apply(_wl("gate-off-wl", {"cpu": "2", "example.com/gpu": "100"}))
    core.run_until_idle()
    rec = core.workload("ns/gate-off-wl")
    assert rec is not None and rec.status == PENDING
    assert "resource example.com/gpu unavailable in ClusterQueue" in rec.reason


# -- pykueue's own cases -------------------------------------------------------------------


def test_block_undeclared_keeps_a_nonzero_undeclared_request_out() -> None:
    core = _core({"resources": {"quotaCheckStrategy": "BlockUndeclared"}})
    core.apply(_wl("wl", {"cpu": "1", "example.com/gpu": "1"}))
    core.run_until_idle()
    assert core.workload("ns/wl").status == PENDING


def test_ignored_resources_do_not_limit_how_many_fit() -> None:
    """Only the declared resource decides: 10 cpu admit five 2-cpu workloads whatever else
    they ask for, and the sixth waits for cpu."""
    core = _core(IGNORE)
    for i in range(6):
        core.apply(_wl(f"wl{i}", {"cpu": "2", "memory": "1Ti", "example.com/gpu": "100"}))
    core.run_until_idle()
    statuses = [core.workload(f"ns/wl{i}").status for i in range(6)]
    assert statuses == [ADMITTED] * 5 + [PENDING]
    rec = core.workload("ns/wl5")
    assert rec is not None and "insufficient unused quota for cpu" in rec.reason


def test_a_pod_set_asking_only_for_undeclared_resources_is_admitted_without_flavors() -> None:
    """Nothing it asks for is counted: Kueue's assignment for it is a Fit with no flavors."""
    core = _core(IGNORE)
    core.apply(_wl("wl", {"example.com/gpu": "4"}))
    core.run_until_idle()
    assert core.workload("ns/wl").status == ADMITTED
    assert _admission(core, "ns/wl") == {"flavors": {}, "resourceUsage": {}}
