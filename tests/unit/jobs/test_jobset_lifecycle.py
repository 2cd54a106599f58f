"""JobSet: one Workload, one pod set per replicated job; spec.suspend; Completed/Failed.

The tests named after Kueue's ``pkg/controller/jobs/jobset/jobset_controller_test.go``
(v0.19.2) take their inputs and expected outcomes from that file's tables.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any, cast

import pytest

from pykueue.api import keys
from pykueue.kube.client import KubeClient
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.jobset.lifecycle import LIFECYCLE as JS
from pykueue.manager.jobs.lifecycle import JobLifecycle, StartConflict, podset_infos
from pykueue.manager.runtime.controllers.manager import QueueManager

from .helpers import FLAVORS, admitted
from .jobset_objects import jobs_status, jobset, replicated_job

SOURCE = "kueue v0.19.2 jobset_controller_test.go"
RACK = "cloud.com/rack"


def _two_jobs(**kwargs: Any) -> dict[str, Any]:
    return jobset("train", "ns",
                  replicated_job("driver", cpu="1"),
                  replicated_job("workers", replicas=2, parallelism=3, completions=3, cpu="2"),
                  queue="lq", **kwargs)


def _templates(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {rj["name"]: rj["template"]["spec"]["template"] for rj in job["spec"]["replicatedJobs"]}


# -- workload construction ------------------------------------------------------------------


def test_one_workload_with_a_pod_set_per_replicated_job() -> None:
    job = _two_jobs()
    [wl] = JS.workloads(job)
    assert wl["metadata"]["name"] == JS.workload_name(job)
    assert wl["metadata"]["name"].startswith("jobset-train-")
    assert wl["spec"]["queueName"] == "lq"
    owner = wl["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("JobSet", "train", True)
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("driver", 1), ("workers", 6)]
    for ps in wl["spec"]["podSets"]:
        assert ps["template"] == _templates(job)[ps["name"]], "the pod template, as the Job runs it"
        assert "topologyRequest" not in ps


@pytest.mark.parametrize(
    ("replicas", "parallelism", "completions", "count"),
    [
        (3, 2, 5, 6),  # all of a Job's pods run at once up to parallelism
        (3, 4, 2, 6),  # fewer completions than parallelism: only that many pods
        (2, None, None, 2),  # the Job API defaults: one pod per Job
        (2, 3, None, 6),  # completions unset: parallelism pods
        (None, 2, 2, 2),  # replicas defaults to 1
        (0, 1, 1, 0),
    ],
)
def test_pod_set_count_is_replicas_times_the_pods_one_job_runs_at_once(
        replicas: int | None, parallelism: int | None, completions: int | None, count: int) -> None:
    job = jobset("js", "ns", replicated_job("rj", replicas=replicas, parallelism=parallelism,
                                            completions=completions))
    [wl] = JS.workloads(job)
    assert wl["spec"]["podSets"][0]["count"] == count


def test_topology_annotations_become_the_pod_sets_topology_requests() -> None:
    job = jobset("js", "ns",
                 replicated_job("leader", pod_annotations={keys.PODSET_REQUIRED_TOPOLOGY: RACK,
                                                           keys.PODSET_GROUP_NAME: "g"}),
                 replicated_job("workers", replicas=4, pod_annotations={keys.PODSET_REQUIRED_TOPOLOGY: RACK,
                                                                        keys.PODSET_GROUP_NAME: "g"}),
                 replicated_job("sliced", replicas=4, pod_annotations={
                     keys.PODSET_PREFERRED_TOPOLOGY: "cloud.com/block",
                     keys.PODSET_SLICE_REQUIRED_TOPOLOGY: RACK, keys.PODSET_SLICE_SIZE: "2"}),
                 replicated_job("anywhere", pod_annotations={keys.PODSET_UNCONSTRAINED_TOPOLOGY: "true"}),
                 replicated_job("plain"))
    [wl] = JS.workloads(job)
    requests = {ps["name"]: ps.get("topologyRequest") for ps in wl["spec"]["podSets"]}
    assert requests == {
        "leader": {"required": RACK, "podSetGroupName": "g"},
        "workers": {"required": RACK, "podSetGroupName": "g"},
        "sliced": {"preferred": "cloud.com/block", "podSetSliceRequiredTopology": RACK, "podSetSliceSize": 2},
        "anywhere": {"unconstrained": True},
        "plain": None,
    }


def test_a_jobset_without_replicated_jobs_has_no_workload() -> None:
    with pytest.raises(ValueError, match="no replicated jobs"):
        JS.workloads(jobset("empty", "ns", queue="lq"))


def test_without_a_queue_name_managed_only_under_manage_jobs_without_queue_name() -> None:
    job = jobset("js", "ns", replicated_job("rj"))
    ns = {"kubernetes.io/metadata.name": "ns"}
    assert not JS.is_managed(job, AdmissionPolicy(), ns)
    assert JS.is_managed(job, AdmissionPolicy(manage_jobs_without_queue_name=True), ns)
    assert JS.is_managed(jobset("js", "ns", replicated_job("rj"), queue="lq"), AdmissionPolicy(), ns)


# -- start, stop, restore ---------------------------------------------------------------------


def test_start_merges_the_flavor_into_every_replicated_job_and_unsuspends() -> None:
    job = _two_jobs()
    [wl] = JS.workloads(job)
    wl = admitted(wl, ["driver", "workers"])
    [action] = JS.start(job, wl, podset_infos(wl, FLAVORS))
    started = action.obj
    assert started["spec"]["suspend"] is False and JS.is_active(started) and not JS.is_suspended(started)
    for name, template in _templates(started).items():
        assert template["spec"]["nodeSelector"] == {"instance-type": "on-demand"}
        assert template["spec"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]
        assert template["metadata"]["labels"][keys.PODSET] == name
        assert template["spec"]["containers"] == _templates(job)[name]["spec"]["containers"]
    assert job["spec"]["suspend"] is True and "nodeSelector" not in _templates(job)["driver"]["spec"], \
        "the input is not mutated"


def test_start_keeps_what_the_pod_template_already_says() -> None:
    job = _two_jobs()
    _templates(job)["workers"]["spec"]["nodeSelector"] = {"disk": "ssd"}
    [wl] = JS.workloads(job)
    wl = admitted(wl, ["driver", "workers"])
    [action] = JS.start(job, wl, podset_infos(wl, FLAVORS))
    assert _templates(action.obj)["workers"]["spec"]["nodeSelector"] == {
        "disk": "ssd", "instance-type": "on-demand"}


def test_a_conflicting_node_selector_cannot_start() -> None:
    job = _two_jobs()
    _templates(job)["driver"]["spec"]["nodeSelector"] = {"instance-type": "spot"}
    [wl] = JS.workloads(job)
    wl = admitted(wl, ["driver", "workers"])
    with pytest.raises(StartConflict):
        JS.start(job, wl, podset_infos(wl, FLAVORS))


def test_an_admission_for_other_pod_sets_cannot_start() -> None:
    job = _two_jobs()
    [wl] = JS.workloads(jobset("train", "ns", replicated_job("driver"), queue="lq"))
    wl = admitted(wl, ["driver"])
    with pytest.raises(StartConflict):
        JS.start(job, wl, podset_infos(wl, FLAVORS))


def test_stop_suspends_and_restore_gives_back_the_workloads_templates() -> None:
    job = _two_jobs()
    [wl] = JS.workloads(job)
    wl = admitted(wl, ["driver", "workers"])
    [start] = JS.start(job, wl, podset_infos(wl, FLAVORS))
    [stop] = JS.stop(start.obj)
    assert stop.obj["spec"]["suspend"] is True and JS.is_suspended(stop.obj)
    assert _templates(stop.obj) == _templates(start.obj), "stop changes only the switch"
    [restore] = JS.restore(stop.obj, wl)
    for name, template in _templates(restore.obj).items():
        assert template["spec"] == _templates(job)[name]["spec"]
        assert not template.get("metadata"), "the pod set and queue labels are gone"
    assert JS.restore(restore.obj, wl) == [], "nothing left to restore"


def test_restore_waits_for_the_suspension() -> None:
    job = _two_jobs()
    [wl] = JS.workloads(job)
    wl = admitted(wl, ["driver", "workers"])
    [start] = JS.start(job, wl, podset_infos(wl, FLAVORS))
    assert JS.restore(start.obj, wl) == []


def test_stop_of_a_jobset_without_spec_creates_the_switch() -> None:
    [stop] = JS.stop({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "x"}})
    assert stop.obj["spec"] == {"suspend": True}


# -- finished, pods ready, still running ------------------------------------------------------


def test_finished_comes_from_the_completed_or_failed_condition() -> None:
    job = _two_jobs(suspend=False)
    assert JS.finished(job) is None
    job["status"] = {"conditions": [{"type": "Completed", "status": "False"},
                                    {"type": "Failed", "status": "False"}]}
    assert JS.finished(job) is None
    job["status"]["conditions"][0] = {"type": "Completed", "status": "True", "message": "jobset completed"}
    verdict = JS.finished(job)
    assert verdict is not None and (verdict.reason, verdict.message) == ("Succeeded", "jobset completed")
    job["status"] = {"conditions": [{"type": "Failed", "status": "True", "message": "too many failures"}]}
    verdict = JS.finished(job)
    assert verdict is not None and (verdict.reason, verdict.message) == ("Failed", "too many failures")


def test_pods_are_ready_once_every_job_of_every_replicated_job_is_ready_or_succeeded() -> None:
    job = _two_jobs(suspend=False)  # 1 driver Job + 2 worker Jobs
    assert not JS.pods_ready(job)
    job["status"] = jobs_status(("driver", 1, 0), ("workers", 1, 0))
    assert not JS.pods_ready(job)
    job["status"] = jobs_status(("driver", 0, 1), ("workers", 1, 1))
    assert JS.pods_ready(job)


def test_still_running_while_a_replicated_job_has_active_jobs() -> None:
    job = _two_jobs(suspend=True)
    job["status"] = {"replicatedJobsStatus": [{"name": "driver", "active": 0, "succeeded": 1},
                                              {"name": "workers", "active": 1}]}
    assert JS.still_running(job) and not JS.is_active(job)  # suspended, its Jobs not gone yet
    job["status"]["replicatedJobsStatus"][1] = {"name": "workers", "active": 0, "failed": 2}
    assert not JS.still_running(job)
    assert not JS.still_running({"spec": {}})


# -- Kueue's tables ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "want"),
    [
        pytest.param(jobs_status(("replicated-job-1", 1, 1), ("replicated-job-2", 3, 0)), True,
                     id=f'{SOURCE} TestPodsReady "all jobs are ready"'),
        pytest.param(jobs_status(("replicated-job-1", 1, 0), ("replicated-job-2", 1, 2)), False,
                     id=f'{SOURCE} TestPodsReady "not all jobs are ready"'),
    ],
)
def test_kueue_pods_ready(status: dict[str, Any], want: bool) -> None:
    job = jobset("jobset", "ns", replicated_job("replicated-job-1", replicas=2),
                 replicated_job("replicated-job-2", replicas=3), status=status)
    assert JS.pods_ready(job) is want


def _kueue_podsets_jobset(job1: dict[str, str] | None, job2: dict[str, str] | None) -> dict[str, Any]:
    return jobset("jobset", "ns",
                  replicated_job("job1", replicas=2, parallelism=1, completions=1, pod_annotations=job1),
                  replicated_job("job2", replicas=3, parallelism=2, completions=3, pod_annotations=job2))


# Kueue also writes podIndexLabel (the Job completion index), subGroupIndexLabel (the JobSet's
# job index) and subGroupCount (replicas) into every pod set's topologyRequest when TAS is on;
# pykueue's topologyRequest carries the requested levels only, so only those are compared.
REQUIRED = {keys.PODSET_REQUIRED_TOPOLOGY: "cloud.com/block"}
PREFERRED = {keys.PODSET_PREFERRED_TOPOLOGY: "cloud.com/block"}


@pytest.mark.parametrize(
    ("job", "want"),
    [
        pytest.param(_kueue_podsets_jobset(None, None),
                     [("job1", 2, None, {}), ("job2", 6, None, {})],
                     id=f'{SOURCE} TestPodSets "no annotations"'),
        pytest.param(_kueue_podsets_jobset(REQUIRED, None),
                     [("job1", 2, REQUIRED, {"required": "cloud.com/block"}), ("job2", 6, None, {})],
                     id=f'{SOURCE} TestPodSets "with required topology annotation"'),
        pytest.param(_kueue_podsets_jobset(None, PREFERRED),
                     [("job1", 2, None, {}), ("job2", 6, PREFERRED, {"preferred": "cloud.com/block"})],
                     id=f'{SOURCE} TestPodSets "with preferred topology annotation"'),
    ],
)
def test_kueue_pod_sets(job: dict[str, Any],
                        want: list[tuple[str, int, dict[str, str] | None, dict[str, str]]]) -> None:
    [wl] = JS.workloads(job)
    got = [(ps["name"], ps["count"], (ps["template"].get("metadata") or {}).get("annotations"),
            {k: v for k, v in (ps.get("topologyRequest") or {}).items() if k in ("required", "preferred")})
           for ps in wl["spec"]["podSets"]]
    assert got == want
    for ps, rj in zip(wl["spec"]["podSets"], job["spec"]["replicatedJobs"], strict=True):
        assert ps["template"]["spec"] == rj["template"]["spec"]["template"]["spec"]


RESTORE = f"{SOURCE} TestRestorePodSetsInfo"


def _restore_base() -> dict[str, Any]:
    return jobset("jobset", "ns", replicated_job("job1"), replicated_job("job2"))


def _workload_with(names: list[str], node_selector: dict[str, str]) -> dict[str, Any]:
    template = {"spec": {"nodeSelector": dict(node_selector), "containers": [{"name": "c"}]}}
    return {"spec": {"podSets": [{"name": n, "count": 1, "template": copy.deepcopy(template)}
                                 for n in names]}}


@pytest.mark.parametrize(
    ("podsets", "changed"),
    [
        pytest.param(["job1"], False, id=f'{RESTORE} "fewer podSetsInfo than replicated jobs is a no-op"'),
        pytest.param(["job1", "job2", "job3"], False,
                     id=f'{RESTORE} "more podSetsInfo than replicated jobs is a no-op"'),
        pytest.param(["job1", "job2"], True, id=f'{RESTORE} "matching length restores pod sets"'),
    ],
)
def test_kueue_restore_pod_sets_info(podsets: list[str], changed: bool) -> None:
    # pykueue restores from the Workload's pod set templates; Kueue's infos are built from them.
    job = _restore_base()
    actions = JS.restore(job, _workload_with(podsets, {"restored": "true"}))
    assert bool(actions) is changed
    if changed:
        for template in _templates(actions[0].obj).values():
            assert template["spec"]["nodeSelector"] == {"restored": "true"}


def _reconciler_job(*rjs: dict[str, Any], labels: dict[str, str] | None = None,
                    pod_priority_class: str | None = None) -> dict[str, Any]:
    job = jobset("jobset", "ns", *rjs, labels=labels)
    if pod_priority_class is not None:
        for template in _templates(job).values():
            template["spec"]["priorityClassName"] = pod_priority_class
    return job


# kueue v0.19.2 jobset_controller_test.go TestReconciler "workload is created with podsets and a
# ProvReq annotation": the pod sets (copying the provreq.kueue.x-k8s.io/ annotations to the
# Workload is not modelled).
def test_kueue_reconciler_workload_is_created_with_podsets() -> None:
    job = _reconciler_job(replicated_job("replicated-job-1", replicas=1, completions=1, parallelism=1),
                          replicated_job("replicated-job-2", replicas=2, completions=2, parallelism=2))
    policy = AdmissionPolicy(manage_jobs_without_queue_name=True)
    assert JS.is_managed(job, policy, {"kubernetes.io/metadata.name": "ns"})
    [wl] = JS.workloads(job)
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [
        ("replicated-job-1", 1), ("replicated-job-2", 4)]
    assert "queueName" not in wl["spec"]


class _Api:
    """Creates what it is given."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.created.append(copy.deepcopy(body))
        return body


@pytest.mark.parametrize(
    "pod_priority_class",
    [
        pytest.param(None, id=f'{SOURCE} TestReconciler '
                              '"workload is created with podsets and workloadPriorityClass"'),
        pytest.param("test-pc", id=f'{SOURCE} TestReconciler "workload is created with podsets, '
                                   'workloadPriorityClass and PriorityClass"'),
    ],
)
def test_kueue_reconciler_workload_priority_class(pod_priority_class: str | None) -> None:
    manager = QueueManager(KubeClient(object()),
                           job_config={"integrations": {"frameworks": ["jobset.x-k8s.io/jobset"]}})
    api = _Api()
    manager.jobs.client = cast(KubeClient, api)
    manager.jobs.informers["WorkloadPriorityClass"]._store["test-wpc"] = {
        "apiVersion": keys.API_VERSION, "kind": "WorkloadPriorityClass",
        "metadata": {"name": "test-wpc"}, "value": 100}
    lc = manager.jobs.registry.get("JobSet")
    assert isinstance(lc, JobLifecycle)
    job = _reconciler_job(replicated_job("replicated-job-1"), labels={keys.PRIORITY_CLASS: "test-wpc"},
                          pod_priority_class=pod_priority_class)
    [wl] = lc.workloads(job)
    asyncio.run(manager.jobs._create_workload(lc, job, wl))
    [created] = api.created
    # The WorkloadPriorityClass wins over the pods' PriorityClass.
    assert created["spec"]["priorityClassRef"] == {
        "group": keys.GROUP, "kind": "WorkloadPriorityClass", "name": "test-wpc"}
    assert created["spec"]["priority"] == 100
    assert [(p["name"], p["count"]) for p in created["spec"]["podSets"]] == [("replicated-job-1", 1)]
