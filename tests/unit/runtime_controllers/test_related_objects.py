"""The job reconciler and a kind whose rules read other objects (a TrainJob and its training
runtime): informers of the related kinds, a job without its runtime left untouched and retried
(and reconciled again when the runtime appears), the lifecycle bound to what was found, the
start's two writes of one object chained, and the RBAC rows of it all."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, cast

import pytest

from pykueue.api.access import ApiAccess
from pykueue.api.events import EventRecord
from pykueue.kube.client import ApiError, KubeClient
from pykueue.kube.informer import EventType
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.registry import enabled_registry, kinds
from pykueue.manager.jobs.related import RelatedMissing
from pykueue.manager.jobs.trainjob.lifecycle import LIFECYCLE
from pykueue.manager.jobs.trainjob.runtime import CLUSTER_TRAINING_RUNTIME
from pykueue.manager.runtime.controllers.jobs import JobReconciler, api_access
from tests.unit.jobs.helpers import admitted
from tests.unit.jobs.trainjob_objects import (
    TRAINER_LABELS,
    cluster_runtime,
    replicated_job,
    runtime_patch,
    trainjob,
)

JSON = dict[str, Any]
POLICY = AdmissionPolicy(frameworks=frozenset({"trainer.kubeflow.org/trainjob"}))
KEY = "TrainJob:ns/trainjob"


class _Store:
    """An informer's store: objects by key ("ns/name", or "name" when cluster-scoped)."""

    def __init__(self, *objs: JSON) -> None:
        self.by_key: dict[str, JSON] = {}
        for obj in objs:
            self.put(obj)

    def put(self, obj: JSON) -> None:
        m = obj["metadata"]
        self.by_key[f"{m['namespace']}/{m['name']}" if m.get("namespace") else m["name"]] = obj

    def get(self, key: str) -> JSON | None:
        return self.by_key.get(key)

    def get_by_name(self, name: str, namespace: str | None = None) -> JSON | None:
        return self.by_key.get(f"{namespace}/{name}" if namespace else name)

    def items(self) -> list[JSON]:
        return list(self.by_key.values())


class _Api:
    """PUTs are compare-and-swaps on resourceVersions; a collection GET says whether it is served."""

    def __init__(self, served: set[str]) -> None:
        self.served = served
        self.versions: dict[str, int] = {}
        self.puts: list[tuple[str, str, bool]] = []  # path, the version written over, suspend

    async def get(self, path: str, query: Any = None) -> JSON:
        if not any(path.endswith(p) for p in self.served):
            raise ApiError(404)
        return {"items": []}

    async def replace(self, path: str, body: JSON) -> JSON:
        stored = self.versions.get(path, 5)
        if str(stored) != body["metadata"]["resourceVersion"]:
            raise ApiError(409)
        self.versions[path] = stored + 1
        self.puts.append((path, body["metadata"]["resourceVersion"], body["spec"]["suspend"]))
        return {**body, "metadata": {**body["metadata"], "resourceVersion": str(stored + 1)}}


class _Events:
    def __init__(self) -> None:
        self.recorded: list[EventRecord] = []

    def record(self, event: EventRecord) -> None:
        self.recorded.append(event)


def _runtime() -> JSON:
    return cluster_runtime("test", replicated_job("node", labels=TRAINER_LABELS), replicated_job("foo"))


def _reconciler(api: Any = None, *objs: JSON) -> tuple[JobReconciler, list[JSON], _Events]:
    events = _Events()
    informers: dict[str, Any] = {"Namespace": _Store({"metadata": {"name": "ns"}}), "Workload": _Store(),
                                 "ResourceFlavor": _Store()}
    client = cast(KubeClient, api) if api is not None else KubeClient(object())
    rec = JobReconciler(client, QueueingCore(), informers, enabled_registry(POLICY), POLICY,
                        kick=lambda: None, finished={}, events=events)
    rec._sources["TrainJob"] = [_Store(*objs)]  # type: ignore[list-item]
    rec._related["ClusterTrainingRuntime"] = _Store()  # type: ignore[assignment]
    rec.active = list(rec.registry)
    created: list[JSON] = []

    async def create(lc: Any, job: JSON, wl: JSON) -> None:
        created.append(wl)
    rec._create_workload = create  # type: ignore[method-assign]
    return rec, created, events


def test_a_trainjob_without_its_runtime_is_retried_and_woken_by_the_runtime() -> None:
    rec, created, _ = _reconciler(None, trainjob(queue="lq"))
    with pytest.raises(RelatedMissing, match=r"^ClusterTrainingRuntime test not found$"):
        asyncio.run(rec.reconcile(KEY))
    assert created == []
    assert rec._needed_by == {CLUSTER_TRAINING_RUNTIME.key("test"): {KEY}}
    woken: list[str] = []
    rec.queue.add = lambda key, urgent=False: woken.append(key)  # type: ignore[method-assign]
    rec._related_handler(CLUSTER_TRAINING_RUNTIME)(EventType.ADDED, cluster_runtime("other"), None)
    assert woken == []
    rec._related_handler(CLUSTER_TRAINING_RUNTIME)(EventType.ADDED, _runtime(), None)
    assert woken == [KEY]

    rec._related["ClusterTrainingRuntime"].put(_runtime())  # type: ignore[attr-defined]
    asyncio.run(rec.reconcile(KEY))
    [wl] = created
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("node", 1), ("foo", 1)]

    rec._sources["TrainJob"][0].by_key.clear()  # type: ignore[attr-defined]
    asyncio.run(rec.reconcile(KEY))  # deleted: nothing needs the runtime any more
    assert rec._needed_by == {}


def test_an_unmanaged_trainjob_reads_nothing() -> None:
    rec, created, _ = _reconciler(None, trainjob())  # no queue name
    asyncio.run(rec.reconcile(KEY))
    assert created == [] and rec._needed_by == {}


def test_the_start_writes_twice_over_the_version_the_first_write_left() -> None:
    api = _Api(served=set())
    tj = trainjob(queue="lq", patches=[runtime_patch()])
    rec, _, events = _reconciler(api, tj)
    rec._related["ClusterTrainingRuntime"].put(_runtime())  # type: ignore[attr-defined]
    [wl] = LIFECYCLE.bind({CLUSTER_TRAINING_RUNTIME.key("test"): _runtime()}).workloads(tj)
    wl["metadata"]["uid"] = "wl-uid"
    rec.informers["Workload"].put(admitted(wl, ["node", "foo"]))  # type: ignore[attr-defined]
    asyncio.run(rec.reconcile(KEY))
    path = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/trainjob"
    assert api.puts == [(path, "5", True), (path, "6", False)]
    assert [e.reason for e in events.recorded] == ["Started"]  # one object started, once


def test_prepare_watches_the_related_kinds_the_cluster_serves() -> None:
    async def go(served: set[str]) -> JobReconciler:
        informers: dict[str, Any] = {}
        client = cast(KubeClient, _Api(served))
        rec = JobReconciler(client, QueueingCore(), informers, enabled_registry(POLICY), POLICY,
                            kick=lambda: None, finished={})
        await rec.prepare()
        return rec
    rec = asyncio.run(go({"/trainjobs", "/clustertrainingruntimes", "/trainingruntimes"}))
    assert {"TrainJob", "ClusterTrainingRuntime", "TrainingRuntime"} <= set(rec.informers)
    assert rec.informers["TrainingRuntime"].resource.collection_path() == \
        "/apis/trainer.kubeflow.org/v1alpha1/trainingruntimes"
    partial = asyncio.run(go({"/trainjobs", "/clustertrainingruntimes"}))
    assert "ClusterTrainingRuntime" in partial.informers and "TrainingRuntime" not in partial.informers


def test_the_rbac_rows_cover_the_runtimes() -> None:
    rows = set(api_access(kinds()))
    assert ApiAccess("trainer.kubeflow.org", "clustertrainingruntimes", ("list", "watch")) in rows
    assert ApiAccess("trainer.kubeflow.org", "trainingruntimes", ("list", "watch")) in rows
    assert ApiAccess("trainer.kubeflow.org", "trainjobs", ("update",)) in rows
    from pykueue.webhook.facts import related_access
    assert set(related_access()) == {ApiAccess("trainer.kubeflow.org", "clustertrainingruntimes", ("get",)),
                                     ApiAccess("trainer.kubeflow.org", "trainingruntimes", ("get",))}


def test_the_webhook_lookup_gets_a_cluster_scoped_runtime_by_its_path() -> None:
    from pykueue.webhook.facts import ApiLookup

    class _Get:
        def __init__(self) -> None:
            self.paths: list[str] = []

        async def get(self, path: str) -> JSON:
            self.paths.append(path)
            return copy.deepcopy(_runtime())
    client = _Get()
    got = asyncio.run(ApiLookup(client).get_object(CLUSTER_TRAINING_RUNTIME.key("test")))
    assert got is not None and client.paths == [
        "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/test"]
