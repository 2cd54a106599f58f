"""Kueue's OnHold: a Workload its job puts on hold (a StatefulSet scaled to zero) gives its
quota back at once, without an eviction, is not queued while held, says so in its
QuotaReserved condition (reason OnHold, the job's message), keeps that across a restart, and
is queued again when the hold is lifted."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.status import workload_status

API = "kueue.x-k8s.io/v1beta2"
WHY = "StatefulSet scaled to zero; workload on hold"


def _objects() -> list[dict[str, Any]]:
    container = {"name": "c", "resources": {"requests": {"cpu": "2"}}}
    return [
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "rf"}},
        {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
             {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": "2"}]}]}]}},
        {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
         "spec": {"clusterQueue": "cq"}},
        *[{"apiVersion": API, "kind": "Workload",
           "metadata": {"name": name, "namespace": "ns", "creationTimestamp": f"2026-01-01T00:00:0{i}Z"},
           "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1,
                                                     "template": {"spec": {"containers": [container]}}}]}}
          for i, name in enumerate(("held", "other"))],
    ]


def _core(config: CoreConfig | None = None) -> QueueingCore:
    core = QueueingCore(config)
    for obj in _objects():
        core.apply(obj)
    return core


def _quota_reserved(core: QueueingCore, key: str, tiered: bool = True) -> tuple[str, str, str]:
    rec = core.workload(key)
    assert rec is not None
    cond = next(c for c in workload_status(rec, core.now, tiered=tiered)["conditions"]
                if c["type"] == "QuotaReserved")
    return cond["status"], cond["reason"], cond["message"]


def test_a_held_admitted_workload_frees_its_quota_for_the_next_one_without_an_eviction() -> None:
    core = _core()
    core.run_until_idle()
    held, other = core.workload("ns/held"), core.workload("ns/other")
    assert held is not None and other is not None and held.holds_quota and not other.holds_quota
    assert core.hold("ns/held", WHY)
    assert not core.hold("ns/held", WHY), "held already"
    assert not held.holds_quota and held.evictions == []
    core.run_until_idle()
    assert other.holds_quota and not held.holds_quota
    for tiered in (True, False):
        assert _quota_reserved(core, "ns/held", tiered) == ("False", "OnHold", WHY)
    assert core.unhold("ns/held") and not core.unhold("ns/held")
    core.finish("ns/other")
    core.run_until_idle()
    assert held.holds_quota, "lifted: queued and admitted again"


def test_a_pending_workload_put_on_hold_leaves_its_queue() -> None:
    core = _core()
    assert core.hold("ns/held", WHY)
    core.run_until_idle()
    held, other = core.workload("ns/held"), core.workload("ns/other")
    assert held is not None and other is not None
    assert other.holds_quota and not held.holds_quota
    queue = core.pending_queue("cq")
    assert queue is not None and "ns/held" not in queue
    assert _quota_reserved(core, "ns/held") == ("False", "OnHold", WHY)


def test_a_workload_being_evicted_is_released_at_once_when_held() -> None:
    core = _core(CoreConfig(hold_quota_until_stopped=True))
    core.run_until_idle()
    assert core.evict("ns/held", "Preempted")
    held = core.workload("ns/held")
    assert held is not None and held.stopping is not None and held.holds_quota
    assert core.hold("ns/held", WHY)
    assert held.stopping is None and not held.holds_quota
    assert _quota_reserved(core, "ns/held")[1] == "OnHold"


def test_the_hold_is_read_back_after_a_restart() -> None:
    core = _core()
    core.run_until_idle()
    core.hold("ns/held", WHY)
    rec = core.workload("ns/held")
    assert rec is not None
    stored = copy.deepcopy(_objects()[3])
    stored["status"] = workload_status(rec, core.now)
    restarted = QueueingCore()
    for obj in [*_objects()[:3], stored]:
        restarted.apply(obj)
    restarted.run_until_idle()
    again = restarted.workload("ns/held")
    assert again is not None and again.on_hold == WHY and not again.holds_quota
