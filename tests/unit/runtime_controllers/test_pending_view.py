"""The visibility API's view of the core's pending workloads carries each one's tier."""

from __future__ import annotations

from pykueue.manager.runtime.controllers.pending_view import CorePendingWorkloads

from .test_unadmitted_metrics import _core


def test_pending_entries_carry_the_tier_and_message() -> None:
    core = _core()
    core.run_until_idle()
    view = CorePendingWorkloads(core)
    entries = view.cluster_queue_snapshot("cq") or []
    assert [(e.name, e.reason) for e in entries] == [("c", "WaitingForQuota")]
    assert entries[0].message == core.workload("ns/c").reason
    assert "insufficient unused quota" in entries[0].message
