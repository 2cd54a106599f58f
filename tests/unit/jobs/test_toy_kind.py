"""A new job kind is one registration: this file defines a made-up ``ToyJob`` kind and, once
it is registered, the generic code paths default it (the webhook's routing), turn it into a
Workload (simulate's converter), admit it (the core) and run it (the reconcilers' registry).
Nothing outside this file knows the kind."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator, Mapping
from typing import Any

import jsonpatch
import pytest
from aiohttp.test_utils import TestClient, TestServer

from pykueue.api import keys
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON, meta
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.jobs_to_workloads import owned_workload, workload_name
from pykueue.manager.core.objects import named_meta
from pykueue.manager.core.status import workload_status
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy
from pykueue.manager.jobs.defaulting import apply_job_defaults
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.lifecycle import (
    Action,
    Finished,
    JobLifecycle,
    PodSetInfo,
    Replace,
    TopLevelOwner,
    podset_infos,
)
from pykueue.manager.jobs.registry import (
    JobKind,
    enabled_registry,
    is_job,
    job_rbac,
    register,
    unregister,
    webhook_path,
    workloads_for,
)
from pykueue.manager.jobs.validation import validate_job_on_create
from pykueue.webhook.app import WebhookDeps, make_app, routes

TOY = Integration("example.com/toyjob", "example.com", "v1", "ToyJob", "toyjobs")
POLICY = AdmissionPolicy.from_config({"integrations": {"frameworks": ["batch/job", TOY.name]}})


def _spec(job: Mapping[str, Any]) -> JSON:
    spec: JSON = job.get("spec") or {}
    return spec


class ToyLifecycle(TopLevelOwner):
    integration = TOY

    def workload_name(self, job: Mapping[str, Any]) -> str:
        return workload_name("ToyJob", TOY.group, str(meta(job)["name"]), str(meta(job).get("uid", "")))

    def is_suspended(self, job: Mapping[str, Any]) -> bool:
        return bool(_spec(job).get("suspend"))

    def is_active(self, job: Mapping[str, Any]) -> bool:
        return not self.is_suspended(job)

    def still_running(self, job: Mapping[str, Any]) -> bool:
        return bool((job.get("status") or {}).get("active"))

    def start(self, job: Mapping[str, Any], workload: Mapping[str, Any],
              infos: list[PodSetInfo]) -> list[Action]:
        started = copy.deepcopy(dict(job))
        started["spec"]["suspend"] = False
        started["spec"]["nodeSelector"] = dict(infos[0].node_selector)
        return [Replace(started)]

    def stop(self, job: Mapping[str, Any]) -> list[Action]:
        stopped = copy.deepcopy(dict(job))
        stopped["spec"]["suspend"] = True
        return [Replace(stopped)]

    def restore(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Action]:
        return []

    def finished(self, job: Mapping[str, Any]) -> Finished | None:
        return Finished(keys.Reason.SUCCEEDED, "done") if (job.get("status") or {}).get("done") else None

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        return True


class ToyWebhook:
    integration = TOY.name

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        apply_job_defaults(obj, ctx, lambda o: o.setdefault("spec", {}),
                           lambda o: bool(_spec(o).get("suspend")), "example.com/toy-controller")
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        return validate_job_on_create(obj, ctx, TOY.group, TOY.kind) if old is None else []


def toy_workloads(job: JSON) -> list[JSON]:
    m = named_meta(job)
    podset = {"name": "main", "count": int(_spec(job).get("replicas", 1)),
              "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}
    return [owned_workload(job, workload_name("ToyJob", TOY.group, m["name"], str(m.get("uid", ""))),
                           [podset], controller=True)]


TOY_KIND = JobKind(TOY, ToyLifecycle(), ToyWebhook(), toy_workloads, job_rbac(TOY.group, TOY.plural))


@pytest.fixture
def toy_registered() -> Iterator[JobKind]:
    register(TOY_KIND)
    yield TOY_KIND
    unregister(TOY.name)


def toy(replicas: int = 2) -> JSON:
    return {"apiVersion": "example.com/v1", "kind": "ToyJob",
            "metadata": {"name": "t1", "namespace": "ns", "uid": "uid-t1", "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {"replicas": replicas}}


async def test_the_webhook_routes_the_new_kind_and_suspends_it(toy_registered: JobKind) -> None:
    path = webhook_path("mutate", toy_registered.gvk)
    assert path == "/mutate-example-com-v1-toyjob"
    job = toy()
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u1", "kind": {"group": "example.com", "version": "v1", "kind": "ToyJob"},
        "resource": {"group": "example.com", "version": "v1", "resource": "toyjobs"},
        "operation": "CREATE", "namespace": "ns", "name": "t1", "object": job}}
    async with TestClient(TestServer(make_app(WebhookDeps(policy=POLICY)))) as client:
        resp = await client.post(path, json=review)
        assert resp.status == 200
        answer = (await resp.json())["response"]
    assert answer["uid"] == "u1" and answer["allowed"] is True
    patched = jsonpatch.apply_patch(job, json.loads(base64.b64decode(answer["patch"])))
    assert patched["spec"]["suspend"] is True


def test_the_core_admits_its_workload_and_the_reconcilers_run_it(toy_registered: JobKind) -> None:
    job = toy(replicas=2)
    (wl,) = workloads_for(job)
    assert wl["spec"]["queueName"] == "lq" and wl["spec"]["podSets"][0]["count"] == 2
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "ToyJob"

    core = QueueingCore(now=1_000.0)
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"},
                "spec": {"nodeLabels": {"pool": "toys"}}})
    core.apply({"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
        "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]}})
    core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq"}})
    core.apply(wl)
    core.run_until_idle()
    key = f"ns/{wl['metadata']['name']}"
    assert core.workload(key).status == "Admitted"

    lifecycle = enabled_registry(POLICY).get("ToyJob")
    assert lifecycle is toy_registered.lifecycle and isinstance(lifecycle, JobLifecycle)
    assert lifecycle.is_managed(job, POLICY, {"kubernetes.io/metadata.name": "ns"})
    admitted = {**wl, "status": workload_status(core.workload(key), core.now)}
    flavors = {"rf": {"spec": {"nodeLabels": {"pool": "toys"}}}}
    suspended = {**job, "spec": {**job["spec"], "suspend": True}}
    (action,) = lifecycle.start(suspended, admitted, podset_infos(admitted, flavors))
    assert isinstance(action, Replace)
    assert action.obj["spec"]["suspend"] is False and action.obj["spec"]["nodeSelector"] == {"pool": "toys"}


def test_it_is_gone_once_unregistered() -> None:
    assert enabled_registry(POLICY).get("ToyJob") is None
    assert not is_job(toy())
    assert webhook_path("mutate", TOY_KIND.gvk) not in routes()


def test_registered_it_is_served(toy_registered: JobKind) -> None:
    assert {webhook_path("mutate", TOY_KIND.gvk), webhook_path("validate", TOY_KIND.gvk)} <= set(routes())
