"""TFJob, XGBoostJob, PaddleJob and JAXJob: registered kinds on the shared training operator
implementation (``manager.jobs.kubeflow_v1``), served by the webhook, turned into Workloads,
run, stopped and restored by their lifecycle, named on the command line and simulated."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml
from aiohttp.test_utils import TestClient, TestServer

from pykueue.api import keys
from pykueue.manager.core.objects import ObjectError
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.integrations import KNOWN_ELSEWHERE
from pykueue.manager.jobs.jaxjob.kind import KIND as JAX
from pykueue.manager.jobs.kubeflow_v1 import KubeflowJobLifecycle
from pykueue.manager.jobs.lifecycle import Replace, StartConflict, podset_infos
from pykueue.manager.jobs.paddlejob.kind import KIND as PADDLE
from pykueue.manager.jobs.registry import (
    JobKind,
    by_cli_name,
    integration_for,
    kind_of,
    shipped_frameworks,
    webhook_path,
    workloads_for,
)
from pykueue.manager.jobs.tfjob.kind import KIND as TF
from pykueue.manager.jobs.xgboostjob.kind import KIND as XGB
from pykueue.manager.runtime.job_resources import resource_for
from pykueue.manager.simulate import simulate
from pykueue.webhook.app import WebhookDeps, make_app, routes

from .helpers import FLAVORS, admitted

FIELDS = {"TFJob": "tfReplicaSpecs", "XGBoostJob": "xgbReplicaSpecs", "PaddleJob": "paddleReplicaSpecs",
          "JAXJob": "jaxReplicaSpecs"}
# Replica types a job of each kind has here, deliberately listed out of pod set order.
ROLES = {"TFJob": ("Worker", "PS", "Chief"), "XGBoostJob": ("Worker", "Master"),
         "PaddleJob": ("Worker", "Master"), "JAXJob": ("Worker",)}
PODSETS = {"TFJob": ["chief", "ps", "worker"], "XGBoostJob": ["master", "worker"],
           "PaddleJob": ["master", "worker"], "JAXJob": ["worker"]}
KINDS = [TF, XGB, PADDLE, JAX]
POLICY = AdmissionPolicy.from_config({"integrations": {"frameworks": [k.name for k in KINDS]}})


def lifecycle_of(kind: JobKind) -> KubeflowJobLifecycle:
    assert isinstance(kind.lifecycle, KubeflowJobLifecycle)
    return kind.lifecycle


def job(kind: JobKind, suspend: bool = True, name: str = "train") -> dict[str, Any]:
    k = kind.integration.kind
    replicas = {role: {"replicas": 2 if role == "Worker" else 1, "template": {"spec": {"containers": [
        {"name": "main", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}} for role in ROLES[k]}
    return {"apiVersion": "kubeflow.org/v1", "kind": k,
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "3",
                         "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {"runPolicy": {"suspend": suspend}, FIELDS[k]: replicas}}


def templates(kind: JobKind, obj: dict[str, Any]) -> dict[str, Any]:
    return {role: r["template"] for role, r in obj["spec"][FIELDS[kind.integration.kind]].items()}


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.integration.kind)
def test_registered_served_shipped_and_named(kind: JobKind) -> None:
    i = kind.integration
    assert kind_of(job(kind)) is kind and integration_for(i.group, i.kind) is i
    assert i.kind not in {e.kind for e in KNOWN_ELSEWHERE}
    assert {webhook_path("mutate", kind.gvk), webhook_path("validate", kind.gvk)} <= set(routes())
    assert webhook_path("mutate", kind.gvk) == f"/mutate-kubeflow-org-v1-{i.kind.lower()}"
    assert i.name in shipped_frameworks()
    assert by_cli_name(i.kind.lower()) is by_cli_name(i.plural) is kind


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.integration.kind)
async def test_the_webhook_suspends_a_queued_job(kind: JobKind) -> None:
    obj = job(kind, suspend=False)
    del obj["spec"]["runPolicy"]
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u1", "kind": {"group": "kubeflow.org", "version": "v1", "kind": kind.integration.kind},
        "resource": {"group": "kubeflow.org", "version": "v1", "resource": kind.integration.plural},
        "operation": "CREATE", "namespace": "ns", "name": "train", "object": obj}}
    path = webhook_path("mutate", kind.gvk)
    async with TestClient(TestServer(make_app(WebhookDeps(policy=POLICY)))) as client:
        resp = await client.post(path, json=review)
        answer = (await resp.json())["response"]
    assert answer["allowed"] is True
    patched = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(answer["patch"])))
    assert patched["spec"]["runPolicy"] == {"suspend": True}


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.integration.kind)
def test_a_prebuilt_workload_is_refused_for_a_jaxjob_only(kind: JobKind) -> None:
    obj = job(kind)
    obj["metadata"]["labels"][keys.PREBUILT_WORKLOAD_NAME] = "wl"
    ctx = AdmissionContext(POLICY, ClusterFacts(namespace_labels={keys.NAMESPACE_NAME_LABEL: "ns"}))
    assert kind.webhook is not None
    errors = [str(e) for e in kind.webhook.validate(obj, None, ctx)]
    assert errors == ([f"metadata.labels[{keys.PREBUILT_WORKLOAD_NAME}]: Forbidden: "
                       'Is not supported for "kubeflow.org/v1, Kind=JAXJob"'] if kind is JAX else [])


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.integration.kind)
def test_one_workload_with_a_pod_set_per_replica_type_in_order(kind: JobKind) -> None:
    [wl] = workloads_for(job(kind))
    k = kind.integration.kind
    assert [p["name"] for p in wl["spec"]["podSets"]] == PODSETS[k]
    assert [p["count"] for p in wl["spec"]["podSets"]] == [2 if p == "worker" else 1 for p in PODSETS[k]]
    assert wl["metadata"]["name"].startswith(f"{k.lower()}-train-")
    assert wl["metadata"]["name"] == lifecycle_of(kind).workload_name(job(kind))
    assert wl["metadata"]["ownerReferences"][0]["kind"] == k and wl["spec"]["queueName"] == "lq"


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.integration.kind)
def test_start_stop_and_restore(kind: JobKind) -> None:
    lc, obj = lifecycle_of(kind), job(kind)
    [wl] = lc.workloads(obj)
    wl = admitted(wl, PODSETS[kind.integration.kind])
    [start] = lc.start(obj, wl, podset_infos(wl, FLAVORS))
    assert isinstance(start, Replace) and lc.is_active(start.obj)
    for role, tmpl in templates(kind, start.obj).items():
        assert tmpl["spec"]["nodeSelector"] == {"instance-type": "on-demand"}
        assert tmpl["metadata"]["labels"][keys.PODSET] == role.lower()
    assert lc.is_suspended(obj), "the input is not mutated"
    # The job's own URL, where the reconciler PUTs it.
    url = f"/apis/kubeflow.org/v1/namespaces/ns/{kind.integration.plural}/train"
    assert resource_for(start.obj).object_path("train", "ns") == url
    [stop] = lc.stop(start.obj)
    assert lc.is_suspended(stop.obj)
    [restore] = lc.restore(stop.obj, wl)
    for role, tmpl in templates(kind, restore.obj).items():
        assert tmpl["spec"] == templates(kind, obj)[role]["spec"]
        assert not tmpl.get("metadata"), "the pod set label and queue labels are gone"
    assert lc.restore(restore.obj, wl) == []
    assert lc.restore(start.obj, wl) == [], "a running job is not restored"


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.integration.kind)
def test_an_admission_of_other_pod_sets_cannot_start(kind: JobKind) -> None:
    lc, obj = lifecycle_of(kind), job(kind)
    [wl] = lc.workloads(obj)
    wl = admitted(wl, PODSETS[kind.integration.kind])
    wl["status"]["admission"]["podSetAssignments"].append({"name": "extra", "flavors": {}})
    with pytest.raises(StartConflict):
        lc.start(obj, wl, podset_infos(wl, FLAVORS))


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.integration.kind)
def test_finished_ready_and_running_come_from_the_operator_status(kind: JobKind) -> None:
    lc, obj = lifecycle_of(kind), job(kind, suspend=False)
    assert lc.finished(obj) is None and not lc.pods_ready(obj) and not lc.still_running(obj)
    obj["status"] = {"conditions": [{"type": "Running", "status": "True"}],
                     "replicaStatuses": {"Worker": {"active": 2}}}
    assert lc.pods_ready(obj) and lc.still_running(obj) and lc.finished(obj) is None
    # The first true one of Succeeded and Failed decides, in the operator's order.
    obj["status"]["conditions"] += [{"type": "Failed", "status": "True"},
                                    {"type": "Succeeded", "status": "True", "message": "done"}]
    verdict = lc.finished(obj)
    assert verdict is not None
    assert (verdict.reason, verdict.message) == ("Failed", f"{kind.integration.kind} failed")
    obj["status"]["conditions"][1]["status"] = "False"
    verdict = lc.finished(obj)
    assert verdict is not None and (verdict.reason, verdict.message) == ("Succeeded", "done")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.integration.kind)
def test_a_null_replica_spec_is_no_pod_set(kind: JobKind) -> None:
    obj, k = job(kind), kind.integration.kind
    obj["spec"][FIELDS[k]]["Worker"] = None
    want = [p for p in PODSETS[k] if p != "worker"]
    if not want:
        with pytest.raises(ObjectError, match="no replica specs"):
            workloads_for(obj)
        return
    [wl] = workloads_for(obj)
    assert [p["name"] for p in wl["spec"]["podSets"]] == want


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.integration.kind)
def test_simulate_admits_what_fits(kind: JobKind, tmp_path: Path) -> None:
    pods = sum(2 if r == "Worker" else 1 for r in ROLES[kind.integration.kind])
    scenario = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "rf"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
            "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": pods}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
         "metadata": {"name": "lq", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}},
        job(kind, name="first"), job(kind, name="second"),
    ]
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump_all(scenario))
    owners = {w["owner"]: w["status"] for w in simulate([str(path)])["workloads"].values()}
    k = kind.integration.kind
    assert owners == {f"kubeflow.org/v1/{k} ns/first": "Admitted",
                      f"kubeflow.org/v1/{k} ns/second": "Pending"}
