"""A new job kind is one folder: ``toykind/`` declares a made-up ``ToyJob`` kind and, once
it is registered, the generic code paths default it (the webhook's routing), turn it into a
Workload (simulate's converter and scenarios), admit it (the core), run it (the reconcilers'
registry and the REST path of their writes), name it on the command line (``explain``) and
install it (webhook configurations, RBAC, the frameworks list). Nothing outside that folder
and this file knows the kind."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import jsonpatch
import pytest
import yaml
from aiohttp.test_utils import TestClient, TestServer

from pykueue.api import keys
from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.status import workload_status
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.lifecycle import JobLifecycle, Replace, podset_infos
from pykueue.manager.jobs.registry import (
    JobKind,
    by_cli_name,
    enabled_registry,
    is_job,
    kinds,
    register,
    shipped_frameworks,
    unregister,
    webhook_path,
    workloads_for,
)
from pykueue.manager.runtime.controllers.jobs import api_access
from pykueue.manager.runtime.job_resources import resource_for
from pykueue.manager.simulate import simulate
from pykueue.webhook.app import WebhookDeps, make_app, routes
from pykueue.webhook.configurations import configurations

from .toykind.kind import KIND as TOY_KIND
from .toykind.lifecycle import TOY

POLICY = AdmissionPolicy.from_config({"integrations": {"frameworks": ["batch/job", TOY.name]}})


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
    # The reconciler PUTs the started job to the kind's own resource.
    assert resource_for(action.obj).object_path("t1", "ns") == "/apis/example.com/v1/namespaces/ns/toyjobs/t1"


def test_it_is_gone_once_unregistered() -> None:
    assert enabled_registry(POLICY).get("ToyJob") is None
    assert not is_job(toy())
    assert webhook_path("mutate", TOY_KIND.gvk) not in routes()


def test_registered_it_is_served(toy_registered: JobKind) -> None:
    assert {webhook_path("mutate", TOY_KIND.gvk), webhook_path("validate", TOY_KIND.gvk)} <= set(routes())


def test_the_install_registers_its_hooks_grants_its_writes_and_enables_it(toy_registered: JobKind) -> None:
    hooks = {h["name"]: h for doc in configurations() for h in doc["webhooks"]}
    mutate, validate = hooks["mtoyjob.pykueue.x-k8s.io"], hooks["vtoyjob.pykueue.x-k8s.io"]
    assert mutate["clientConfig"]["service"]["path"] == "/mutate-example-com-v1-toyjob"
    assert mutate["rules"] == [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                                "operations": ["CREATE"], "resources": ["toyjobs"]}]
    assert validate["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert "kube-system" in mutate["namespaceSelector"]["matchExpressions"][0]["values"]
    granted = api_access(kinds())
    assert ApiAccess("example.com", "toyjobs", ("update",)) in granted
    assert any(a.resource == "toyjobs" and "watch" in a.verbs for a in granted)
    assert TOY.name in shipped_frameworks()


def test_the_command_line_names_it(toy_registered: JobKind) -> None:
    assert by_cli_name("toyjob") is by_cli_name("toyjobs") is by_cli_name("toy") is toy_registered


def test_simulate_admits_it_from_a_manifest(toy_registered: JobKind, tmp_path: Path) -> None:
    scenario = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "rf"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
            "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": 3}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
         "metadata": {"name": "lq", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}},
        toy(replicas=2),
        {**toy(replicas=2), "metadata": {**toy()["metadata"], "name": "t2", "uid": "uid-t2"}},
    ]
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump_all(scenario))
    result = simulate([str(path)])
    owners = {w["owner"]: w["status"] for w in result["workloads"].values()}
    assert owners == {"example.com/v1/ToyJob ns/t1": "Admitted", "example.com/v1/ToyJob ns/t2": "Pending"}
