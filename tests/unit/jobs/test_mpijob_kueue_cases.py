"""Kueue v0.19.2's unit tables for MPIJob, ported: workload construction, start and restore
(``pkg/controller/jobs/mpijob/mpijob_controller_test.go``) and the webhook's defaulting and
validation (``mpijob_webhook_test.go``). Each case's id is Kueue's test and case name.

What pykueue does not model is left out here (see the notes by each table): the pod
PriorityClass of a job (only WorkloadPriorityClass labels give a Workload its priority), the
``podIndexLabel`` of a topology request, and feature gates in the Workload construction.
Cluster lookups of the defaulting (does the LocalQueue's ClusterQueue run a MultiKueue check)
are resolved before the rules run, so those cases state the answer the lookup gives.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.gates import FeatureGates
from pykueue.manager.jobs.lifecycle import PodSetInfo, Replace, StartConflict
from pykueue.manager.jobs.mpijob.lifecycle import LIFECYCLE as MPI
from pykueue.manager.jobs.mpijob.webhook import WEBHOOK
from pykueue.manager.jobs.names import DNS1123_SUBDOMAIN_MSG

MPIJOB = "kubeflow.org/mpijob"
IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.53"  # any image: only copied around
TAS_ON = {"TopologyAwareScheduling": True}
TAS_OFF = {"TopologyAwareScheduling": False}
REQUIRED, PREFERRED = keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_PREFERRED_TOPOLOGY
GROUP, OFFSET = keys.PODSET_GROUP_NAME, keys.POD_INDEX_OFFSET
SLICE_TOPOLOGY, SLICE_SIZE = keys.PODSET_SLICE_REQUIRED_TOPOLOGY, keys.PODSET_SLICE_SIZE
LAUNCHER_ANN = "spec.mpiReplicaSpecs[Launcher].template.metadata.annotations"
WORKER_ANN = "spec.mpiReplicaSpecs[Worker].template.metadata.annotations"


# -- Kueue's MPIJob wrapper, as plain objects ---------------------------------------------------


def make(name: str = "job", ns: str = "default") -> dict[str, Any]:
    """MakeMPIJob: suspended, no replica specs."""
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": {"name": name, "namespace": ns, "annotations": {}},
            "spec": {"runPolicy": {"suspend": True}, "mpiReplicaSpecs": {}}}


def _generic() -> dict[str, Any]:
    return {"replicas": 1, "template": {"spec": {
        "restartPolicy": "Never", "nodeSelector": {},
        "containers": [{"name": "mpijob", "image": IMAGE, "command": [],
                        "resources": {"requests": {}, "limits": {}}}]}}}


def launcher(job: dict[str, Any]) -> dict[str, Any]:
    job["spec"]["mpiReplicaSpecs"]["Launcher"] = _generic()
    return job


def worker(job: dict[str, Any]) -> dict[str, Any]:
    job["spec"]["mpiReplicaSpecs"]["Worker"] = _generic()
    return job


def launcher_and_worker(job: dict[str, Any]) -> dict[str, Any]:
    return worker(launcher(job))


def replica_specs(job: dict[str, Any], launcher_count: int = 1, worker_count: int = 3) -> dict[str, Any]:
    """MPIJobReplicaSpecs(Launcher: n, Worker: m) as the tables use it (images left empty)."""
    launcher_and_worker(job)
    for role, count in (("Launcher", launcher_count), ("Worker", worker_count)):
        spec = job["spec"]["mpiReplicaSpecs"][role]
        spec["replicas"] = count
        spec["template"]["spec"]["containers"][0]["image"] = ""
        spec["template"]["spec"]["restartPolicy"] = ""
    return job


def spec_of(job: dict[str, Any], role: str, value: Any) -> dict[str, Any]:
    job["spec"]["mpiReplicaSpecs"][role] = value
    return job


def pod_annotation(job: dict[str, Any], role: str, key: str, value: str) -> dict[str, Any]:
    template = job["spec"]["mpiReplicaSpecs"][role]["template"]
    template.setdefault("metadata", {}).setdefault("annotations", {})[key] = value
    return job


def queue(job: dict[str, Any], name: str) -> dict[str, Any]:
    job["metadata"].setdefault("labels", {})[keys.QUEUE_NAME] = name
    return job


def prebuilt(job: dict[str, Any], workload: str) -> dict[str, Any]:
    job["metadata"].setdefault("labels", {})[keys.PREBUILT_WORKLOAD_NAME] = workload
    return job


def parallelism(job: dict[str, Any], n: int) -> dict[str, Any]:
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = n
    return job


def run_launcher_as_worker(job: dict[str, Any], value: bool) -> dict[str, Any]:
    job["spec"]["runLauncherAsWorker"] = value
    return job


def template(job: dict[str, Any], role: str) -> dict[str, Any]:
    result: dict[str, Any] = job["spec"]["mpiReplicaSpecs"][role]["template"]
    return result


def ctx(gates: dict[str, bool] | None = None, *, manage_without_queue: bool = False,
        **facts: Any) -> AdmissionContext:
    policy = AdmissionPolicy(manage_jobs_without_queue_name=manage_without_queue,
                             frameworks=frozenset({"batch/job", MPIJOB}), gates=FeatureGates(gates or {}))
    facts.setdefault("namespace_labels", {keys.NAMESPACE_NAME_LABEL: "default"})
    return AdmissionContext(policy, ClusterFacts(**facts))


# -- mpijob_controller_test.go TestPodSets ------------------------------------------------------
# Not ported: "without required and preferred topology annotation if TAS is disabled" and
# "without preferred topology annotation if TAS is disabled": pykueue's Workload construction
# does not read feature gates (a template's topology annotations always become the request).
# Kueue also sets podIndexLabel training.kubeflow.org/replica-index on each topology request;
# pykueue's requests carry no podIndexLabel (no kind's do), so the requests below lack it.


def _podsets(job: dict[str, Any]) -> list[dict[str, Any]]:
    [wl] = MPI.workloads(job)
    result: list[dict[str, Any]] = wl["spec"]["podSets"]
    return result


def _podset(job: dict[str, Any], role: str, count: int, **extra: Any) -> dict[str, Any]:
    ps = {"name": role.lower(), "count": count, "template": copy.deepcopy(template(job, role))}
    ps.update(extra)
    return ps


def _pod_sets_job() -> dict[str, Any]:
    return replica_specs(make("pod", "ns"), 1, 3)


def test_pod_sets_no_annotations() -> None:
    # kueue v0.19.2 mpijob_controller_test.go TestPodSets "no annotations"
    job = _pod_sets_job()
    assert _podsets(job) == [_podset(job, "Launcher", 1), _podset(job, "Worker", 3)]


@pytest.mark.parametrize("annotation,field", [(REQUIRED, "required"), (PREFERRED, "preferred")],
                         ids=["with required topology annotation", "with preferred topology annotation"])
def test_pod_sets_with_topology_annotation(annotation: str, field: str) -> None:
    # kueue v0.19.2 mpijob_controller_test.go TestPodSets "with required topology annotation",
    # "with preferred topology annotation" (less podIndexLabel)
    job = _pod_sets_job()
    for role in ("Launcher", "Worker"):
        pod_annotation(job, role, annotation, "cloud.com/block")
    podsets = _podsets(job)
    assert podsets == [_podset(job, "Launcher", 1, topologyRequest={field: "cloud.com/block"}),
                       _podset(job, "Worker", 3, topologyRequest={field: "cloud.com/block"})]
    assert all(ps["template"]["metadata"]["annotations"] == {annotation: "cloud.com/block"} for ps in podsets)


def test_pod_sets_nil_launcher_replica_spec_is_skipped() -> None:
    # kueue v0.19.2 mpijob_controller_test.go TestPodSets "nil launcher replica spec is skipped"
    job = spec_of(_pod_sets_job(), "Launcher", None)
    assert _podsets(job) == [_podset(job, "Worker", 3)]


# -- mpijob_controller_test.go TestRestorePodSetsInfo -------------------------------------------
# Kueue restores from the infos of the admitted Workload's pod sets; pykueue from the pod set
# templates of that Workload, so each case's infos become the Workload's pod sets.


def _restoring(names: list[str]) -> dict[str, Any]:
    tmpl = {"spec": {"nodeSelector": {"restored": "true"}}}
    return {"spec": {"podSets": [{"name": n, "count": 1, "template": copy.deepcopy(tmpl)} for n in names]}}


RESTORE: list[tuple[str, str | None, list[str], list[str]]] = [
    ("more podSetsInfo than replica types is a no-op", None, ["launcher", "worker", "extra"], []),
    ("fewer podSetsInfo than replica types is a no-op", None, ["launcher"], []),
    ("matching length restores pod sets", None, ["launcher", "worker"], ["Launcher", "Worker"]),
    ("nil launcher replica spec restores only the worker", "Launcher", ["worker"], ["Worker"]),
    ("nil worker replica spec restores only the launcher", "Worker", ["launcher"], ["Launcher"]),
]


@pytest.mark.parametrize("case,drop,podsets,restored", RESTORE, ids=[c[0] for c in RESTORE])
def test_restore_pod_sets_info(case: str, drop: str | None, podsets: list[str], restored: list[str]) -> None:
    # kueue v0.19.2 mpijob_controller_test.go TestRestorePodSetsInfo (the case named in the id)
    job = launcher_and_worker(make("mpijob", "ns"))
    if drop:
        spec_of(job, drop, None)
    actions = MPI.restore(job, _restoring(podsets))
    assert bool(actions) is bool(restored)
    for action in actions:
        assert isinstance(action, Replace)
        for role in restored:
            assert template(action.obj, role)["spec"]["nodeSelector"] == {"restored": "true"}


# -- mpijob_controller_test.go TestRunWithPodSetsInfo -------------------------------------------


def _assigned(names: list[str]) -> list[PodSetInfo]:
    return [PodSetInfo(n, 1, node_selector={"assigned": "true"}) for n in names]


def test_run_mismatched_length_returns_an_error() -> None:
    # kueue v0.19.2 mpijob_controller_test.go TestRunWithPodSetsInfo "mismatched length returns an error"
    job = launcher_and_worker(make("mpijob", "ns"))
    [wl] = MPI.workloads(job)
    with pytest.raises(StartConflict):
        MPI.start(job, wl, [PodSetInfo("launcher", 1)])


RUN: list[tuple[str, str | None, list[str]]] = [
    ("matching length runs the job", None, ["Launcher", "Worker"]),
    ("nil launcher replica spec only assigns the worker", "Launcher", ["Worker"]),
    ("nil worker replica spec only assigns the launcher", "Worker", ["Launcher"]),
]


@pytest.mark.parametrize("case,drop,assigned", RUN, ids=[c[0] for c in RUN])
def test_run_with_pod_sets_info(case: str, drop: str | None, assigned: list[str]) -> None:
    # kueue v0.19.2 mpijob_controller_test.go TestRunWithPodSetsInfo (the case named in the id)
    job = launcher_and_worker(make("mpijob", "ns"))
    if drop:
        spec_of(job, drop, None)
    [wl] = MPI.workloads(job)
    [action] = MPI.start(job, wl, _assigned([r.lower() for r in assigned]))
    assert isinstance(action, Replace) and action.obj["spec"]["runPolicy"]["suspend"] is False
    for role in assigned:
        assert template(action.obj, role)["spec"]["nodeSelector"] == {"assigned": "true"}
    if drop:
        assert action.obj["spec"]["mpiReplicaSpecs"][drop] is None


# -- mpijob_controller_test.go TestReconciler ----------------------------------------------------
# Not ported: "workload is created with podsets and PriorityClass" (a pod PriorityClass in
# runPolicy.schedulingPolicy becomes a scheduling.k8s.io priorityClassRef: pykueue does not
# model pod priority classes; TestCalcPriorityClassName's 7 cases likewise). The case with
# both priority classes is ported: the WorkloadPriorityClass wins, which is all pykueue does.


@pytest.mark.parametrize("wpc,pod_pc", [(None, None), ("test-wpc", None), ("test-wpc", "test-pc")], ids=[
    "workload is created with podsets", "workload is created with podsets and workloadPriorityClass",
    "workload is created with podsets, workloadPriorityClass and PriorityClass"])
def test_reconciler_creates_the_workload(wpc: str | None, pod_pc: str | None) -> None:
    # kueue v0.19.2 mpijob_controller_test.go TestReconciler (the case named in the id)
    job = parallelism(launcher_and_worker(make("mpijob", "ns")), 2)
    if wpc:
        job["metadata"].setdefault("labels", {})[keys.PRIORITY_CLASS] = wpc
    if pod_pc:
        job["spec"]["runPolicy"]["schedulingPolicy"] = {"priorityClass": pod_pc}
    # manageJobsWithoutQueueName and a selector of every namespace
    policy = AdmissionPolicy(manage_jobs_without_queue_name=True, frameworks=frozenset({MPIJOB}))
    assert MPI.is_managed(job, policy, {keys.NAMESPACE_NAME_LABEL: "ns"})
    [wl] = MPI.workloads(job)
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("launcher", 1), ("worker", 2)]
    ref = wl["spec"].get("priorityClassRef")
    want = {"group": keys.GROUP, "kind": "WorkloadPriorityClass", "name": wpc}
    assert ref == (None if wpc is None else want)
    assert "queueName" not in wl["spec"]


# -- mpijob_webhook_test.go TestValidateCreate ---------------------------------------------------
# Kueue's errors are compared as text where pykueue's shared topology checks word them as
# Kueue does; "invalid topology request" is compared by field only (pykueue names the
# annotations present rather than all three in its message).


def _tas_job(*annotations: tuple[str, str, str], launcher_count: int = 1) -> dict[str, Any]:
    job = replica_specs(queue(make(), "queue-name"), launcher_count, 3)
    for role, key, value in annotations:
        pod_annotation(job, role, key, value)
    return job


def _group_mismatch(group: str = "groupname") -> list[str]:
    detail = f"must specify '{REQUIRED}' or '{PREFERRED}' topology consistent with '{{}}' in group '{group}'"
    return [f"{LAUNCHER_ANN}: Invalid value: {detail.format(WORKER_ANN)}",
            f"{WORKER_ANN}: Invalid value: {detail.format(LAUNCHER_ANN)}"]


VALIDATE_CREATE: list[tuple[str, Callable[[], dict[str, Any]], dict[str, bool] | None, list[str]]] = [
    ("simple", lambda: queue(make(), "queue"), None, []),
    ("invalid queue-name label", lambda: queue(make(), "queue_name"), None,
     [f'metadata.labels[{keys.QUEUE_NAME}]: Invalid value: "queue_name": {DNS1123_SUBDOMAIN_MSG}']),
    ("with prebuilt workload", lambda: prebuilt(queue(make(), "queue"), "prebuilt-workload"), None, []),
    ("valid topology request", lambda: _tas_job(("Launcher", REQUIRED, "cloud.com/block"),
                                                ("Worker", REQUIRED, "cloud.com/block")), TAS_ON, []),
    ("invalid slice topology request - slice size larger than number of podsets", lambda: _tas_job(
        ("Launcher", REQUIRED, "cloud.com/block"), ("Launcher", SLICE_TOPOLOGY, "cloud.com/block"),
        ("Launcher", SLICE_SIZE, "20"), ("Worker", REQUIRED, "cloud.com/block"),
        ("Worker", SLICE_TOPOLOGY, "cloud.com/block"), ("Worker", SLICE_SIZE, "20")),
     TAS_ON,
     [f'{LAUNCHER_ANN}[{SLICE_SIZE}]: Invalid value: "20": must not be greater than pod set count 1',
      f'{WORKER_ANN}[{SLICE_SIZE}]: Invalid value: "20": must not be greater than pod set count 3']),
    ("valid PodSet grouping request", lambda: _tas_job(
        ("Launcher", GROUP, "groupname"), ("Launcher", REQUIRED, "cloud.com/block"),
        ("Worker", GROUP, "groupname"), ("Worker", REQUIRED, "cloud.com/block")), TAS_ON, []),
    ("invalid PodSet grouping request - groups of size other than 2", lambda: _tas_job(
        ("Launcher", GROUP, "groupname1"), ("Launcher", REQUIRED, "cloud.com/block"),
        ("Worker", GROUP, "groupname2"), ("Worker", REQUIRED, "cloud.com/block")), TAS_ON,
     [f'{LAUNCHER_ANN}[{GROUP}]: Invalid value: "groupname1": can only define groups of exactly 2 pod sets, '
      "got: 1 pod set(s)",
      f'{WORKER_ANN}[{GROUP}]: Invalid value: "groupname2": can only define groups of exactly 2 pod sets, '
      "got: 1 pod set(s)"]),
    ("invalid PodSet grouping request - no leader in group", lambda: _tas_job(
        ("Launcher", GROUP, "groupname"), ("Launcher", REQUIRED, "cloud.com/block"),
        ("Worker", GROUP, "groupname"), ("Worker", REQUIRED, "cloud.com/block"), launcher_count=2), TAS_ON,
     [f'{path}[{GROUP}]: Invalid value: "groupname": can only define groups where at least one pod set has '
      "only 1 replica, got: 2 replica(s) and 3 replica(s) in the group"
      for path in (LAUNCHER_ANN, WORKER_ANN)]),
    ("invalid PodSet grouping request - required topology does not match", lambda: _tas_job(
        ("Launcher", GROUP, "groupname"), ("Launcher", REQUIRED, "cloud.com/block"),
        ("Worker", GROUP, "groupname"), ("Worker", REQUIRED, "cloud.com/rack")), TAS_ON, _group_mismatch()),
    ("invalid PodSet grouping request - preferred topology does not match", lambda: _tas_job(
        ("Launcher", GROUP, "groupname"), ("Launcher", PREFERRED, "cloud.com/block"),
        ("Worker", GROUP, "groupname"), ("Worker", PREFERRED, "cloud.com/rack")), TAS_ON, _group_mismatch()),
    ("invalid PodSet grouping request - different topology annotations within group", lambda: _tas_job(
        ("Launcher", GROUP, "groupname"), ("Launcher", REQUIRED, "cloud.com/block"),
        ("Worker", GROUP, "groupname"), ("Worker", PREFERRED, "cloud.com/rack")), TAS_ON, _group_mismatch()),
]


@pytest.mark.parametrize("case,build,gates,want", VALIDATE_CREATE, ids=[c[0] for c in VALIDATE_CREATE])
def test_validate_create(case: str, build: Callable[[], dict[str, Any]], gates: dict[str, bool] | None,
                         want: list[str]) -> None:
    # kueue v0.19.2 mpijob_webhook_test.go TestValidateCreate (the case named in the id)
    assert [str(e) for e in WEBHOOK.validate(build(), None, ctx(gates))] == want


def test_validate_create_invalid_topology_request() -> None:
    # kueue v0.19.2 mpijob_webhook_test.go TestValidateCreate "invalid topology request" (fields only)
    both = [(role, key, "cloud.com/block") for role in ("Launcher", "Worker")
            for key in (REQUIRED, PREFERRED)]
    job = _tas_job(*both)
    errors = WEBHOOK.validate(job, None, ctx(TAS_ON))
    assert [e.path for e in errors] == [LAUNCHER_ANN, WORKER_ANN]
    assert all("must not contain more than one topology annotation" in str(e) for e in errors)


# -- mpijob_webhook_test.go TestDefault ----------------------------------------------------------
# The managedBy cases: Kueue's webhook asks its queue cache whether the job's LocalQueue leads
# to a ClusterQueue with an active MultiKueue admission check; pykueue's webhook is handed
# that answer (ClusterFacts.queue_uses_multikueue), which each case states.


def _bare(labels: dict[str, str] | None = None, managed_by: str | None = None) -> dict[str, Any]:
    job: dict[str, Any] = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                           "metadata": {"namespace": "default"}, "spec": {}}
    if labels:
        job["metadata"]["labels"] = labels
    if managed_by:
        job["spec"]["runPolicy"] = {"managedBy": managed_by}
    return job


LQ = {keys.QUEUE_NAME: "local-queue"}
MK_ON, MK_OFF = {"MultiKueue": True}, {"MultiKueue": False}
DEFAULT_MANAGED_BY: list[tuple[str, dict[str, Any], dict[str, bool], bool, str | None]] = [
    ("TestDefault_MPIJobManagedBy_mpijobapi.MPIJobControllerName",
     _bare(LQ, "kubeflow.org/mpi-operator"), MK_ON, True, keys.MULTIKUEUE_CONTROLLER),
    ("TestDefault_WithQueueLabel", _bare(LQ), MK_ON, True, keys.MULTIKUEUE_CONTROLLER),
    ("TestDefault_WithoutQueueLabel", _bare(), MK_ON, False, None),
    # no LocalQueue "invalid-queue": no MultiKueue check is found
    ("TestDefault_InvalidQueueName", _bare({keys.QUEUE_NAME: "invalid-queue"}), MK_ON, False, None),
    ("TestDefault_QueueNotFound", _bare({keys.QUEUE_NAME: "non-existent-queue"}), MK_ON, False, None),
    # the ClusterQueue names an AdmissionCheck that does not exist
    ("TestDefault_AdmissionCheckNotFound", _bare(LQ), MK_ON, False, None),
    ("TestDefault_MultiKueueFeatureDisabled", _bare(LQ), MK_OFF, True, None),
    ("TestDefault_UserSpecifiedManagedBy", _bare(LQ, "example.com/foo"), MK_ON, True, "example.com/foo"),
    ("TestDefault_ClusterQueueWithoutAdmissionCheck", _bare(LQ), MK_ON, False, None),
]


@pytest.mark.parametrize("case,job,gates,multikueue,want", DEFAULT_MANAGED_BY,
                         ids=[c[0] for c in DEFAULT_MANAGED_BY])
def test_default_managed_by(case: str, job: dict[str, Any], gates: dict[str, bool], multikueue: bool,
                            want: str | None) -> None:
    # kueue v0.19.2 mpijob_webhook_test.go TestDefault (the case named in the id)
    out = WEBHOOK.default(copy.deepcopy(job), ctx(gates, queue_uses_multikueue=multikueue))
    assert (out["spec"].get("runPolicy") or {}).get("managedBy") == want


DEFAULT_LQ: list[tuple[str, bool, str | None, str | None]] = [
    ("default lq is created, job doesn't have queue label", True, None, "default"),
    ("default lq is created, job has queue label", True, "queue", "queue"),
    ("default lq isn't created, job doesn't have queue label", False, None, None),
]


@pytest.mark.parametrize("case,default_lq,queued,want_queue", DEFAULT_LQ, ids=[c[0] for c in DEFAULT_LQ])
def test_default_local_queue(case: str, default_lq: bool, queued: str | None, want_queue: str | None) -> None:
    # kueue v0.19.2 mpijob_webhook_test.go TestDefault (the case named in the id)
    job = make()
    if queued:
        queue(job, queued)
    want = copy.deepcopy(job)
    if want_queue:
        queue(want, want_queue)
    assert WEBHOOK.default(job, ctx(default_local_queue=default_lq)) == want


def _offset_worker(job: dict[str, Any]) -> dict[str, Any]:
    return pod_annotation(job, "Worker", OFFSET, "1")


def _specs_1_3() -> dict[str, Any]:
    return replica_specs(queue(make(), "queue"), 1, 3)


def _three_specs() -> dict[str, Any]:
    return spec_of(parallelism(launcher_and_worker(queue(make(), "queue")), 3), "Extra", {})


Build = Callable[[], dict[str, Any]]
DEFAULT_TAS: list[tuple[str, dict[str, bool], Build, Callable[[dict[str, Any]], Any]]] = [
    ("TAS enabled, RunLauncherAsWorker true with 2 replica specs", TAS_ON,
     lambda: run_launcher_as_worker(_specs_1_3(), True), _offset_worker),
    ("TAS enabled, RunLauncherAsWorker true with 3 replica specs", TAS_ON,
     lambda: run_launcher_as_worker(_three_specs(), True), _offset_worker),
    ("TAS enabled, RunLauncherAsWorker true without the Launcher replica spec", TAS_ON,
     lambda: run_launcher_as_worker(spec_of(worker(queue(make(), "queue")), "Extra", {}), True), lambda j: j),
    ("TAS enabled, RunLauncherAsWorker true with a nil Launcher replica spec", TAS_ON,
     lambda: run_launcher_as_worker(spec_of(parallelism(worker(queue(make(), "queue")), 3), "Launcher", None),
                                    True), lambda j: j),
    ("TAS enabled, RunLauncherAsWorker true with a nil Worker replica spec", TAS_ON,
     lambda: run_launcher_as_worker(spec_of(launcher(queue(make(), "queue")), "Worker", None), True),
     lambda j: j),
    ("TAS enabled, RunLauncherAsWorker false", TAS_ON, lambda: run_launcher_as_worker(_specs_1_3(), False),
     lambda j: j),
    ("TAS enabled, RunLauncherAsWorker nil", TAS_ON, _specs_1_3, lambda j: j),
    ("TAS disabled, RunLauncherAsWorker true", TAS_OFF, lambda: run_launcher_as_worker(_specs_1_3(), True),
     lambda j: j),
    ("TAS enabled, RunLauncherAsWorker true, only Launcher replica", TAS_ON,
     lambda: run_launcher_as_worker(launcher(queue(make(), "queue")), True), lambda j: j),
    ("TAS enabled, RunLauncherAsWorker true, Worker has existing annotations", TAS_ON,
     lambda: pod_annotation(run_launcher_as_worker(_specs_1_3(), True), "Worker", "existing-annotation",
                            "value"),
     _offset_worker),
    ("TAS enabled, RunLauncherAsWorker true, Launcher has PodSetGroupName annotation", TAS_ON,
     lambda: pod_annotation(run_launcher_as_worker(_specs_1_3(), True), "Launcher", GROUP, "group1"),
     lambda j: j),
]


@pytest.mark.parametrize("case,gates,build,expect", DEFAULT_TAS, ids=[c[0] for c in DEFAULT_TAS])
def test_default_pod_index_offset(case: str, gates: dict[str, bool], build: Callable[[], dict[str, Any]],
                                  expect: Callable[[dict[str, Any]], Any]) -> None:
    # kueue v0.19.2 mpijob_webhook_test.go TestDefault (the case named in the id)
    job = build()
    want = copy.deepcopy(job)
    expect(want)
    assert WEBHOOK.default(job, ctx(gates)) == want

