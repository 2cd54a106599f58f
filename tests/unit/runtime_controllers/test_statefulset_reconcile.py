"""The job reconciler and a StatefulSet: its one Workload created while it has replicas, its pods
adopted into the group as they appear, and the Workload put on hold (quota released at once,
not queued) when it is scaled to zero, queued again when it is scaled back up."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, cast

from pykueue.api import keys
from pykueue.kube.client import KubeClient
from pykueue.kube.informer import EventType
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.registry import enabled_registry
from pykueue.manager.jobs.statefulset.kind import workloads as sts_workloads
from pykueue.manager.runtime.controllers.jobs import JobReconciler
from tests.unit.jobs.serving_objects import core_with, ctx, queue, replicas, statefulset, sts_pod, uid

from .test_related_objects import _Store

JSON = dict[str, Any]
POLICY = AdmissionPolicy(frameworks=frozenset({"statefulset"}))
KEY = "StatefulSet:ns/web"


class _Api:
    def __init__(self) -> None:
        self.replaced: list[JSON] = []

    async def replace(self, path: str, body: JSON) -> JSON:
        self.replaced.append(body)
        return body


def _sts(n: int) -> JSON:
    from pykueue.manager.jobs.statefulset.webhook import WEBHOOK

    return WEBHOOK.default(replicas(uid(queue(statefulset("web", "ns"), "lq"), "sts-uid"), n), ctx())


def _reconciler(core: QueueingCore, sts: JSON) -> tuple[JobReconciler, _Api, list[JSON], list[int]]:
    api = _Api()
    kicks: list[int] = []
    informers: dict[str, Any] = {
        "Namespace": _Store({"metadata": {"name": "ns"}}),
        "Workload": _Store(),
        "ResourceFlavor": _Store(),
        "Pod": _Store(),  # the LWS pods' informer (the pod kind's first selector)
        "Pod#2": _Store(),  # the StatefulSets' pods'
    }
    rec = JobReconciler(
        cast(KubeClient, api),
        core,
        informers,
        enabled_registry(POLICY),
        POLICY,
        kick=lambda: kicks.append(1),
        finished={},
    )
    rec._sources["StatefulSet"] = [_Store(sts)]  # type: ignore[list-item]
    rec._sources["Pod"] = [informers["Pod"], informers["Pod#2"]]
    rec.active = list(rec.registry)
    created: list[JSON] = []

    async def create(lc: Any, job: JSON, wl: JSON) -> None:
        created.append(wl)

    rec._create_workload = create  # type: ignore[method-assign]
    return rec, api, created, kicks


def _admitted_workload(sts: JSON) -> JSON:
    wl = copy.deepcopy(sts_workloads(sts)[0])
    wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1"}
    wl["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": "main", "count": 2, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}}
            ],
        },
        "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}],
    }
    return wl


def test_the_workload_is_created_and_pods_are_adopted_as_they_appear() -> None:
    sts = _sts(2)
    rec, api, created, _ = _reconciler(QueueingCore(), sts)
    asyncio.run(rec.reconcile(KEY))
    assert [w["metadata"]["name"] for w in created] == [sts_workloads(sts)[0]["metadata"]["name"]]
    pod = sts_pod(sts, 0)
    rec.informers["Pod#2"].put(pod)  # type: ignore[attr-defined]
    queued: list[str] = []
    rec.queue.add = lambda key, urgent=False: queued.append(key)  # type: ignore[method-assign]
    rec._object_handler(rec.registry.get("Pod"))(EventType.ADDED, pod, None)  # type: ignore[arg-type]
    assert KEY in queued, "a pod of the StatefulSet brings it back"
    asyncio.run(rec.reconcile(KEY))
    [adopted] = api.replaced
    assert adopted["metadata"]["annotations"][keys.POD_GROUP_NAME] == created[0]["metadata"]["name"]
    assert adopted["metadata"]["labels"][keys.MANAGED] == "true"


def test_scaled_to_zero_the_workload_is_held_and_its_quota_released_then_queued_again() -> None:
    sts = _sts(2)
    wl = _admitted_workload(sts)
    core = core_with(wl)
    key = f"ns/{wl['metadata']['name']}"
    assert core.usage_of("cq") == {("default", "cpu"): 2000}
    rec, _, created, kicks = _reconciler(core, _sts(0))
    rec.informers["Workload"].put(wl)  # type: ignore[attr-defined]
    asyncio.run(rec.reconcile(KEY))
    assert created == [] and kicks, "kept (not created again), and the scheduler woken"
    view = core.workload(key)
    assert view is not None and view.on_hold is not None and not view.holds_quota
    assert core.usage_of("cq") == {("default", "cpu"): 0}
    core.run_until_idle()
    assert not view.holds_quota, "not queued while on hold"
    rec._sources["StatefulSet"] = [_Store(_sts(2))]  # type: ignore[list-item]
    asyncio.run(rec.reconcile(KEY))
    assert view.on_hold is None
    core.run_until_idle()
    assert view.holds_quota, "scaled up: queued again and admitted"


def test_with_lws_and_statefulsets_both_adopting_each_pod_goes_to_its_own_owner() -> None:
    policy = AdmissionPolicy(
        frameworks=frozenset({"statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"})
    )
    rec = JobReconciler(
        cast(KubeClient, _Api()),
        QueueingCore(),
        {},
        enabled_registry(policy),
        policy,
        kick=lambda: None,
        finished={},
    )
    rec.active = list(rec.registry)
    queued: list[str] = []
    rec.queue.add = lambda key, urgent=False: queued.append(key)  # type: ignore[method-assign]
    handle = rec._object_handler(rec.registry.get("Pod"))  # type: ignore[arg-type]
    lws_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "srv-0",
            "namespace": "ns",
            "labels": {keys.LWS_NAME: "srv"},
            "annotations": {keys.POD_SUSPENDING_PARENT: "leaderworkerset.x-k8s.io/leaderworkerset"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": "srv",
                    "uid": "u",
                    "controller": True,
                }
            ],
        },
    }
    handle(EventType.ADDED, lws_pod, None)
    handle(EventType.ADDED, sts_pod(_sts(2), 0), None)
    assert rec._adoptees == {"LeaderWorkerSet:ns/srv": {"ns/srv-0"}, KEY: {"ns/web-0"}}
    assert "LeaderWorkerSet:ns/srv" in queued and KEY in queued
    handle(EventType.DELETED, lws_pod, None)
    assert rec._adoptees.get("LeaderWorkerSet:ns/srv") == set()
