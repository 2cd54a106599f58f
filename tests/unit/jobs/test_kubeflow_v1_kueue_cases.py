"""Kueue v0.19.2's unit tables for the training operator's kubeflow.org/v1 kinds, ported: the
controllers' tables (``pkg/controller/jobs/kubeflow/jobs/<kind>/<kind>_controller_test.go``:
TestOrderedReplicaTypes, TestPodSets, TestValidate, TestRestorePodSetsInfo, TestReconciler)
and the MultiKueue adapters' (``<kind>_multikueue_adapter_test.go`` TestMultiKueueAdapter) for
TFJob, XGBoostJob, PaddleJob and JAXJob, and for PyTorchJob, which runs on the same shared
implementation (``manager.jobs.kubeflow_v1``). Each case's id is the kind, Kueue's test file,
test and case name.

Left out, with the reason by each table:

* TestPriorityClass (7 cases each for TFJob, XGBoostJob, PaddleJob and PyTorchJob, 2 for
  JAXJob): the pod PriorityClass of ``runPolicy.schedulingPolicy`` or of a replica template;
  pykueue does not model pod priority classes (only WorkloadPriorityClass labels give a
  Workload its priority), as for MPIJob.
* TestPodSets "without required and preferred topology annotation if TAS is disabled"
  (TFJob, XGBoostJob, PaddleJob, PyTorchJob): pykueue's Workload construction reads no
  feature gate. Kueue also sets podIndexLabel ``training.kubeflow.org/replica-index`` on each
  pod set's topology request (with TAS on, even without a topology annotation); pykueue's
  requests carry no podIndexLabel, for any kind, so the pod sets below lack it.
* TestMultiKueueAdapter "remote <kind> is deleted" and "missing job is not considered
  managed": API calls of the MultiKueue controller, not of the kind's adapter;
  "sync creates missing remote <kind>, WorkloadIdentifierAnnotations enabled": pykueue names
  the prebuilt Workload in a label only.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.gates import FeatureGates
from pykueue.manager.jobs.jaxjob import kind as jaxjob
from pykueue.manager.jobs.kubeflow_v1 import KubeflowJobLifecycle, KubeflowJobType, KubeflowJobWebhook
from pykueue.manager.jobs.lifecycle import Replace, managed_by_multikueue
from pykueue.manager.jobs.paddlejob import kind as paddlejob
from pykueue.manager.jobs.pytorchjob import lifecycle as pytorchjob
from pykueue.manager.jobs.pytorchjob.webhook import WEBHOOK as PYTORCH_WEBHOOK
from pykueue.manager.jobs.tfjob import kind as tfjob
from pykueue.manager.jobs.xgboostjob import kind as xgboostjob

IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.53"  # any image: only copied around
REQUIRED, PREFERRED = keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_PREFERRED_TOPOLOGY
SLICE_TOPOLOGY, SLICE_SIZE = keys.PODSET_SLICE_REQUIRED_TOPOLOGY, keys.PODSET_SLICE_SIZE
TAS_ON = {"TopologyAwareScheduling": True}


@dataclass(frozen=True)
class Kind:
    name: str
    job_type: KubeflowJobType
    lifecycle: KubeflowJobLifecycle
    webhook: KubeflowJobWebhook
    container: str  # the container name Kueue's wrapper gives a replica it is asked for

    def source(self, test: str, case: str) -> str:
        return f'{self.name} {self.name.lower()}_controller_test.go {test} "{case}"'


TF = Kind("TFJob", tfjob.TFJOB, tfjob.LIFECYCLE, tfjob.WEBHOOK, "tensorflow")
XGB = Kind("XGBoostJob", xgboostjob.XGBOOSTJOB, xgboostjob.LIFECYCLE, xgboostjob.WEBHOOK, "xgboost")
PADDLE = Kind("PaddleJob", paddlejob.PADDLEJOB, paddlejob.LIFECYCLE, paddlejob.WEBHOOK, "paddle")
JAX = Kind("JAXJob", jaxjob.JAXJOB, jaxjob.LIFECYCLE, jaxjob.WEBHOOK, "jax")
PYTORCH = Kind("PyTorchJob", pytorchjob.PYTORCHJOB, pytorchjob.LIFECYCLE, PYTORCH_WEBHOOK, "pytorch")

Replica = tuple[str, int, dict[str, str] | None]  # replica type, replicas, template annotations


# -- Kueue's job wrappers (pkg/util/testingjobs/<kind>), as plain objects ------------------------


def make(kind: Kind, name: str = "job", ns: str = "ns") -> dict[str, Any]:
    """Make<Kind>: suspended, no replica specs."""
    return {"apiVersion": "kubeflow.org/v1", "kind": kind.name,
            "metadata": {"name": name, "namespace": ns, "annotations": {}},
            "spec": {"runPolicy": {"suspend": True}, kind.job_type.replicas_field: {}}}


def _default_replica() -> dict[str, Any]:
    return {"replicas": 1, "template": {"spec": {
        "restartPolicy": "Never", "nodeSelector": {},
        "containers": [{"name": "c", "image": IMAGE, "command": [], "resources": {"requests": {}}}]}}}


def with_replicas(kind: Kind, job: dict[str, Any], *replicas: Replica) -> dict[str, Any]:
    """<Kind>ReplicaSpecs: each replica type asked for gets ``replicas`` pods, its container the
    kind's name, no restart policy, and the template annotations given."""
    specs = job["spec"][kind.job_type.replicas_field]
    for role, count, ann in replicas:
        spec = specs.setdefault(role, _default_replica())
        spec["replicas"] = count
        spec["template"]["spec"].pop("restartPolicy")
        spec["template"]["spec"]["containers"][0]["name"] = kind.container
        if ann is not None:
            spec["template"].setdefault("metadata", {})["annotations"] = dict(ann)
    return job


def build(kind: Kind, *replicas: Replica) -> dict[str, Any]:
    return with_replicas(kind, make(kind, kind.name.lower()), *replicas)


def template(kind: Kind, job: dict[str, Any], role: str) -> dict[str, Any]:
    result: dict[str, Any] = job["spec"][kind.job_type.replicas_field][role]["template"]
    return result


def ctx(gates: dict[str, bool] | None = None) -> AdmissionContext:
    policy = AdmissionPolicy(frameworks=frozenset(k.job_type.integration.name for k in ALL),
                             gates=FeatureGates(gates or {}))
    return AdmissionContext(policy, ClusterFacts(namespace_labels={keys.NAMESPACE_NAME_LABEL: "ns"}))


ALL = (TF, XGB, PADDLE, JAX, PYTORCH)


# -- <kind>_controller_test.go TestOrderedReplicaTypes ------------------------------------------

ORDERED: list[tuple[Kind, str, list[str] | None, list[str]]] = [
    (TF, "job has no replicas", None, []),
    (TF, "job has all replicas", ["PS", "Eval", "Worker", "Chief", "Master"],
     ["Chief", "Master", "PS", "Worker", "Eval"]),
    (TF, "job has only worker replicas", ["Worker"], ["Worker"]),
    (XGB, "job has no replicas", None, []),
    (XGB, "job has all replicas", ["Master", "Worker"], ["Master", "Worker"]),
    (XGB, "job has only worker replica", ["Worker"], ["Worker"]),
    (PADDLE, "job has no replicas", None, []),
    (PADDLE, "job has all replicas", ["Master", "Worker"], ["Master", "Worker"]),
    (PADDLE, "job only has the worker replica", ["Worker"], ["Worker"]),
    (JAX, "job has no replicas", None, []),
    (JAX, "job has worker replicas", ["Worker"], ["Worker"]),
    (PYTORCH, "job has no replicas", None, []),
    (PYTORCH, "job has all replicas", ["Master", "Worker"], ["Master", "Worker"]),
    (PYTORCH, "job only has the worker replica", ["Worker"], ["Worker"]),
]


@pytest.mark.parametrize("kind,case,present,want", ORDERED,
                         ids=[k.source("TestOrderedReplicaTypes", c) for k, c, _, _ in ORDERED])
def test_ordered_replica_types(kind: Kind, case: str, present: list[str] | None, want: list[str]) -> None:
    job: dict[str, Any] = {} if present is None else {
        "spec": {kind.job_type.replicas_field: {role: {} for role in present}}}
    assert kind.job_type.roles(job) == want


# -- <kind>_controller_test.go TestPodSets -------------------------------------------------------

RACK, BLOCK = {REQUIRED: "cloud.com/rack"}, {PREFERRED: "cloud.com/block"}
MASTER_WORKER: list[Replica] = [("Master", 1, None), ("Worker", 1, None)]
PODSETS: list[tuple[Kind, str, list[Replica]]] = [
    (TF, "no annotations", [("Chief", 1, None), ("PS", 1, None), ("Worker", 1, None)]),
    (TF, "with required and preferred topology annotation",
     [("Chief", 1, RACK), ("PS", 1, BLOCK), ("Worker", 1, None)]),
    (XGB, "no annotations", MASTER_WORKER),
    (XGB, "with required and preferred topology annotation", [("Master", 1, RACK), ("Worker", 1, BLOCK)]),
    (PADDLE, "no annotations", MASTER_WORKER),
    (PADDLE, "with required and preferred topology annotation", [("Master", 1, RACK), ("Worker", 1, BLOCK)]),
    (JAX, "no annotations", [("Worker", 1, None)]),
    (JAX, "with required and preferred topology annotation", [("Worker", 1, BLOCK)]),
    (PYTORCH, "no annotations", MASTER_WORKER),
    (PYTORCH, "with required and preferred topology annotation", [("Master", 1, RACK), ("Worker", 1, BLOCK)]),
]


@pytest.mark.parametrize("kind,case,replicas", PODSETS,
                         ids=[k.source("TestPodSets", c) for k, c, _ in PODSETS])
def test_pod_sets(kind: Kind, case: str, replicas: list[Replica]) -> None:
    job = build(kind, *replicas)
    want = []
    for role, count, ann in replicas:
        podset: dict[str, Any] = {"name": role.lower(), "count": count,
                                  "template": copy.deepcopy(template(kind, job, role))}
        for key, field in ((REQUIRED, "required"), (PREFERRED, "preferred")):
            if ann and key in ann:
                podset["topologyRequest"] = {field: ann[key]}
        want.append(podset)
    [wl] = kind.lifecycle.workloads(job)
    assert wl["spec"]["podSets"] == want


# -- <kind>_controller_test.go TestValidate ------------------------------------------------------
# Kueue runs ValidateOnCreate and ValidateOnUpdate (the kind's own rules, the same on both);
# here the webhook's whole validation of a create and of an update that changes nothing.

BOTH = {REQUIRED: "cloud.com/rack", PREFERRED: "cloud.com/block"}
ONE_TOPOLOGY = ('must not contain more than one topology annotation: '
                '["kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology", '
                '"kueue.x-k8s.io/podset-unconstrained-topology"]')


def _slice(size: int, required: str = "cloud.com/rack") -> dict[str, str]:
    return {REQUIRED: required, SLICE_TOPOLOGY: "cloud.com/block", SLICE_SIZE: str(size)}


def _two_annotations(kind: Kind, *roles: str) -> list[str]:
    return [f"{kind.job_type.metadata_path(r)}.annotations: Invalid value: {ONE_TOPOLOGY}" for r in roles]


def _too_large(kind: Kind, *sizes: tuple[str, int, int]) -> list[str]:
    return [f'{kind.job_type.metadata_path(role)}.annotations[{SLICE_SIZE}]: Invalid value: "{size}": '
            f"must not be greater than pod set count {count}" for role, size, count in sizes]


VALIDATE: list[tuple[Kind, str, list[Replica], dict[str, bool] | None, list[str]]] = [
    (TF, "no annotations", [("Chief", 1, None), ("PS", 1, None), ("Worker", 1, None)], None, []),
    (TF, "valid TAS request", [("Chief", 1, RACK), ("PS", 1, BLOCK), ("Worker", 1, None)], TAS_ON, []),
    (TF, "invalid TAS request", [("Chief", 1, BOTH), ("PS", 1, BOTH), ("Worker", 1, RACK)], TAS_ON,
     _two_annotations(TF, "Chief", "PS")),
    (TF, "invalid slice topology request - slice size larger than number of podsets",
     [("Chief", 3, _slice(5)), ("PS", 5, _slice(10)), ("Worker", 10, _slice(20))], TAS_ON,
     _too_large(TF, ("Chief", 5, 3), ("PS", 10, 5), ("Worker", 20, 10))),
    (XGB, "no annotations", MASTER_WORKER, None, []),
    (XGB, "valid TAS request", [("Master", 1, RACK), ("Worker", 3, BLOCK)], TAS_ON, []),
    (XGB, "invalid TAS request", [("Master", 1, BOTH), ("Worker", 3, BOTH)], TAS_ON,
     _two_annotations(XGB, "Master", "Worker")),
    (XGB, "invalid slice topology request - slice size larger than number of podsets",
     [("Master", 5, _slice(10)), ("Worker", 10, _slice(20))], TAS_ON,
     _too_large(XGB, ("Master", 10, 5), ("Worker", 20, 10))),
    (PADDLE, "no annotations", MASTER_WORKER, None, []),
    (PADDLE, "valid TAS request", [("Master", 1, RACK), ("Worker", 1, BLOCK)], TAS_ON, []),
    (PADDLE, "invalid TAS request", [("Master", 1, BOTH), ("Worker", 1, BOTH)], TAS_ON,
     _two_annotations(PADDLE, "Master", "Worker")),
    (PADDLE, "invalid slice topology request - slice size larger than number of podsets",
     [("Master", 5, _slice(10)), ("Worker", 10, _slice(20))], TAS_ON,
     _too_large(PADDLE, ("Master", 10, 5), ("Worker", 20, 10))),
    (JAX, "no annotations", [("Worker", 1, None)], None, []),
    (JAX, "valid TAS request", [("Worker", 3, BLOCK)], TAS_ON, []),
    (JAX, "invalid TAS request", [("Worker", 3, BOTH)], TAS_ON, _two_annotations(JAX, "Worker")),
    (JAX, "invalid slice topology request - slice size larger than number of podsets",
     [("Worker", 3, _slice(20, "cloud.com/block"))], TAS_ON, _too_large(JAX, ("Worker", 20, 3))),
    (PYTORCH, "no annotations", MASTER_WORKER, None, []),
    (PYTORCH, "valid TAS request", [("Master", 1, RACK), ("Worker", 3, BLOCK)], TAS_ON, []),
    (PYTORCH, "invalid TAS request", [("Master", 1, BOTH), ("Worker", 3, BOTH)], TAS_ON,
     _two_annotations(PYTORCH, "Master", "Worker")),
    (PYTORCH, "invalid slice topology request - slice size larger than number of podsets",
     [("Master", 5, _slice(10)), ("Worker", 10, _slice(20))], TAS_ON,
     _too_large(PYTORCH, ("Master", 10, 5), ("Worker", 20, 10))),
]


@pytest.mark.parametrize("kind,case,replicas,gates,want", VALIDATE,
                         ids=[k.source("TestValidate", c) for k, c, *_ in VALIDATE])
def test_validate(kind: Kind, case: str, replicas: list[Replica], gates: dict[str, bool] | None,
                  want: list[str]) -> None:
    job = build(kind, *replicas)
    assert [str(e) for e in kind.webhook.validate(job, None, ctx(gates))] == want
    assert [str(e) for e in kind.webhook.validate(job, copy.deepcopy(job), ctx(gates))] == want


# -- pytorchjob_controller_test.go TestRestorePodSetsInfo ---------------------------------------
# Kueue restores from the infos of the admitted Workload's pod sets; pykueue from the pod set
# templates of that Workload, so each case's infos become the Workload's pod sets.

RESTORE: list[tuple[str, list[str], bool]] = [
    ("more podSetsInfo than replica types is a no-op", ["master", "worker", "extra"], False),
    ("fewer podSetsInfo than replica types is a no-op", ["master"], False),
    ("matching length restores pod sets", ["master", "worker"], True),
]


@pytest.mark.parametrize("case,podsets,changed", RESTORE,
                         ids=[PYTORCH.source("TestRestorePodSetsInfo", c) for c, _, _ in RESTORE])
def test_restore_pod_sets_info(case: str, podsets: list[str], changed: bool) -> None:
    job = build(PYTORCH, *MASTER_WORKER)
    restored = {"spec": {"nodeSelector": {"restored": "true"}}}
    workload = {"spec": {"podSets": [{"name": n, "count": 1, "template": copy.deepcopy(restored)}
                                     for n in podsets]}}
    actions = PYTORCH.lifecycle.restore(job, workload)
    assert bool(actions) is changed
    for action in actions:
        assert isinstance(action, Replace)
        for role in ("Master", "Worker"):
            assert template(PYTORCH, action.obj, role)["spec"]["nodeSelector"] == {"restored": "true"}


# -- xgboostjob_controller_test.go and paddlejob_controller_test.go TestReconciler -------------
# The reconciler's decisions, through the lifecycle it asks: whether the job is managed, the
# Workload it creates (pod set names and counts; Kueue's comparison ignores the templates) and,
# for an evicted Workload, the stop and then the restore of the templates (pykueue's
# reconciler restores once the stopped job is seen suspended, Kueue's in the same pass).


def _reconciler_job(kind: Kind, parallelism: int) -> dict[str, Any]:
    """<Kind>ReplicaSpecsDefault().Parallelism(n): Master and Worker, n workers."""
    job = make(kind, kind.name.lower())
    for role in ("Master", "Worker"):
        job["spec"][kind.job_type.replicas_field][role] = _default_replica()
    job["spec"][kind.job_type.replicas_field]["Worker"]["replicas"] = parallelism
    return job


def _policy(kind: Kind, manage_without_queue: bool) -> AdmissionPolicy:
    return AdmissionPolicy(manage_jobs_without_queue_name=manage_without_queue,
                           frameworks=frozenset({kind.job_type.integration.name}))


@pytest.mark.parametrize("kind", [XGB, PADDLE],
                         ids=lambda k: k.source("TestReconciler", "workload is created with podsets"))
def test_reconciler_workload_is_created_with_podsets(kind: Kind) -> None:
    job = _reconciler_job(kind, 2)
    policy = _policy(kind, manage_without_queue=True)
    assert kind.lifecycle.is_managed(job, policy, {keys.NAMESPACE_NAME_LABEL: "ns"})
    [wl] = kind.lifecycle.workloads(job)
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("master", 1), ("worker", 2)]
    assert "queueName" not in wl["spec"]


@pytest.mark.parametrize("kind", [XGB, PADDLE], ids=lambda k: k.source(
    "TestReconciler", "workload isn't created due to manageJobsWithoutQueueName=false"))
def test_reconciler_no_workload_without_queue_name(kind: Kind) -> None:
    policy = _policy(kind, manage_without_queue=False)
    assert not kind.lifecycle.is_managed(_reconciler_job(kind, 2), policy, {keys.NAMESPACE_NAME_LABEL: "ns"})


def _evicted_case_job(kind: Kind, suspend: bool, node_selector: dict[str, str] | None) -> dict[str, Any]:
    job = _reconciler_job(kind, 10)
    job["metadata"]["labels"] = {keys.QUEUE_NAME: "foo"}
    job["spec"]["runPolicy"]["suspend"] = suspend
    for role, cpu in (("Master", "1"), ("Worker", "5")):
        pod = job["spec"][kind.job_type.replicas_field][role]["template"]["spec"]
        pod["containers"][0].update(image="", resources={"requests": {"cpu": cpu}})
        if node_selector is None:
            del pod["nodeSelector"]
        else:
            pod["nodeSelector"] = dict(node_selector)
    job["status"] = {"replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 10}}}
    return job


@pytest.mark.parametrize("kind", [XGB, PADDLE], ids=lambda k: k.source(
    "TestReconciler", "when workload is evicted, suspended is reset, restore node affinity"))
def test_reconciler_evicted_workload_stops_and_restores(kind: Kind) -> None:
    job = _evicted_case_job(kind, suspend=False, node_selector={"provisioning": "spot"})
    workload = {"spec": {"podSets": [
        {"name": name, "count": count,
         "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}
        for name, count, cpu in (("master", 1, "1"), ("worker", 10, "5"))]}}
    assert kind.lifecycle.is_active(job)
    [stop] = kind.lifecycle.stop(job)
    assert isinstance(stop, Replace)
    [restore] = kind.lifecycle.restore(stop.obj, workload)
    assert isinstance(restore, Replace)
    assert restore.obj == _evicted_case_job(kind, suspend=True, node_selector=None)


# -- <kind>_multikueue_adapter_test.go TestMultiKueueAdapter -------------------------------------
# The adapter's pure parts: the copy created in the worker, the status copied back, whether
# the manager's job is MultiKueue's. Kueue's case names spell the kinds as below.

MK_NAMES = {"TFJob": ("tfjob", "tfjob"), "XGBoostJob": ("xgboostjob", "XgBoostJob"),
            "PaddleJob": ("PaddleJob", "PaddleJob"), "JAXJob": ("jaxjob", "jaxjob"),
            "PyTorchJob": ("pytorchjob", "pytorchjob")}


def _mk_source(kind: Kind, case: str) -> str:
    file = "pytorch" if kind is PYTORCH else kind.name.lower()
    return f'{kind.name} {file}_multikueue_adapter_test.go TestMultiKueueAdapter "{case}"'


def _mk_job(kind: Kind, suspend: bool = False, managed_by: str | None = None) -> dict[str, Any]:
    job = make(kind, kind.name.lower() + "1")
    job["metadata"]["labels"] = {keys.QUEUE_NAME: "queue"}
    job["spec"]["runPolicy"]["suspend"] = suspend
    if managed_by is not None:
        job["spec"]["runPolicy"]["managedBy"] = managed_by
    return job


@pytest.mark.parametrize("kind", ALL, ids=[
    _mk_source(k, f"sync creates missing remote {MK_NAMES[k.name][0]}") for k in ALL])
def test_multikueue_sync_creates_the_remote_job(kind: Kind) -> None:
    local = _mk_job(kind)
    # Kueue's cases turn WorkloadIdentifierAnnotations off: the prebuilt name goes in a label.
    remote = kind.lifecycle.multikueue.remote_copy(local, "wl1", "origin1", identifier_annotations=False)
    want = _mk_job(kind)
    want["metadata"]["labels"].update({keys.PREBUILT_WORKLOAD_NAME: "wl1", keys.MULTIKUEUE_ORIGIN: "origin1"})
    del want["metadata"]["annotations"]  # empty: Kueue's comparison equates it with none
    assert remote == want


@pytest.mark.parametrize("kind,suspend", [(k, s) for k in ALL for s in (False, True)], ids=[
    _mk_source(k, f"sync status from remote {MK_NAMES[k.name][1]}" if not s else
               f"sync status from remote while local {MK_NAMES[k.name][1]} is suspended")
    for k in ALL for s in (False, True)])
def test_multikueue_status_is_copied_back(kind: Kind, suspend: bool) -> None:
    local = _mk_job(kind, suspend=suspend)
    remote = _mk_job(kind, suspend=suspend)
    remote["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    mirrored = kind.lifecycle.multikueue.with_remote_status(local, remote)
    assert mirrored == {**local, "status": remote["status"]}
    assert kind.lifecycle.multikueue.with_remote_status(mirrored, remote) is None


@pytest.mark.parametrize("kind,managed_by,want", [(k, m, w) for k in ALL for m, w in (
    (None, False), (keys.MULTIKUEUE_CONTROLLER, True))], ids=[
    _mk_source(k, c) for k in ALL for c in ("job with wrong managedBy is not considered managed",
                                            "job managedBy multikueue")])
def test_multikueue_is_job_managed(kind: Kind, managed_by: str | None, want: bool) -> None:
    assert managed_by_multikueue(kind.lifecycle, _mk_job(kind, managed_by=managed_by)) is want
