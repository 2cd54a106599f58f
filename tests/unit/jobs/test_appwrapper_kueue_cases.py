"""Kueue v0.19.2's unit tables for AppWrapper, ported: workload construction
(``pkg/controller/jobs/appwrapper/appwrapper_controller_test.go`` TestPodSets and TestReconciler)
and the MultiKueue adapter (``appwrapper_multikueue_adapter_test.go``). Each case's id is
Kueue's test and case name. Then pykueue's own cases of the same rules: the pod sets the
AppWrapper library declares, infers or has recorded, start and restore through
``podSetInfos``, the phases that finish a Workload, and the wrapped objects running under the
AppWrapper's Workload.

Not ported (see the notes by each table): ``podIndexLabel`` and sub-group labels of a topology
request (pykueue's requests carry none, for any kind), feature gates in the Workload
construction, copying ``provreq.kueue.x-k8s.io/`` annotations to the Workload, and the cases of
the MultiKueue adapter that only exercise Kueue's clients (deleting the remote object, the
``IsJobManagedByKueue`` lookups).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.appwrapper.components import (
    TAS_POD_INDEX_LABEL,
    PathError,
    component_pod_sets,
    pod_template,
    value_at,
)
from pykueue.manager.jobs.appwrapper.kind import workloads
from pykueue.manager.jobs.appwrapper.lifecycle import LIFECYCLE as AW
from pykueue.manager.jobs.appwrapper.webhook import WEBHOOK
from pykueue.manager.jobs.batchjob.lifecycle import LIFECYCLE as BATCH_JOB
from pykueue.manager.jobs.lifecycle import PodSetInfo, Replace, StartConflict
from pykueue.manager.jobs.ownership import find_managed_ancestor, workload_should_be_suspended
from pykueue.manager.jobs.registry import by_cli_name, kind_of

JSON = dict[str, Any]
SOURCE = "kueue v0.19.2 appwrapper_controller_test.go"
MK_SOURCE = "kueue v0.19.2 appwrapper_multikueue_adapter_test.go"
APPWRAPPER = "workload.codeflare.dev/appwrapper"
NS_LABELS = {keys.NAMESPACE_NAME_LABEL: "ns"}
IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.53"


# -- Kueue's wrappers, as plain objects -------------------------------------------------------


def pod_spec(requests: JSON | None = None) -> JSON:
    container = {"name": "c", "image": IMAGE, "resources": {"requests": requests or {"cpu": "1"}}}
    return {"restartPolicy": "Never", "containers": [container]}


def batch_job(name: str = "job", parallelism: int | None = None, completions: int | None = None) -> JSON:
    spec: JSON = {"template": {"spec": pod_spec()}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "ns"},
            "spec": spec}


def pytorch_job(master: int = 1, worker: int = 4, master_annotations: JSON | None = None,
                worker_annotations: JSON | None = None) -> JSON:
    def replica(count: int, annotations: JSON | None) -> JSON:
        template: JSON = {"spec": pod_spec()}
        if annotations:
            template["metadata"] = {"annotations": annotations}
        return {"replicas": count, "template": template}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "pytorchjob", "namespace": "ns"},
            "spec": {"pytorchReplicaSpecs": {"Master": replica(master, master_annotations),
                                             "Worker": replica(worker, worker_annotations)}}}


def appwrapper(*components: JSON, name: str = "aw", queue: str | None = None, suspend: bool = True,
               phase: str | None = None) -> JSON:
    aw: JSON = {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
                "metadata": {"name": name, "namespace": "ns", "uid": f"{name}-uid"},
                "spec": {"components": [c if "template" in c else {"template": c} for c in components],
                         "suspend": suspend}}
    if queue is not None:
        aw["metadata"]["labels"] = {keys.QUEUE_NAME: queue}
    if phase is not None:
        aw["status"] = {"phase": phase}
    return aw


def _podsets(aw: JSON) -> list[JSON]:
    [wl] = workloads(aw)
    result: list[JSON] = wl["spec"]["podSets"]
    return result


def _names_counts(aw: JSON) -> list[tuple[str, int]]:
    return [(p["name"], p["count"]) for p in _podsets(aw)]


# -- appwrapper_controller_test.go TestPodSets ------------------------------------------------
# Not ported: "without required and preferred topology annotation if TAS is disabled" (pykueue's
# Workload construction does not read feature gates). Kueue also gives each topology request
# the podIndexLabel the AppWrapper library names (training.kubeflow.org/replica-index here);
# pykueue's requests carry no podIndexLabel, for any kind.


def test_pod_sets_no_annotations() -> None:
    # kueue v0.19.2 appwrapper_controller_test.go TestPodSets "no annotations"
    aw = appwrapper(pytorch_job(), batch_job(parallelism=2))
    assert _names_counts(aw) == [("aw-0", 1), ("aw-1", 4), ("aw-2", 2)]
    for ps in _podsets(aw):
        assert "topologyRequest" not in ps
        assert ps["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1"}}


def test_pod_sets_with_required_and_preferred_topology_annotation() -> None:
    # kueue v0.19.2 appwrapper_controller_test.go TestPodSets "with required and preferred
    # topology annotation"
    aw = appwrapper(pytorch_job(master_annotations={keys.PODSET_REQUIRED_TOPOLOGY: "cloud.com/rack"},
                                worker_annotations={keys.PODSET_PREFERRED_TOPOLOGY: "cloud.com/block"}))
    master, worker = _podsets(aw)
    assert (master["name"], master["count"]) == ("aw-0", 1)
    assert master["template"]["metadata"]["annotations"] == {keys.PODSET_REQUIRED_TOPOLOGY: "cloud.com/rack"}
    assert master["topologyRequest"] == {"required": "cloud.com/rack"}
    assert (worker["name"], worker["count"]) == ("aw-1", 4)
    assert worker["template"]["metadata"]["annotations"] == {
        keys.PODSET_PREFERRED_TOPOLOGY: "cloud.com/block"}
    assert worker["topologyRequest"] == {"preferred": "cloud.com/block"}


# -- appwrapper_controller_test.go TestReconciler ---------------------------------------------
# Not ported: "workload is created with a ProvReq annotation" beyond its pod sets (copying the
# provreq.kueue.x-k8s.io/ annotations to the Workload is not modelled); "when workload is
# admitted, job gets node selectors" is commented out in Kueue itself (its issue 3103).


@pytest.mark.parametrize("annotations", [
    pytest.param({}, id=f'{SOURCE} TestReconciler "workload is created with podsets"'),
    pytest.param({"provreq.kueue.x-k8s.io/test-annotation": "test-val",
                  "invalid-provreq-prefix/test-annotation-2": "test-val-2"},
                 id=f'{SOURCE} TestReconciler "workload is created with a ProvReq annotation"'),
])
def test_kueue_reconciler_workload_is_created_with_podsets(annotations: JSON) -> None:
    aw = appwrapper(batch_job(parallelism=2))
    aw["metadata"]["annotations"] = annotations
    policy = AdmissionPolicy(manage_jobs_without_queue_name=True, frameworks=frozenset({APPWRAPPER}))
    assert AW.is_managed(aw, policy, NS_LABELS)
    [wl] = workloads(aw)
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("aw-0", 2)]
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "AppWrapper"
    assert wl["metadata"]["name"] == AW.workload_name(aw)


def test_kueue_reconciler_workload_is_not_created_without_manage_jobs_without_queue_name() -> None:
    # kueue v0.19.2 appwrapper_controller_test.go TestReconciler "workload isn't created due to
    # manageJobsWithoutQueueName=false"
    aw = appwrapper(batch_job(parallelism=2))
    assert not AW.is_managed(aw, AdmissionPolicy(frameworks=frozenset({APPWRAPPER})), NS_LABELS)


def test_kueue_reconciler_workload_is_not_recreated_for_a_completed_job() -> None:
    # kueue v0.19.2 appwrapper_controller_test.go TestReconciler "workload shouldn't be recreated
    # for completed job": the AppWrapper says it finished, so no Workload is made for it.
    aw = appwrapper(batch_job(parallelism=2), queue="foo", phase="Succeeded")
    finished = AW.finished(aw)
    assert finished is not None and finished.reason == keys.Reason.SUCCEEDED


# -- appwrapper_multikueue_adapter_test.go TestMultiKueueAdapter -------------------------------
# Not ported: "remote appwrapper is deleted", "missing appwrapper is not considered managed",
# "job with wrong managedBy is not considered managed" and "job managedBy multikueue", which
# exercise Kueue's clients; pykueue's dispatcher reads ``managed_by`` (checked below).


@pytest.mark.parametrize("annotations_gate", [
    pytest.param(False, id=f'{MK_SOURCE} TestMultiKueueAdapter "sync creates missing remote appwrapper"'),
    pytest.param(True, id=f'{MK_SOURCE} TestMultiKueueAdapter "sync creates missing remote appwrapper, '
                          'WorkloadIdentifierAnnotations enabled"'),
])
def test_kueue_multikueue_remote_copy(annotations_gate: bool) -> None:
    local = appwrapper(batch_job(parallelism=2), name="aw1", suspend=False)
    local["spec"]["managedBy"] = keys.MULTIKUEUE_CONTROLLER
    del local["metadata"]["uid"]
    assert AW.multikueue.managed_by(local) == keys.MULTIKUEUE_CONTROLLER
    remote = AW.multikueue.remote_copy(local, "wl1", "origin1", identifier_annotations=annotations_gate)
    want = appwrapper(batch_job(parallelism=2), name="aw1", suspend=False)
    del want["metadata"]["uid"]
    want["metadata"]["labels"] = {keys.MULTIKUEUE_ORIGIN: "origin1"}
    if annotations_gate:
        want["metadata"]["annotations"] = {keys.PREBUILT_WORKLOAD_NAME: "wl1"}
    else:
        want["metadata"]["labels"][keys.PREBUILT_WORKLOAD_NAME] = "wl1"
    assert remote == want
    assert AW.multikueue.managed_by(remote) is None


@pytest.mark.parametrize("suspend", [
    pytest.param(False, id=f'{MK_SOURCE} TestMultiKueueAdapter "sync status from remote appwrapper"'),
    pytest.param(True, id=f'{MK_SOURCE} TestMultiKueueAdapter "sync status from remote while local '
                         'appwrapper is suspended"'),
])
def test_kueue_multikueue_status_is_copied_back(suspend: bool) -> None:
    local = appwrapper(batch_job(parallelism=2), name="aw1", suspend=suspend)
    local["spec"]["managedBy"] = keys.MULTIKUEUE_CONTROLLER
    remote = appwrapper(batch_job(parallelism=2), name="aw1", suspend=False)
    remote["status"] = {"phase": "Succeeded"}
    mirrored = AW.multikueue.with_remote_status(local, remote)
    assert mirrored == {**local, "status": {"phase": "Succeeded"}}
    assert AW.multikueue.with_remote_status(mirrored, remote) is None


# -- pykueue's own: pod sets -----------------------------------------------------------------


def _lws() -> JSON:
    """The LeaderWorkerSet of Kueue's sample AppWrapper, with the pod sets it declares."""
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "lws"},
           "spec": {"replicas": 2, "leaderWorkerTemplate": {
               "size": 3,
               "leaderTemplate": {"spec": {"containers": [{"name": "l", "image": IMAGE,
                                                           "resources": {"requests": {"cpu": "100m"}}}]}},
               "workerTemplate": {"spec": {"containers": [{"name": "w", "image": IMAGE,
                                                           "resources": {"requests": {"cpu": "200m"}}}]}}}}}
    return {"podSets": [{"path": "template.spec.leaderWorkerTemplate.leaderTemplate", "replicas": 2},
                        {"path": "template.spec.leaderWorkerTemplate.workerTemplate", "replicas": 3}],
            "template": lws}


def test_declared_pod_sets_are_taken_as_declared() -> None:
    aw = appwrapper(_lws())
    leader, worker = _podsets(aw)
    assert [(p["name"], p["count"]) for p in (leader, worker)] == [("aw-0", 2), ("aw-1", 3)]
    assert leader["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "100m"}}
    assert worker["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "200m"}}


@pytest.mark.parametrize(("component", "want"), [
    (batch_job(parallelism=5, completions=3), [3]),
    (batch_job(), [1]),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
      "spec": {"replicas": 3, "template": {"spec": pod_spec()}}}, [3]),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec()}, [1]),
    ({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
      "spec": {"replicatedJobs": [
          {"name": "a", "replicas": 2,
           "template": {"spec": {"parallelism": 3, "template": {"spec": pod_spec()}}}},
          {"name": "b", "template": {"spec": {"template": {"spec": pod_spec()}}}}]}}, [6, 1]),
    ({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"},
      "spec": {"headGroupSpec": {"template": {"spec": pod_spec()}},
               "workerGroupSpecs": [{"replicas": 4, "template": {"spec": pod_spec()}}]}}, [1, 4]),
    (pytorch_job(master=1, worker=2), [1, 2]),
], ids=["job-min-of-parallelism-and-completions", "job-default", "deployment", "pod", "jobset",
        "raycluster", "pytorchjob"])
def test_pod_sets_are_inferred_for_the_kinds_the_library_knows(component: JSON, want: list[int]) -> None:
    assert [p["count"] for p in _podsets(appwrapper(component))] == want


def test_the_controllers_record_wins_over_the_spec() -> None:
    aw = appwrapper(batch_job(parallelism=2))
    aw["status"] = {"componentStatus": [{"name": "job", "kind": "Job", "apiVersion": "batch/v1",
                                         "podSets": [{"path": "template.spec.template", "replicas": 7}]}]}
    assert _names_counts(aw) == [("aw-0", 7)]
    aw["status"]["componentStatus"].append({"podSets": []})  # not one per component: not a record
    assert _names_counts(aw) == [("aw-0", 2)]


def test_a_component_of_an_unknown_kind_without_declared_pod_sets_has_none() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}
    aw = appwrapper(cm, batch_job(parallelism=2))
    index = {TAS_POD_INDEX_LABEL: "batch.kubernetes.io/job-completion-index"}
    assert component_pod_sets(aw) == [[], [{"replicas": 2, "path": "template.spec.template",
                                            "annotations": index}]]
    assert _names_counts(aw) == [("aw-0", 2)]


def test_paths_and_the_template_kueue_keeps() -> None:
    job = batch_job(parallelism=2)
    root = job
    assert value_at(root, "template.spec.parallelism") == 2
    for bad in ("spec.template", "template.spec.missing", "template.spec[0]", "template.spec.template.x[1]"):
        with pytest.raises(PathError):
            value_at(root, bad)
    job["spec"]["template"]["metadata"] = {"labels": {"app": "x", "n": 1}}
    job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 5
    job["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    template = pod_template(job, "template.spec.template")
    assert template["metadata"] == {"labels": {"app": "x"}}
    spec = template["spec"]
    assert spec["restartPolicy"] == "Never" and spec["schedulerName"] == "default-scheduler"
    assert "terminationGracePeriodSeconds" not in spec  # the library drops a source's own value
    [container] = spec["containers"]
    assert "ports" not in container and container["imagePullPolicy"] == "IfNotPresent"
    latest = batch_job()
    latest["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx"
    [container] = pod_template(latest, "template.spec.template")["spec"]["containers"]
    assert container["imagePullPolicy"] == "Always"
    # Quantities as Kueue's Workload holds them: rounded up to milli-units, canonical.
    latest["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1.5", "memory": 1073741824, "example.com/gpu": 2},
        "limits": {"cpu": "0.0001"}}
    [container] = pod_template(latest, "template.spec.template")["spec"]["containers"]
    assert container["resources"] == {"requests": {"cpu": "1500m", "memory": "1073741824",
                                                   "example.com/gpu": "2"},
                                      "limits": {"cpu": "1m"}}


# -- pykueue's own: start, stop, restore, finished ---------------------------------------------


def _infos(*names: str) -> list[PodSetInfo]:
    return [PodSetInfo(n, 1, labels={keys.PODSET: n}, node_selector={"flavor": n},
                       tolerations=({"key": "t", "operator": "Exists"},)) for n in names]


def test_start_writes_each_pod_sets_admission_into_its_components_pod_set_infos() -> None:
    aw = appwrapper(_lws(), batch_job(parallelism=2))
    [action] = AW.start(aw, {}, _infos("aw-0", "aw-1", "aw-2"))
    assert isinstance(action, Replace)
    started = action.obj
    assert started["spec"]["suspend"] is False
    first, second = started["spec"]["components"]
    assert [i["nodeSelector"] for i in first["podSetInfos"]] == [{"flavor": "aw-0"}, {"flavor": "aw-1"}]
    assert second["podSetInfos"] == [{"labels": {keys.PODSET: "aw-2"}, "nodeSelector": {"flavor": "aw-2"},
                                      "tolerations": [{"key": "t", "operator": "Exists"}]}]
    assert aw["spec"]["suspend"] is True  # the input is not touched
    with pytest.raises(StartConflict, match="expecting 3 podsets, got 2"):
        AW.start(aw, {}, _infos("aw-0", "aw-1"))


def test_stop_suspends_and_restore_clears_the_infos_once_suspended() -> None:
    aw = appwrapper(batch_job(parallelism=2))
    [started] = AW.start(aw, {}, _infos("aw-0"))
    running = started.obj
    assert AW.is_active(running) and AW.restore(running, {}) == []
    [stopped] = AW.stop(running)
    assert stopped.obj["spec"]["suspend"] is True and not AW.is_active(stopped.obj)
    [restored] = AW.restore(stopped.obj, {})
    assert "podSetInfos" not in restored.obj["spec"]["components"][0]
    assert AW.restore(restored.obj, {}) == []


def _with_conditions(aw: JSON, phase: str, **conditions: bool) -> JSON:
    out = copy.deepcopy(aw)
    out["status"] = {"phase": phase, "conditions": [
        {"type": t, "status": "True" if v else "False"} for t, v in conditions.items()]}
    return out


def test_the_appwrappers_status_drives_quota_readiness_and_the_end() -> None:
    aw = appwrapper(batch_job(parallelism=2), suspend=False)
    running = _with_conditions(aw, "Running", QuotaReserved=True, ResourcesDeployed=True, PodsReady=True)
    assert AW.still_running(running) and AW.pods_ready(running) and AW.finished(running) is None
    suspending = _with_conditions(aw, "Suspending", QuotaReserved=True, ResourcesDeployed=True)
    assert AW.still_running(suspending) and not AW.pods_ready(suspending)
    assert not AW.still_running(_with_conditions(aw, "Suspended", QuotaReserved=False))
    # A failed AppWrapper keeps its quota until its resources are deleted.
    assert AW.finished(_with_conditions(aw, "Failed", QuotaReserved=True, ResourcesDeployed=True)) is None
    failed = AW.finished(_with_conditions(aw, "Failed", QuotaReserved=False, ResourcesDeployed=False))
    assert failed is not None and failed.reason == keys.Reason.FAILED


# -- pykueue's own: admission and the wrapped objects ------------------------------------------


def _ctx(policy: AdmissionPolicy, **facts: Any) -> AdmissionContext:
    facts.setdefault("namespace_labels", NS_LABELS)
    return AdmissionContext(policy, ClusterFacts(**facts))


def test_the_webhook_suspends_a_queued_appwrapper_and_checks_the_shared_rules() -> None:
    policy = AdmissionPolicy(frameworks=frozenset({APPWRAPPER}))
    aw = appwrapper(batch_job(), queue="lq")
    del aw["spec"]["suspend"]
    assert WEBHOOK.default(aw, _ctx(policy))["spec"]["suspend"] is True
    unqueued = appwrapper(batch_job())
    del unqueued["spec"]["suspend"]
    assert "suspend" not in WEBHOOK.default(unqueued, _ctx(policy))["spec"]
    bad = appwrapper(batch_job(), queue="not a name")
    errors = WEBHOOK.validate(bad, None, _ctx(policy))
    assert [e.path for e in errors] == ["metadata.labels[kueue.x-k8s.io/queue-name]"]
    moved = appwrapper(batch_job(), queue="other", suspend=False)
    old = appwrapper(batch_job(), queue="lq", suspend=False)
    assert WEBHOOK.validate(moved, old, _ctx(policy))  # a running one keeps its queue


def test_the_wrapped_objects_run_under_the_appwrappers_workload() -> None:
    aw = appwrapper(batch_job(parallelism=2), queue="lq")
    child = batch_job(parallelism=2)
    child["metadata"].update(uid="job-uid", ownerReferences=[
        {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "name": "aw",
         "uid": "aw-uid", "controller": True, "blockOwnerDeletion": True}])
    both = AdmissionPolicy(frameworks=frozenset({"batch/job", APPWRAPPER}))
    assert not BATCH_JOB.is_managed(child, both, NS_LABELS)
    key = ("workload.codeflare.dev/v1beta2", "AppWrapper", "ns", "aw")
    ctx = _ctx(both, owners={key: aw})
    assert find_managed_ancestor(child, ctx) is aw
    assert not workload_should_be_suspended(child, ctx)


def test_the_registry_and_the_command_line_know_the_kind() -> None:
    aw = appwrapper(batch_job())
    kind = kind_of(aw)
    assert kind is not None and kind.name == APPWRAPPER
    assert by_cli_name("aw") is kind and by_cli_name("appwrappers") is kind
