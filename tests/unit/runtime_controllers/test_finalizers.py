"""The resource-in-use finalizer: when a deleted ClusterQueue or ResourceFlavor is released."""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.runtime.controllers.finalizers import (
    cluster_queues_using_flavor,
    release_due,
    terminating,
)
from pykueue.manager.runtime.controllers.queue_status import cluster_queue_status

DELETED_AT = "2026-01-01T00:00:00Z"


def _obj(kind: str, name: str, *, deleting: bool = True, finalizers: tuple[str, ...] = (
        keys.RESOURCE_IN_USE_FINALIZER,), spec: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "finalizers": list(finalizers)}
    if deleting:
        meta["deletionTimestamp"] = DELETED_AT
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": meta, "spec": spec or {}}


def _cq(name: str, *flavors: str, deleting: bool = False) -> dict[str, Any]:
    spec = {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": f, "resources": [{"name": "cpu", "nominalQuota": "4"}]} for f in flavors]}]}
    return _obj("ClusterQueue", name, deleting=deleting, spec=spec)


def test_a_deleted_object_is_released_only_when_unused() -> None:
    assert release_due(_obj("ClusterQueue", "cq"), in_use=False)
    assert not release_due(_obj("ClusterQueue", "cq"), in_use=True)


def test_an_object_not_being_deleted_keeps_its_finalizer() -> None:
    assert not release_due(_obj("ClusterQueue", "cq", deleting=False), in_use=False)
    assert not terminating(_obj("ResourceFlavor", "rf", deleting=False))


def test_nothing_to_release_without_our_finalizer() -> None:
    assert not release_due(_obj("ResourceFlavor", "rf", finalizers=()), in_use=False)
    assert not release_due(_obj("ResourceFlavor", "rf", finalizers=("example.com/other",)), in_use=False)
    both = ("example.com/other", keys.RESOURCE_IN_USE_FINALIZER)
    assert release_due(_obj("ResourceFlavor", "rf", finalizers=both), in_use=False)


def test_a_flavor_is_in_use_while_any_cluster_queue_names_it() -> None:
    cqs = [_cq("b", "on-demand", "spot"), _cq("a", "spot", deleting=True), _cq("c", "other")]
    assert cluster_queues_using_flavor("spot", cqs) == ["a", "b"]  # a terminating CQ still counts
    assert cluster_queues_using_flavor("on-demand", cqs) == ["b"]
    assert cluster_queues_using_flavor("gone", cqs) == []
    assert cluster_queues_using_flavor("spot", [{"metadata": {"name": "x"}}]) == []


def _core_with_admitted_workload() -> QueueingCore:
    core = QueueingCore()
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "default"}})
    core.apply(_cq("cq", "default"))
    core.apply({"kind": "Namespace", "metadata": {"name": "ns"}})
    core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq"}})
    for i, t in enumerate(("2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z")):
        core.apply({"kind": "Workload", "metadata": {"name": f"w{i}", "namespace": "ns", "uid": f"u{i}",
                                                     "creationTimestamp": t},
                    "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]}}}]}})
    core.run_until_idle()
    return core


def test_a_terminating_cluster_queue_admits_nothing_new_and_keeps_what_it_admitted() -> None:
    core = _core_with_admitted_workload()
    assert list(core.holders_by_queue()["cq"]) == ["ns/w0"]  # w1 does not fit next to w0
    core.set_terminating("cq", True)
    core.finish("ns/w0")
    core.run_until_idle()
    assert not core.holders_by_queue().get("cq"), "the freed quota is not given to w1 while cq terminates"
    assert core.workload("ns/w1").reason.endswith("Terminating")
    status = cluster_queue_status(core, "cq")
    assert status["conditions"][0]["status"] == "False"
    assert status["conditions"][0]["reason"] == "Terminating"
    core.set_terminating("cq", False)  # e.g. a re-created namesake: active again
    core.run_until_idle()
    assert list(core.holders_by_queue()["cq"]) == ["ns/w1"]
