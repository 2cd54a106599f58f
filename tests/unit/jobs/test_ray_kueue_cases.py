"""Kueue v0.19.2's unit tables for the KubeRay kinds, ported: pod sets, start and restore, finished,
on hold and the webhooks' defaulting and validation of RayCluster
(``pkg/controller/jobs/raycluster/common_test.go``, ``raycluster_controller_test.go``,
``raycluster_webhook_test.go``), RayJob (``rayjob/rayjob_controller_test.go``,
``rayjob_webhook_test.go``) and RayService (``rayservice/rayservice_controller_test.go``,
``rayservice_webhook_test.go``). Each case's id is Kueue's test and case name.

Left out, with the reason:

* the elastic RayJob/RayService bookkeeping read from the cluster KubeRay made
  (``TestUpdatePodSets``, ``TestUpdatePodSetsFayCluster_GetError``, ``TestGetCustomAnnotations``,
  ``TestGetWorkloadslicingCustomAnnotations``, ``TestComparePodSetCounts``,
  ``TestParsePodSetReplicaSizes``, ``TestSerializePodSetCounts`` and the four RayService
  ``TestPodSets`` cases "with workload slicing ..."): pykueue sizes an elastic RayJob or
  RayService from its own spec only (see the README);
* the reconciler tables (``TestReconciler``): they run Kueue's generic reconciler against a
  fake client; pykueue's generic reconciler is covered by its own tests and the start and
  restore rules it calls are ported below;
* ``TestGVK``: a constant.

Kueue's Go wrappers leave ``submissionMode`` at Go's zero value (no submitter pod set);
the API server defaults an absent field to K8sJobMode, so the ported objects say ``""``.
Errors are compared as Kubernetes prints their aggregate.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.api.field_errors import aggregate
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.gates import FeatureGates
from pykueue.manager.jobs.lifecycle import PodSetInfo, Replace, StartConflict
from pykueue.manager.jobs.raycluster import common
from pykueue.manager.jobs.raycluster.kind import workloads as raycluster_workloads
from pykueue.manager.jobs.raycluster.lifecycle import LIFECYCLE as RAYCLUSTER
from pykueue.manager.jobs.raycluster.webhook import WEBHOOK as RAYCLUSTER_WEBHOOK
from pykueue.manager.jobs.rayjob.lifecycle import LIFECYCLE as RAYJOB
from pykueue.manager.jobs.rayjob.lifecycle import podsets as rayjob_podsets
from pykueue.manager.jobs.rayjob.webhook import WEBHOOK as RAYJOB_WEBHOOK
from pykueue.manager.jobs.rayservice.lifecycle import LIFECYCLE as RAYSERVICE
from pykueue.manager.jobs.rayservice.lifecycle import podsets as rayservice_podsets
from pykueue.manager.jobs.rayservice.webhook import WEBHOOK as RAYSERVICE_WEBHOOK

FRAMEWORKS = frozenset({"batch/job", "ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice"})
REQUIRED, PREFERRED = keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_PREFERRED_TOPOLOGY
GROUP_NAME = keys.PODSET_GROUP_NAME
SLICE_TOPOLOGY, SLICE_SIZE = keys.PODSET_SLICE_REQUIRED_TOPOLOGY, keys.PODSET_SLICE_SIZE
TAS_ON = {"TopologyAwareScheduling": True}
NO_IDS = {"WorkloadIdentifierAnnotations": False}
ELASTIC_ON = {"ElasticJobsViaWorkloadSlices": True}
IMMUTABLE = "field is immutable"
QUEUE_PATH = "metadata.labels[kueue.x-k8s.io/queue-name]"
ONE_TOPOLOGY = (
    'must not contain more than one topology annotation: ["kueue.x-k8s.io/podset-required-topology", '
    '"kueue.x-k8s.io/podset-preferred-topology", "kueue.x-k8s.io/podset-unconstrained-topology"]'
)
SUBMITTER_RESOURCES = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}


# -- Kueue's wrappers, as plain objects -----------------------------------------------------------


def _container(name: str) -> dict[str, Any]:
    return {"name": name, "command": [], "resources": {"requests": {}, "limits": {}}}


def _cluster_spec(head: str, worker: str, min_replicas: int, max_replicas: int) -> dict[str, Any]:
    return {
        "rayVersion": "2.9.0",
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"nodeSelector": {}, "containers": [_container(head)]}},
        },
        "workerGroupSpecs": [
            {
                "groupName": "workers-group-0",
                "replicas": 1,
                "minReplicas": min_replicas,
                "maxReplicas": max_replicas,
                "rayStartParams": {},
                "template": {"spec": {"nodeSelector": {}, "containers": [_container(worker)]}},
            }
        ],
    }


def make_cluster(name: str = "job", ns: str = "ns") -> dict[str, Any]:
    """MakeCluster: suspended, a head and one worker group."""
    spec = _cluster_spec("head-container", "worker-container", 0, 10)
    spec["suspend"] = True
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": ns, "annotations": {}},
        "spec": spec,
    }


def make_job(name: str = "job", ns: str = "ns") -> dict[str, Any]:
    """MakeJob: suspended, deletes its cluster when done, a head and one worker group."""
    spec = _cluster_spec("head-container", "worker-container", 1, 5)
    for template in (spec["headGroupSpec"]["template"], spec["workerGroupSpecs"][0]["template"]):
        template["spec"]["restartPolicy"] = "Never"
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": ns, "annotations": {}},
        "spec": {
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": spec,
            "suspend": True,
            "submissionMode": "",
        },
    }


def make_service(name: str = "svc", ns: str = "ns") -> dict[str, Any]:
    """MakeService: its cluster spec suspended, a head and one worker group."""
    spec = _cluster_spec("ray-head", "ray-worker", 0, 10)
    spec["suspend"] = True
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name, "namespace": ns, "annotations": {}},
        "spec": {"rayClusterConfig": spec},
    }


def cluster_of(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]
    if obj["kind"] == "RayJob":
        cluster: dict[str, Any] = spec["rayClusterSpec"]
        return cluster
    if obj["kind"] == "RayService":
        config: dict[str, Any] = spec["rayClusterConfig"]
        return config
    return spec


def queue(obj: dict[str, Any], name: str) -> dict[str, Any]:
    obj["metadata"].setdefault("labels", {})[keys.QUEUE_NAME] = name
    return obj


def suspend(obj: dict[str, Any], value: bool) -> dict[str, Any]:
    target = obj["spec"]["rayClusterConfig"] if obj["kind"] == "RayService" else obj["spec"]
    target["suspend"] = value
    return obj


def head(obj: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
    """WithHeadGroupSpec: the head group replaced by one with only this template."""
    cluster_of(obj)["headGroupSpec"] = {"template": template}
    return obj


def workers(obj: dict[str, Any], *groups: dict[str, Any]) -> dict[str, Any]:
    cluster_of(obj)["workerGroupSpecs"] = list(groups)
    return obj


def annotated(ann: dict[str, str], containers: list[str] | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {"metadata": {"annotations": ann}}
    if containers is not None:
        template["spec"] = {"containers": [{"name": c} for c in containers]}
    return template


def group(
    name: str, replicas: int | None = None, template: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"groupName": name, "template": template or {}}
    if replicas is not None:
        out["replicas"] = replicas
    return {**out, **extra}


def many_groups(n: int) -> list[dict[str, Any]]:
    """MakeWorkerGroups(n)."""
    return [group(f"group{i}", 1, {"spec": {"containers": [{"name": "worker"}]}}) for i in range(n)]


def ctx(
    gates: dict[str, bool] | None = None, *, manage_all: bool = False, default_lq: bool = False
) -> AdmissionContext:
    policy = AdmissionPolicy(
        manage_jobs_without_queue_name=manage_all, frameworks=FRAMEWORKS, gates=FeatureGates(gates or {})
    )
    return AdmissionContext(policy, ClusterFacts(namespace_labels={}, default_local_queue=default_lq))


def errors_text(errors: list[Any]) -> str | None:
    return aggregate(errors) if errors else None


# -- common_test.go: TestBuildPodSets ---------------------------------------------------------------


def _spec(head_template: dict[str, Any], *groups: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"headGroupSpec": {"template": head_template}, "workerGroupSpecs": list(groups), **extra}


def _containers(*names: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": n} for n in names]}}


AUTOSCALER_DEFAULT = {
    "name": "autoscaler",
    "resources": {
        "requests": {"cpu": "500m", "memory": "512Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    },
}
FT_HEAD = {
    "metadata": {"labels": {"ray.io/cluster": "raycluster"}},
    "spec": {
        "containers": [
            {"name": "head", "image": "rayproject/ray:2.0.0", "resources": {"requests": {"cpu": "1"}}}
        ]
    },
}

BUILD_PODSETS = [
    pytest.param(
        _spec(_containers("head"), group("workers", 3, _containers("worker"))),
        {},
        [("head", 1, _containers("head")), ("workers", 3, _containers("worker"))],
        id="TestBuildPodSets/basic spec with head and single worker group",
    ),
    pytest.param(
        _spec(
            _containers("head"),
            group("group1", 2, _containers("worker1")),
            group("group2", 5, _containers("worker2")),
        ),
        {},
        [
            ("head", 1, _containers("head")),
            ("group1", 2, _containers("worker1")),
            ("group2", 5, _containers("worker2")),
        ],
        id="TestBuildPodSets/spec with multiple worker groups",
    ),
    pytest.param(
        _spec(_containers("head"), group("workers", None, _containers("worker"))),
        {},
        [("head", 1, _containers("head")), ("workers", 1, _containers("worker"))],
        id="TestBuildPodSets/spec with worker group without replicas specified",
    ),
    pytest.param(
        _spec(_containers("head"), group("workers", 3, _containers("worker"), numOfHosts=2)),
        {},
        [("head", 1, _containers("head")), ("workers", 6, _containers("worker"))],
        id="TestBuildPodSets/spec with NumOfHosts > 1",
    ),
    pytest.param(
        _spec(
            FT_HEAD,
            group("workers", 1, _containers("worker")),
            gcsFaultToleranceOptions={"redisAddress": "redis:6379"},
        ),
        {},
        [
            (
                "head",
                1,
                {
                    "metadata": {"labels": {"ray.io/cluster": "raycluster"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "head",
                                "image": "rayproject/ray:2.0.0",
                                "resources": {"requests": {"cpu": "1", "memory": "256Mi"}},
                            }
                        ]
                    },
                },
            ),
            ("workers", 1, _containers("worker")),
        ],
        id="TestBuildPodSets/spec with gcs fault tolerance",
    ),
    pytest.param(
        _spec(
            {
                "metadata": {"labels": {"ray.io/cluster": "raycluster"}},
                "spec": {"containers": [{"name": "head", "image": "rayproject/ray:2.0.0"}]},
            }
        ),
        {"ray.io/ft-enabled": "true"},
        [
            (
                "head",
                1,
                {
                    "metadata": {"labels": {"ray.io/cluster": "raycluster"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "head",
                                "image": "rayproject/ray:2.0.0",
                                "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}},
                            }
                        ]
                    },
                },
            )
        ],
        id="TestBuildPodSets/spec with gcs fault tolerance annotation",
    ),
    pytest.param(
        _spec({}, gcsFaultToleranceOptions={"redisAddress": "redis:6379"}),
        {},
        None,
        id="TestBuildPodSets/spec with gcs fault tolerance and missing head container",
    ),
    pytest.param(
        _spec(_containers("head"), group("workers", 1, _containers("worker")), enableInTreeAutoscaling=True),
        {},
        [
            ("head", 1, {"spec": {"containers": [{"name": "head"}, AUTOSCALER_DEFAULT]}}),
            ("workers", 1, _containers("worker")),
        ],
        id="TestBuildPodSets/autoscaler sidecar added to head podSet with default resources when in-tree "
        "autoscaling is enabled",
    ),
    pytest.param(
        _spec(
            _containers("head"),
            enableInTreeAutoscaling=True,
            autoscalerOptions={"resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}},
        ),
        {},
        [
            (
                "head",
                1,
                {
                    "spec": {
                        "containers": [
                            {"name": "head"},
                            {
                                "name": "autoscaler",
                                "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
                            },
                        ]
                    }
                },
            )
        ],
        id="TestBuildPodSets/autoscaler sidecar uses AutoscalerOptions.Resources override when set",
    ),
]


@pytest.mark.parametrize(("spec", "annotations", "want"), BUILD_PODSETS)
def test_build_podsets(
    spec: dict[str, Any], annotations: dict[str, str], want: list[tuple[str, int, dict[str, Any]]] | None
) -> None:
    if want is None:
        with pytest.raises(ValueError, match="Ray container"):
            common.build_podsets(spec, annotations)
        return
    got = common.build_podsets(spec, annotations)
    assert [(ps["name"], ps["count"], ps["template"]) for ps in got] == want


# -- raycluster_controller_test.go / rayservice TestPodSets: topology requests ----------------------


def _topology_cluster() -> dict[str, Any]:
    cluster = make_cluster("raycluster", "ns")
    cluster["metadata"]["uid"] = "uid"
    head(cluster, annotated({REQUIRED: "cloud.com/block"}, ["head_c"]))
    return workers(
        cluster,
        group("group1", None, annotated({PREFERRED: "cloud.com/block"}, ["group1_c"])),
        group("group2", 3, _containers("group2_c")),
    )


def test_raycluster_pod_sets_carry_the_topology_requests() -> None:
    """TestPodSets/with required topology annotation, with preferred topology annotation: the
    Workload's pod sets carry the topology each group's template asks for."""
    (wl,) = raycluster_workloads(_topology_cluster())
    got = [(ps["name"], ps["count"], ps.get("topologyRequest")) for ps in wl["spec"]["podSets"]]
    assert got == [
        ("head", 1, {"required": "cloud.com/block"}),
        ("group1", 1, {"preferred": "cloud.com/block"}),
        ("group2", 3, None),
    ]


def test_raycluster_pod_sets_without_annotations() -> None:
    """TestPodSets/no annotations (and the TAS-off case: nothing asks for a topology)."""
    cluster = workers(
        head(make_cluster("raycluster"), _containers("head_c")),
        group("group1", None, _containers("g1")),
        group("group2", 3, _containers("g2")),
    )
    cluster["metadata"]["uid"] = "uid"
    (wl,) = raycluster_workloads(cluster)
    assert [(ps["name"], ps["count"], "topologyRequest" in ps) for ps in wl["spec"]["podSets"]] == [
        ("head", 1, False),
        ("group1", 1, False),
        ("group2", 3, False),
    ]


def test_raycluster_with_num_of_hosts() -> None:
    """TestReconciler/RayCluster with NumOfHosts > 1: replicas times hosts."""
    cluster = workers(make_cluster(), group("workers-group-0", 2, _containers("w"), numOfHosts=4))
    assert [(ps["name"], ps["count"]) for ps in common.build_podsets(cluster["spec"], {})] == [
        ("head", 1),
        ("workers-group-0", 8),
    ]


# -- rayjob_controller_test.go: TestPodSets ----------------------------------------------------------


def _job_with(mode: str, **spec: Any) -> dict[str, Any]:
    job = workers(
        head(make_job("rayjob"), _containers("head_c")), group("group1", None, _containers("group1_c"))
    )
    job["spec"]["submissionMode"] = mode
    job["spec"].update(spec)
    return job


RAYJOB_PODSETS = [
    pytest.param(
        _job_with(""),
        [("head", 1, _containers("head_c")), ("group1", 1, _containers("group1_c"))],
        id="TestPodSets/no annotations",
    ),
    pytest.param(
        _job_with("K8sJobMode"),
        [
            ("head", 1, _containers("head_c")),
            ("group1", 1, _containers("group1_c")),
            (
                "submitter",
                1,
                {
                    "spec": {
                        "containers": [{"name": "ray-job-submitter", "resources": SUBMITTER_RESOURCES}],
                        "restartPolicy": "Never",
                    }
                },
            ),
        ],
        id="TestPodSets/with default job submitter",
    ),
    pytest.param(
        _job_with("K8sJobMode", submitterPodTemplate={"spec": {"containers": [{"name": "custom"}]}}),
        [
            ("head", 1, _containers("head_c")),
            ("group1", 1, _containers("group1_c")),
            ("submitter", 1, {"spec": {"containers": [{"name": "custom"}]}}),
        ],
        id="TestPodSets/with submitter job pod template override",
    ),
    pytest.param(
        _job_with("SidecarMode"),
        [
            (
                "head",
                1,
                {
                    "spec": {
                        "containers": [
                            {"name": "head_c"},
                            {"name": "ray-job-submitter", "resources": SUBMITTER_RESOURCES},
                        ]
                    }
                },
            ),
            ("group1", 1, _containers("group1_c")),
        ],
        id="TestPodSets/with sidecar submission mode accounts for the injected submitter on the head podSet",
    ),
]


@pytest.mark.parametrize(("job", "want"), RAYJOB_PODSETS)
def test_rayjob_pod_sets(job: dict[str, Any], want: list[tuple[str, int, dict[str, Any]]]) -> None:
    assert [(ps["name"], ps["count"], ps["template"]) for ps in rayjob_podsets(job)] == want


def test_rayjob_default_submitter_takes_the_heads_image() -> None:
    """TestPodSets/with default job submitter: its container runs the head's image."""
    job = _job_with("K8sJobMode")
    job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] = "ray:2.9"
    assert rayjob_podsets(job)[-1]["template"]["spec"]["containers"][0]["image"] == "ray:2.9"


def test_rayjob_pod_sets_with_gcs_fault_tolerance_and_num_of_hosts() -> None:
    """TestPodSets/with gcs fault tolerance, with NumOfHosts > 1."""
    job = _job_with(
        "",
        rayClusterSpec={
            **_spec(
                {"spec": {"containers": [{"name": "head_c"}]}},
                group("group1", 2, _containers("g"), numOfHosts=3),
            ),
            "gcsFaultToleranceOptions": {"redisAddress": "redis:6379"},
        },
    )
    got = rayjob_podsets(job)
    assert [(ps["name"], ps["count"]) for ps in got] == [("head", 1), ("group1", 6)]
    assert got[0]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "200m", "memory": "256Mi"}
    }


# -- rayjob_controller_test.go: TestNodeSelectors, TestRestorePodSetsInfo -------------------------


def _selector_job(mode: str = "") -> dict[str, Any]:
    job = workers(
        head(make_job("job"), {"spec": {"nodeSelector": {}}}),
        {"template": {"spec": {"nodeSelector": {"key-wg1": "value-wg1"}}}},
        {"template": {"spec": {"nodeSelector": {"key-wg2": "value-wg2"}}}},
    )
    job["spec"]["submissionMode"] = mode
    return job


def _infos(*selectors: dict[str, str]) -> list[PodSetInfo]:
    return [PodSetInfo(f"ps{i}", 1, node_selector=s) for i, s in enumerate(selectors)]


def _workload_of(job: dict[str, Any]) -> dict[str, Any]:
    """The Workload recorded for the job as it was submitted (its templates are what restore puts back)."""
    return {"spec": {"podSets": rayjob_podsets(job)}}


def _selectors(job: dict[str, Any]) -> list[dict[str, str]]:
    cluster = job["spec"]["rayClusterSpec"]
    templates = [cluster["headGroupSpec"]["template"], *(g["template"] for g in cluster["workerGroupSpecs"])]
    return [t["spec"].get("nodeSelector") or {} for t in templates]


def test_rayjob_node_selectors_valid_configuration() -> None:
    """TestNodeSelectors/valid configuration: start merges, restore puts the templates back."""
    job = _selector_job()
    [started] = RAYJOB.start(job, {}, _infos({"newKey": "newValue"}, {"key-wg1": "value-wg1"}, {}))
    assert isinstance(started, Replace) and started.obj["spec"]["suspend"] is False
    assert _selectors(started.obj) == [
        {"newKey": "newValue"},
        {"key-wg1": "value-wg1"},
        {"key-wg2": "value-wg2"},
    ]
    suspended = copy.deepcopy(started.obj)
    suspended["spec"]["suspend"] = True
    [restored] = RAYJOB.restore(suspended, _workload_of(job))
    assert isinstance(restored, Replace)
    assert _selectors(restored.obj) == [{}, {"key-wg1": "value-wg1"}, {"key-wg2": "value-wg2"}]


def test_rayjob_node_selectors_k8s_job_mode_with_nil_submitter_template() -> None:
    """TestNodeSelectors/K8sJobMode with nil SubmitterPodTemplate persists admission constraints."""
    job = _selector_job("K8sJobMode")
    infos = _infos({"newKey": "newValue"}, {"key-wg1": "value-wg1"}, {}, {"submitter-key": "submitter-value"})
    [started] = RAYJOB.start(job, {}, infos)
    assert isinstance(started, Replace)
    submitter = started.obj["spec"]["submitterPodTemplate"]
    assert submitter["spec"]["nodeSelector"] == {"submitter-key": "submitter-value"}
    assert submitter["spec"]["containers"][0]["name"] == "ray-job-submitter"
    suspended = copy.deepcopy(started.obj)
    suspended["spec"]["suspend"] = True
    [restored] = RAYJOB.restore(suspended, _workload_of(job))
    assert isinstance(restored, Replace)
    assert "nodeSelector" not in restored.obj["spec"]["submitterPodTemplate"]["spec"]
    assert _selectors(restored.obj)[0] == {}


def test_rayjob_node_selectors_invalid_run_info() -> None:
    """TestNodeSelectors/invalid runInfo: a podset info count that does not match."""
    with pytest.raises(StartConflict):
        RAYJOB.start(_selector_job(), {}, _infos({"newKey": "newValue"}))


@pytest.mark.parametrize(
    ("mode", "podsets", "changes"),
    [
        pytest.param("", 2, False, id="TestRestorePodSetsInfo/fewer podSetsInfo than expected is a no-op"),
        pytest.param("", 4, False, id="TestRestorePodSetsInfo/more podSetsInfo than expected is a no-op"),
        pytest.param(
            "", 3, True, id="TestRestorePodSetsInfo/matching length without submitter restores pod sets"
        ),
        pytest.param(
            "K8sJobMode",
            3,
            False,
            id="TestRestorePodSetsInfo/K8sJobMode with a missing submitter pod set is a no-op",
        ),
        pytest.param(
            "K8sJobMode",
            4,
            True,
            id="TestRestorePodSetsInfo/K8sJobMode with matching length restores pod sets including "
            "the submitter",
        ),
    ],
)
def test_rayjob_restore(mode: str, podsets: int, changes: bool) -> None:
    job = _selector_job(mode)
    job["spec"]["submitterPodTemplate"] = {"spec": {"nodeSelector": {"admitted": "x"}}}
    for template in (job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"],):
        template["spec"]["nodeSelector"] = {"admitted": "x"}
    names = ["head", "wg1", "wg2", "submitter"][:podsets] if podsets <= 4 else []
    workload = {
        "spec": {"podSets": [{"name": n, "template": {"spec": {"nodeSelector": {"orig": n}}}} for n in names]}
    }
    actions = RAYJOB.restore(job, workload)
    assert bool(actions) == changes
    if changes:
        [restored] = actions
        assert isinstance(restored, Replace)
        assert _selectors(restored.obj)[0] == {"orig": "head"}
        if mode == "K8sJobMode":
            assert restored.obj["spec"]["submitterPodTemplate"]["spec"]["nodeSelector"] == {
                "orig": "submitter"
            }


# -- rayjob_controller_test.go: Test_RayJobFinished, Test_RayJobIsOnHold -----------------------------


@pytest.mark.parametrize(
    ("job_status", "deployment", "want"),
    [
        pytest.param(
            "RUNNING",
            "Running",
            None,
            id="Test_RayJobFinished/jobStatus=Running, jobDeploymentStatus=Running",
        ),
        pytest.param(
            "SUCCEEDED",
            "Complete",
            keys.Reason.SUCCEEDED,
            id="Test_RayJobFinished/jobStatus=Succeeded, jobDeploymentStatus=Complete",
        ),
        pytest.param(
            "FAILED",
            "Complete",
            keys.Reason.FAILED,
            id="Test_RayJobFinished/jobStatus=Failed, jobDeploymentStatus=Complete",
        ),
        pytest.param(
            "FAILED",
            "Failed",
            keys.Reason.FAILED,
            id="Test_RayJobFinished/jobStatus=Failed, jobDeploymentStatus=Failed",
        ),
        pytest.param(
            "RUNNING",
            "Failed",
            keys.Reason.FAILED,
            id="Test_RayJobFinished/jobStatus=Running, jobDeploymentStatus=Failed (when "
            "activeDeadlineSeconds "
            "is exceeded)",
        ),
    ],
)
def test_rayjob_finished(job_status: str, deployment: str, want: str | None) -> None:
    job = make_job()
    job["status"] = {"jobStatus": job_status, "jobDeploymentStatus": deployment, "message": "msg"}
    finished = RAYJOB.finished(job)
    assert (finished.reason if finished else None) == want
    if finished:
        assert finished.message == "msg"


@pytest.mark.parametrize(
    ("deployment", "on_hold"),
    [
        pytest.param("Running", False, id="Test_RayJobIsOnHold/jobDeploymentStatus=Running"),
        pytest.param("Complete", False, id="Test_RayJobIsOnHold/jobDeploymentStatus=Complete"),
        pytest.param("Failed", False, id="Test_RayJobIsOnHold/jobDeploymentStatus=Failed"),
        pytest.param("ValidationFailed", True, id="Test_RayJobIsOnHold/jobDeploymentStatus=ValidationFailed"),
    ],
)
def test_rayjob_on_hold(deployment: str, on_hold: bool) -> None:
    job = make_job()
    job["status"] = {"jobDeploymentStatus": deployment}
    assert (RAYJOB.on_hold(job) is not None) == on_hold


# -- common_test.go: run and restore of a cluster spec, ValidateCreate ----------------------------


def test_update_spec_to_run_with_podsets_info() -> None:
    """TestUpdateRayClusterSpecToRunWithPodSetsInfo: basic update with node selector, update
    with tolerations and labels, update multiple worker groups."""
    spec = _spec(_containers("head"), group("g1", 1, _containers("w1")), group("g2", 1, _containers("w2")))
    toleration = {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}
    common.start_cluster(
        spec,
        [
            PodSetInfo("head", 1, labels={"l": "h"}, node_selector={"n": "h"}),
            PodSetInfo("g1", 1, node_selector={"n": "1"}, tolerations=(toleration,)),
            PodSetInfo("g2", 1, node_selector={"n": "2"}),
        ],
    )
    head_template = spec["headGroupSpec"]["template"]
    assert head_template["metadata"]["labels"] == {"l": "h"} and head_template["spec"]["nodeSelector"] == {
        "n": "h"
    }
    g1, g2 = (g["template"]["spec"] for g in spec["workerGroupSpecs"])
    assert g1["nodeSelector"] == {"n": "1"} and g1["tolerations"] == [toleration]
    assert g2["nodeSelector"] == {"n": "2"}


@pytest.mark.parametrize(
    ("current", "podsets", "changed"),
    [
        pytest.param(
            {"n": "admitted"},
            ["head", "g1"],
            True,
            id="TestRestorePodSetsInfo/restore with different node selector",
        ),
        pytest.param(
            {"n": "orig"},
            ["head", "g1"],
            False,
            id="TestRestorePodSetsInfo/no changes when no restoration needed",
        ),
        pytest.param(
            {"n": "admitted"},
            ["head"],
            False,
            id="TestRestorePodSetsInfo/no restore when podSetsInfo is shorter than the pod set count",
        ),
    ],
)
def test_restore_cluster_podsets(current: dict[str, str], podsets: list[str], changed: bool) -> None:
    cluster = workers(
        head(make_cluster(), {"spec": {"nodeSelector": dict(current)}}),
        group("g1", 1, {"spec": {"nodeSelector": dict(current)}}),
    )
    workload = {
        "spec": {
            "podSets": [{"name": n, "template": {"spec": {"nodeSelector": {"n": "orig"}}}} for n in podsets]
        }
    }
    assert bool(RAYCLUSTER.restore(cluster, workload)) == changed


VALIDATE_SPEC = [
    pytest.param(_spec({}, group("g", 1)), {}, {}, [], id="TestValidateCreateRayClusterSpec/valid spec"),
    pytest.param(
        _spec({}, enableInTreeAutoscaling=True),
        {},
        {},
        [
            "spec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job should only use "
            "autoscaling when workload slicing is enabled"
        ],
        id="TestValidateCreateRayClusterSpec/autoscaling enabled without workload slicing",
    ),
    pytest.param(
        _spec({}, enableInTreeAutoscaling=True),
        {keys.ELASTIC_JOB: "true"},
        ELASTIC_ON,
        [],
        id="TestValidateCreateRayClusterSpec/autoscaling enabled with workload slicing",
    ),
    pytest.param(
        _spec({}, *many_groups(18)),
        {},
        {},
        ["spec.workerGroupSpecs: Too many: 19: must have at most 18 items"],
        id="TestValidateCreateRayClusterSpec/too many worker groups",
    ),
    pytest.param(
        _spec({}, group("head")),
        {},
        {},
        ['spec.workerGroupSpecs[0].groupName: Forbidden: "head" is reserved for the head group'],
        id="TestValidateCreateRayClusterSpec/worker group named 'head'",
    ),
    pytest.param(
        _spec({}, group("head"), *many_groups(17), enableInTreeAutoscaling=True),
        {},
        {},
        [
            "spec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job should only use "
            "autoscaling when workload slicing is enabled",
            "spec.workerGroupSpecs: Too many: 19: must have at most 18 items",
            'spec.workerGroupSpecs[0].groupName: Forbidden: "head" is reserved for the head group',
        ],
        id="TestValidateCreateRayClusterSpec/multiple errors",
    ),
]


@pytest.mark.parametrize(("spec", "annotations", "gates", "want"), VALIDATE_SPEC)
def test_validate_cluster_spec(
    spec: dict[str, Any], annotations: dict[str, str], gates: dict[str, bool], want: list[str]
) -> None:
    obj = {"metadata": {"annotations": annotations}}
    assert [str(e) for e in common.cluster_spec_errors(obj, spec, "spec", ctx(gates))] == want


# -- raycluster_webhook_test.go / rayjob_webhook_test.go: TestValidateDefault, TestDefault -----------


def _default_cases(make: Any) -> list[Any]:
    kind = make()["kind"]
    name = "TestValidateDefault" if kind == "RayCluster" else "TestDefault"
    return [
        pytest.param(
            suspend(make("job", "ns"), False),
            suspend(make("job", "ns"), False),
            False,
            False,
            id=f"{kind}/{name}/unmanaged",
        ),
        pytest.param(
            suspend(make("job", "ns"), False),
            suspend(make("job", "ns"), True),
            True,
            False,
            id=f"{kind}/{name}/managed - by config",
        ),
        pytest.param(
            suspend(queue(make("job", "ns"), "queue"), False),
            suspend(queue(make("job", "ns"), "queue"), True),
            False,
            False,
            id=f"{kind}/{name}/managed - by queue",
        ),
        pytest.param(
            make("test-job", "default"),
            queue(make("test-job", "default"), "default"),
            False,
            True,
            id=f"{kind}/{name}/default lq is created, job doesn't have queue label",
        ),
        pytest.param(
            queue(make("test-job", ""), "test-queue"),
            queue(make("test-job", ""), "test-queue"),
            False,
            True,
            id=f"{kind}/{name}/default lq is created, job has queue label",
        ),
        pytest.param(
            make("test-job", ""),
            make("test-job", ""),
            False,
            False,
            id=f"{kind}/{name}/default lq isn't created, job doesn't have queue label",
        ),
    ]


WEBHOOKS = {"RayCluster": RAYCLUSTER_WEBHOOK, "RayJob": RAYJOB_WEBHOOK, "RayService": RAYSERVICE_WEBHOOK}


@pytest.mark.parametrize(
    ("given", "want", "manage_all", "default_lq"), [*_default_cases(make_cluster), *_default_cases(make_job)]
)
def test_default(given: dict[str, Any], want: dict[str, Any], manage_all: bool, default_lq: bool) -> None:
    got = WEBHOOKS[given["kind"]].default(
        copy.deepcopy(given), ctx(manage_all=manage_all, default_lq=default_lq)
    )
    assert got == want


def test_elastic_defaulting_gates_every_group() -> None:
    """raycluster_webhook.go Default (and rayservice's): an elastic object's templates get the gate."""
    for obj in (make_cluster(), make_service()):
        obj["metadata"]["annotations"][keys.ELASTIC_JOB] = "true"
        got = WEBHOOKS[obj["kind"]].default(queue(obj, "q"), ctx(ELASTIC_ON))
        cluster = cluster_of(got)
        for template in (cluster["headGroupSpec"]["template"], cluster["workerGroupSpecs"][0]["template"]):
            assert template["spec"]["schedulingGates"] == [{"name": keys.ELASTIC_JOB_GATE}]
        assert WEBHOOKS[obj["kind"]].validate(got, None, ctx(ELASTIC_ON)) == []


# -- TestValidateCreate -----------------------------------------------------------------------------


def _gated(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["annotations"][keys.ELASTIC_JOB] = "true"
    for template in (
        cluster_of(obj)["headGroupSpec"]["template"],
        *(g["template"] for g in cluster_of(obj)["workerGroupSpecs"]),
    ):
        template["spec"]["schedulingGates"] = [{"name": keys.ELASTIC_JOB_GATE}]
    return obj


def _managed_by(obj: dict[str, Any], value: str) -> dict[str, Any]:
    obj["spec"]["managedBy"] = value
    return obj


def _autoscaling(obj: dict[str, Any]) -> dict[str, Any]:
    cluster_of(obj)["enableInTreeAutoscaling"] = True
    return obj


def _prebuilt_annotation(obj: dict[str, Any], name: str) -> dict[str, Any]:
    obj["metadata"]["annotations"][keys.PREBUILT_WORKLOAD_NAME] = name
    return obj


def _topology_cases(make: Any, base: str) -> list[Any]:
    """The topology tables both webhooks share (paths under ``base``)."""
    kind = make()["kind"]
    h, w = f"{base}headGroupSpec.template.metadata.annotations", f"{base}workerGroupSpecs"
    both = {PREFERRED: "cloud.com/block", REQUIRED: "cloud.com/block"}

    def sliced(size: str) -> dict[str, Any]:
        return annotated({REQUIRED: "cloud.com/block", SLICE_TOPOLOGY: "cloud.com/block", SLICE_SIZE: size})

    def grouped(name: str, topology: str = REQUIRED, value: str = "cloud.com/block") -> dict[str, Any]:
        return annotated({GROUP_NAME: name, topology: value})

    mismatch = (
        "Invalid value: must specify 'kueue.x-k8s.io/podset-required-topology' or "
        "'kueue.x-k8s.io/podset-preferred-topology' topology consistent with '{other}' in group 'groupname'"
    )
    w0 = f"{w}[0].template.metadata.annotations"
    mismatch_errors = [f"{h}: {mismatch.format(other=w0)}", f"{w0}: {mismatch.format(other=h)}"]
    return [
        pytest.param(
            workers(
                head(queue(make("x"), "queue"), annotated({REQUIRED: "cloud.com/block"})),
                group("wg1", None, annotated({REQUIRED: "cloud.com/block"})),
                group("wg2", None, annotated({PREFERRED: "cloud.com/block"})),
                group("wg3"),
            ),
            False,
            TAS_ON,
            None,
            id=f"{kind}/TestValidateCreate/valid topology request",
        ),
        pytest.param(
            workers(head(queue(make("x"), "queue"), annotated(both)), group("wg1", None, annotated(both))),
            False,
            TAS_ON,
            f"[{h}: Invalid value: {ONE_TOPOLOGY}, {w0}: Invalid value: {ONE_TOPOLOGY}]",
            id=f"{kind}/TestValidateCreate/invalid topology request",
        ),
        pytest.param(
            workers(
                head(queue(make("x"), "queue"), sliced("2")),
                group("wg1", 5, sliced("10")),
                group("wg2", 10, sliced("20")),
            ),
            False,
            TAS_ON,
            f'[{h}[{SLICE_SIZE}]: Invalid value: "2": must not be greater than pod set count 1, '
            f'{w0}[{SLICE_SIZE}]: Invalid value: "10": must not be greater than pod set count 5, '
            f'{w}[1].template.metadata.annotations[{SLICE_SIZE}]: Invalid value: "20": must not be '
            "greater than pod set count 10]",
            id=f"{kind}/TestValidateCreate/invalid slice topology request - slice size larger than number "
            "of podsets",
        ),
        pytest.param(
            workers(
                head(queue(make("x"), "queue"), grouped("groupname")),
                group("wg1", None, grouped("groupname")),
            ),
            False,
            TAS_ON,
            None,
            id=f"{kind}/TestValidateCreate/valid PodSet grouping request",
        ),
        pytest.param(
            workers(
                head(queue(make("x"), "queue"), grouped("1podset")),
                group("wg1", 5, grouped("3podsets")),
                group("wg2", 10, grouped("3podsets")),
                group("wg3", 10, grouped("3podsets")),
            ),
            False,
            TAS_ON,
            "["
            + ", ".join(
                [
                    f'{h}[{GROUP_NAME}]: Invalid value: "1podset": can only define groups of '
                    "exactly 2 pod sets, got: 1 pod set(s)"
                ]
                + [
                    f"{w}[{i}].template.metadata.annotations[{GROUP_NAME}]: Invalid value: "
                    '"3podsets": can only define groups of exactly 2 pod sets, got: 3 pod set(s)'
                    for i in range(3)
                ]
            )
            + "]",
            id=f"{kind}/TestValidateCreate/invalid PodSet grouping request - groups of size other than 2",
        ),
        pytest.param(
            workers(
                queue(make("x"), "queue"),
                group("wg1", 5, grouped("groupname")),
                group("wg2", 10, grouped("groupname")),
            ),
            False,
            TAS_ON,
            "["
            + ", ".join(
                f"{w}[{i}].template.metadata.annotations[{GROUP_NAME}]: Invalid value: "
                '"groupname": can only define groups where at least one pod set has only 1 '
                "replica, got: 5 replica(s) and 10 replica(s) in the group"
                for i in range(2)
            )
            + "]",
            id=f"{kind}/TestValidateCreate/invalid PodSet grouping request - no leader in group",
        ),
        pytest.param(
            workers(
                head(queue(make("x"), "queue"), grouped("groupname")),
                group("wg1", 5, grouped("groupname", REQUIRED, "cloud.com/rack")),
            ),
            False,
            TAS_ON,
            "[" + ", ".join(mismatch_errors) + "]",
            id=f"{kind}/TestValidateCreate/invalid PodSet grouping request - required topology does "
            "not match",
        ),
        pytest.param(
            workers(
                head(queue(make("x"), "queue"), grouped("groupname", PREFERRED)),
                group("wg1", 5, grouped("groupname", PREFERRED, "cloud.com/rack")),
            ),
            False,
            TAS_ON,
            "[" + ", ".join(mismatch_errors) + "]",
            id=f"{kind}/TestValidateCreate/invalid PodSet grouping request - preferred topology does not "
            "match",
        ),
        pytest.param(
            workers(
                head(queue(make("x"), "queue"), grouped("groupname", PREFERRED)),
                group("wg1", 5, grouped("groupname", REQUIRED, "cloud.com/rack")),
            ),
            False,
            TAS_ON,
            "[" + ", ".join(mismatch_errors) + "]",
            id=f"{kind}/TestValidateCreate/invalid PodSet grouping request - different topology "
            "annotations within group",
        ),
        pytest.param(
            _prebuilt_annotation(queue(make("x"), "queue"), "wl1"),
            False,
            {"WorkloadIdentifierAnnotations": True},
            None,
            id=f"{kind}/TestValidateCreate/valid with prebuilt workload annotation, "
            "WorkloadIdentifierAnnotations enabled",
        ),
    ]


RAYCLUSTER_AUTOSCALER = (
    "spec.enableInTreeAutoscaling: Invalid value: true: a kueue-managed RayCluster can use "
    "autoscaling only as an elastic job: enable the ElasticJobsViaWorkloadSlices feature gate and "
    'set the "kueue.x-k8s.io/elastic-job": "true" annotation'
)
RAYCLUSTER_CREATE = [
    pytest.param(make_cluster(), False, NO_IDS, None, id="RayCluster/TestValidateCreate/invalid unmanaged"),
    pytest.param(
        _autoscaling(queue(make_cluster(), "queue")),
        False,
        NO_IDS,
        RAYCLUSTER_AUTOSCALER,
        id="RayCluster/TestValidateCreate/invalid managed - has auto scaler",
    ),
    pytest.param(
        _autoscaling(_managed_by(_gated(queue(make_cluster(), "queue")), keys.MULTIKUEUE_CONTROLLER)),
        False,
        ELASTIC_ON,
        "spec.enableInTreeAutoscaling: Forbidden: in-tree autoscaling is not supported "
        "for a MultiKueue-managed elastic RayCluster",
        id="RayCluster/TestValidateCreate/invalid managed - elastic MultiKueue job with auto scaler",
    ),
    pytest.param(
        _managed_by(_gated(queue(make_cluster(), "queue")), keys.MULTIKUEUE_CONTROLLER),
        False,
        ELASTIC_ON,
        None,
        id="RayCluster/TestValidateCreate/valid managed - elastic MultiKueue job without auto scaler",
    ),
    pytest.param(
        workers(queue(make_cluster(), "queue"), *many_groups(18)),
        False,
        NO_IDS,
        "spec.workerGroupSpecs: Too many: 19: must have at most 18 items",
        id="RayCluster/TestValidateCreate/invalid managed - too many worker groups",
    ),
    pytest.param(
        workers(queue(make_cluster(), "queue"), {"groupName": "head"}),
        False,
        NO_IDS,
        'spec.workerGroupSpecs[0].groupName: Forbidden: "head" is reserved for the head group',
        id="RayCluster/TestValidateCreate/worker group uses head name",
    ),
    *_topology_cases(make_cluster, "spec."),
]

RAYJOB_CREATE = [
    pytest.param(
        {**make_job(), "spec": {**make_job()["spec"], "shutdownAfterJobFinishes": False}},
        False,
        NO_IDS,
        None,
        id="RayJob/TestValidateCreate/invalid unmanaged",
    ),
    pytest.param(
        queue({**make_job(), "spec": {**make_job()["spec"], "rayClusterSpec": None}}, "queue"),
        False,
        NO_IDS,
        "spec.rayClusterSpec: Required value: rayClusterSpec is required for Kueue-managed jobs that don't "
        "use clusterSelector",
        id="RayJob/TestValidateCreate/invalid managed - no cluster selector and no RayClusterSpec",
    ),
    pytest.param(
        {**make_job(), "spec": {**make_job()["spec"], "shutdownAfterJobFinishes": False}},
        False,
        NO_IDS,
        None,
        id="RayJob/TestValidateCreate/invalid unmanaged - local queue default",
    ),
    pytest.param(
        {**make_job(), "spec": {**make_job()["spec"], "shutdownAfterJobFinishes": False}},
        True,
        NO_IDS,
        "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster "
        "after finishing",
        id="RayJob/TestValidateCreate/invalid managed - by config",
    ),
    pytest.param(
        queue({**make_job(), "spec": {**make_job()["spec"], "shutdownAfterJobFinishes": False}}, "queue"),
        False,
        NO_IDS,
        "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should "
        "delete the cluster after finishing",
        id="RayJob/TestValidateCreate/invalid managed - by queue",
    ),
    pytest.param(
        queue({**make_job(), "spec": {**make_job()["spec"], "clusterSelector": {"k1": "v1"}}}, "queue"),
        False,
        NO_IDS,
        'spec.clusterSelector: Invalid value: {"k1":"v1"}: a kueue managed job should not '
        "use an existing cluster",
        id="RayJob/TestValidateCreate/invalid managed - has cluster selector and RayClusterSpec",
    ),
    pytest.param(
        _autoscaling(
            {
                **queue(make_job(), "queue"),
                "metadata": {
                    "name": "job",
                    "namespace": "ns",
                    "labels": {keys.QUEUE_NAME: "queue"},
                    "annotations": {keys.ELASTIC_JOB: "true"},
                },
            }
        ),
        False,
        ELASTIC_ON,
        None,
        id="RayJob/TestValidateCreate/invalid managed - has auto scaler",
    ),
    pytest.param(
        workers(queue(make_job(), "queue"), *many_groups(18)),
        False,
        NO_IDS,
        "spec.rayClusterSpec.workerGroupSpecs: Too many: 19: must have at most 18 items",
        id="RayJob/TestValidateCreate/invalid managed - too many worker groups",
    ),
    pytest.param(
        workers({**queue(make_job(), "queue")}, *many_groups(7)),
        False,
        {},
        None,
        id="RayJob/TestValidateCreate/valid managed - max worker groups with gcs fault tolerance",
    ),
    pytest.param(
        workers(queue(make_job(), "queue"), {"groupName": "head"}),
        False,
        NO_IDS,
        'spec.rayClusterSpec.workerGroupSpecs[0].groupName: Forbidden: "head" is reserved for the head group',
        id="RayJob/TestValidateCreate/worker group uses head name",
    ),
    *_topology_cases(make_job, "spec.rayClusterSpec."),
]

RAYSERVICE_CREATE = [
    pytest.param(
        workers(
            head(queue(make_service("rayservice"), "queue"), _containers("head")),
            group("workers", None, _containers("worker")),
        ),
        False,
        {},
        None,
        id="RayService/TestValidateCreate/valid rayservice",
    ),
    pytest.param(
        workers(head(queue(make_service("rayservice"), "queue"), _containers("head")), *many_groups(18)),
        False,
        {},
        "spec.rayClusterSpec.workerGroupSpecs: Too many: 19: must have at most 18 items",
        id="RayService/TestValidateCreate/too many worker groups",
    ),
    pytest.param(
        _autoscaling(workers(head(queue(make_service("rayservice"), "queue"), _containers("head")))),
        False,
        {},
        "spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job should "
        "only use autoscaling when workload slicing is enabled",
        id="RayService/TestValidateCreate/autoscaling without elastic jobs feature",
    ),
]


@pytest.mark.parametrize(
    ("obj", "manage_all", "gates", "want"), [*RAYCLUSTER_CREATE, *RAYJOB_CREATE, *RAYSERVICE_CREATE]
)
def test_validate_create(
    obj: dict[str, Any], manage_all: bool, gates: dict[str, bool], want: str | None
) -> None:
    assert errors_text(WEBHOOKS[obj["kind"]].validate(obj, None, ctx(gates, manage_all=manage_all))) == want


def test_rayjob_on_an_existing_cluster_is_accepted_and_not_managed() -> None:
    """rayjob_webhook.go: clusterSelector without a cluster spec is accepted; the controller skips it."""
    job = queue(make_job(), "queue")
    job["spec"]["rayClusterSpec"] = None
    job["spec"]["clusterSelector"] = {"ray.io/cluster": "existing"}
    assert RAYJOB_WEBHOOK.validate(job, None, ctx()) == []
    assert not RAYJOB.is_managed(job, ctx().policy, {})


# -- TestValidateUpdate -------------------------------------------------------------------------------


def _label(obj: dict[str, Any], key: str, value: str) -> dict[str, Any]:
    obj["metadata"].setdefault("labels", {})[key] = value
    return obj


def _update_cases(make: Any) -> list[Any]:
    kind = make()["kind"]
    sus = suspend
    default = keys.DEFAULT_LOCAL_QUEUE
    ray_on, ray_off = {"ValidateRayAndSparkJobUpdates": True}, {"ValidateRayAndSparkJobUpdates": False}
    priority_immutable = kind == "RayJob"
    return [
        pytest.param(
            make("job"), make("job"), False, {}, None, id=f"{kind}/TestValidateUpdate/invalid unmanaged"
        ),
        pytest.param(
            sus(queue(make("job"), "queue"), False),
            _label(sus(queue(make("job"), "queue"), False), "test-label", "test-value"),
            False,
            {},
            None,
            id=f"{kind}/TestValidateUpdate/queue name unchanged while unsuspended",
        ),
        pytest.param(
            sus(queue(make("job"), "queue"), False),
            sus(queue(make("job"), "queue2"), False),
            False,
            {},
            f'{QUEUE_PATH}: Invalid value: "queue2": {IMMUTABLE}',
            id=f"{kind}/TestValidateUpdate/invalid managed - queue name should not change while unsuspended",
        ),
        pytest.param(
            sus(queue(make("job"), "queue"), True),
            sus(queue(make("job"), "queue2"), True),
            False,
            {},
            None,
            id=f"{kind}/TestValidateUpdate/managed - queue name can change while suspended",
        ),
        pytest.param(
            sus(queue(make("job"), "queue"), False),
            sus(make("job"), False),
            False,
            ray_on,
            f'{QUEUE_PATH}: Invalid value: "": {IMMUTABLE}',
            id=f"{kind}/TestValidateUpdate/queue name removal is rejected when the job is unsuspended and "
            "ValidateRayAndSparkJobUpdates is enabled",
        ),
        pytest.param(
            sus(queue(make("job"), "queue"), False),
            sus(make("job"), False),
            False,
            ray_off,
            None,
            id=f"{kind}/TestValidateUpdate/queue name removal is allowed when the job is unsuspended and "
            "ValidateRayAndSparkJobUpdates is disabled",
        ),
        pytest.param(
            sus(queue(make("job"), default), True),
            sus(make("job"), True),
            True,
            ray_on,
            f'{QUEUE_PATH}: Invalid value: "": queue-name must not be empty in namespace with default queue',
            id=f"{kind}/TestValidateUpdate/queue name removal is rejected when the job is suspended in a "
            "namespace with a default queue and ValidateRayAndSparkJobUpdates is enabled",
        ),
        pytest.param(
            sus(queue(make("job"), default), True),
            sus(make("job"), True),
            True,
            ray_off,
            None,
            id=f"{kind}/TestValidateUpdate/queue name removal is allowed when the job is suspended in a "
            "namespace with a default queue and ValidateRayAndSparkJobUpdates is disabled",
        ),
        pytest.param(
            sus(queue(make("job"), "queue"), True),
            sus(make("job"), True),
            False,
            ray_on,
            None,
            id=f"{kind}/TestValidateUpdate/queue name removal is allowed when the job is suspended in a "
            "namespace without a default queue and ValidateRayAndSparkJobUpdates is enabled",
        ),
        pytest.param(
            _label(sus(make("job"), False), keys.PREBUILT_WORKLOAD_NAME, "wl1"),
            _label(sus(make("job"), False), keys.PREBUILT_WORKLOAD_NAME, "wl2"),
            False,
            ray_on,
            None,
            id=f"{kind}/TestValidateUpdate/prebuilt workload name change is not validated when the job is "
            "unmanaged and ValidateRayAndSparkJobUpdates is enabled",
        ),
        pytest.param(
            _label(queue(make("job"), "queue"), keys.PRIORITY_CLASS, "test-1"),
            _label(queue(make("job"), "queue"), keys.PRIORITY_CLASS, "test-2"),
            False,
            {},
            None,
            id=f"{kind}/TestValidateUpdate/priorityClassName is "
            f"{'immutable' if priority_immutable else 'mutable'}",
        ),
    ]


RAYJOB_NEWLY_MANAGED = [
    pytest.param(
        make_job(),
        {**make_job(), "spec": {**make_job()["spec"], "shutdownAfterJobFinishes": False}},
        False,
        {},
        None,
        id="RayJob/TestValidateUpdate/invalid unmanaged (shutdownAfterJobFinishes)",
    ),
    pytest.param(
        make_job(),
        queue({**make_job(), "spec": {**make_job()["spec"], "shutdownAfterJobFinishes": False}}, "queue"),
        False,
        {},
        "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster "
        "after finishing",
        id="RayJob/TestValidateUpdate/invalid new managed - by queue",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "default_lq", "gates", "want"),
    [
        *_update_cases(make_cluster),
        *_update_cases(make_job),
        *_update_cases(make_service),
        *RAYJOB_NEWLY_MANAGED,
    ],
)
def test_validate_update(
    old: dict[str, Any], new: dict[str, Any], default_lq: bool, gates: dict[str, bool], want: str | None
) -> None:
    errors = WEBHOOKS[new["kind"]].validate(new, old, ctx(gates, default_lq=default_lq))
    assert errors_text(errors) == want


def test_rayjob_update_invalid_new_managed_by_config() -> None:
    """TestValidateUpdate/invalid new managed - by config (manageJobsWithoutQueueName)."""
    old = make_job()
    new = {**make_job(), "spec": {**make_job()["spec"], "shutdownAfterJobFinishes": False}}
    assert errors_text(RAYJOB_WEBHOOK.validate(new, old, ctx(manage_all=True))) == (
        "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster "
        "after finishing"
    )


# -- rayservice_controller_test.go: TestPodSets, TestIsSuspended, TestIsActive, TestPodsReady ----------


def test_rayservice_pod_sets() -> None:
    """TestPodSets/no annotations, with NumOfHosts > 1, with gcs fault tolerance."""
    svc = workers(
        head(make_service(), _containers("head_c")), group("group1", 3, _containers("g"), numOfHosts=2)
    )
    assert [(ps["name"], ps["count"]) for ps in rayservice_podsets(svc)] == [("head", 1), ("group1", 6)]
    svc["spec"]["rayClusterConfig"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    assert rayservice_podsets(svc)[0]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "200m", "memory": "256Mi"}
    }


@pytest.mark.parametrize(
    ("suspend_value", "want"),
    [
        pytest.param(False, False, id="TestIsSuspended/not suspended"),
        pytest.param(True, True, id="TestIsSuspended/suspended"),
        pytest.param(None, False, id="TestIsSuspended/suspend is nil"),
    ],
)
def test_rayservice_is_suspended(suspend_value: bool | None, want: bool) -> None:
    svc = make_service()
    svc["spec"]["rayClusterConfig"]["suspend"] = suspend_value
    assert RAYSERVICE.is_suspended(svc) == want


@pytest.mark.parametrize(
    ("conditions", "want"),
    [
        pytest.param([{"type": "Ready", "status": "True"}], True, id="RayServiceReady condition is true"),
        pytest.param([{"type": "Ready", "status": "False"}], False, id="RayServiceReady condition is false"),
        pytest.param([], False, id="no conditions"),
    ],
)
def test_rayservice_is_active_and_pods_ready(conditions: list[dict[str, str]], want: bool) -> None:
    """TestIsActive and TestPodsReady, whose cases are the same three."""
    svc = make_service()
    svc["status"] = {"conditions": conditions}
    assert RAYSERVICE.still_running(svc) == want
    assert RAYSERVICE.pods_ready(svc) == want
