"""``spec.active``: a user deactivates or reactivates a workload; the core's own
deactivations (a rejected check) are not undone by a copy read before they were stored."""

from __future__ import annotations

from typing import Any

from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.workload_state import ADMITTED, PENDING, QUOTA_RESERVED


def _core(checks: list[str] | None = None) -> QueueingCore:
    core = QueueingCore()
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {}})
    flavors = [{"name": "rf", "resources": [{"name": "cpu", "nominalQuota": 1}]}]
    spec: dict[str, Any] = {"namespaceSelector": {},
                            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}]}
    for check in checks or ():
        core.apply({"kind": "AdmissionCheck", "metadata": {"name": check}, "spec": {"controllerName": "x"}})
        spec["admissionChecks"] = checks
    core.apply({"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec})
    core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq"}})
    return core


def _wl(name: str, active: bool = True) -> dict[str, Any]:
    return {"kind": "Workload", "metadata": {"name": name, "namespace": "ns"}, "spec": {
        "active": active, "queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def test_a_user_deactivates_an_admitted_workload_and_its_quota_goes_to_the_next() -> None:
    core = _core()
    core.apply(_wl("a"))
    core.apply(_wl("b"))
    core.run_until_idle()
    assert core.workload("ns/a").status == ADMITTED and core.workload("ns/b").status == PENDING
    core.apply(_wl("a", active=False))
    core.run_until_idle()
    a = core.workload("ns/a")
    assert a.deactivated and a.status == PENDING and a.evictions == ["Deactivated"]
    assert core.workload("ns/b").status == ADMITTED
    core.finish("ns/b")
    core.run_until_idle()
    assert core.workload("ns/a").status == PENDING, "an inactive workload is not admitted"
    core.apply(_wl("a"))  # reactivated
    core.run_until_idle()
    assert core.workload("ns/a").status == ADMITTED and not core.workload("ns/a").deactivated


def test_a_pending_workload_deactivated_leaves_its_queue() -> None:
    core = _core()
    core.apply(_wl("a", active=False))
    core.apply(_wl("b"))
    core.run_until_idle()
    assert core.workload("ns/b").status == ADMITTED
    core.finish("ns/b")
    core.apply(_wl("c"))
    core.run_until_idle()
    assert core.workload("ns/c").status == ADMITTED and core.workload("ns/a").status == PENDING


def test_a_rejected_check_is_not_undone_by_a_copy_read_before_spec_active_was_written() -> None:
    core = _core(checks=["approval"])
    core.apply(_wl("a"))
    core.run_until_idle()
    assert core.workload("ns/a").status == QUOTA_RESERVED
    core.set_check_state("ns/a", "approval", "Rejected")
    rec = core.workload("ns/a")
    assert rec.deactivated and rec.deactivation_unwritten
    core.apply(_wl("a"))  # an older copy (active) arrives before our write of spec.active
    assert core.workload("ns/a").deactivated
    core.apply(_wl("a", active=False))  # our write, read back
    assert not core.workload("ns/a").deactivation_unwritten
    core.apply(_wl("a"))  # now a user reactivates it
    core.run_until_idle()
    assert not core.workload("ns/a").deactivated and core.workload("ns/a").status == QUOTA_RESERVED
