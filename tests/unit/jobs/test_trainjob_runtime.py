"""The JobSet Kueue computes for a TrainJob from its training runtime: counts per ML policy,
the trainer and initializer overrides, runtime patches merged strategically, pod-group labels."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.manager.core.objects import ObjectError
from pykueue.manager.jobs.related import RelatedMissing
from pykueue.manager.jobs.trainjob.runtime import (
    CLUSTER_TRAINING_RUNTIME,
    JOB_TEMPLATE,
    POD_GROUP_LABEL,
    TRAINING_RUNTIME,
    child_jobset,
    podsets,
    runtime_key,
    runtime_of,
    strategic_merge,
)

from .trainjob_objects import (
    TRAINER_LABELS,
    cluster_runtime,
    namespaced_runtime,
    related,
    replicated_job,
    rj_patch,
    runtime_patch,
    trainjob,
)

JSON = dict[str, Any]


def _counts(tj: JSON, rt: JSON) -> list[tuple[str, int]]:
    return [(ps["name"], ps["count"]) for ps in podsets(tj, related(rt))]


def _by_name(jobset: JSON) -> dict[str, JSON]:
    return {rj["name"]: rj for rj in jobset["spec"]["replicatedJobs"]}


def _node_container(rj: JSON) -> JSON:
    containers = rj["template"]["spec"]["template"]["spec"]["containers"]
    (container,) = (c for c in containers if c["name"] == "node")
    return dict(container)


# -- the runtime a TrainJob names -------------------------------------------------------------


def test_the_runtime_key_follows_the_reference_and_its_defaults() -> None:
    assert runtime_key(trainjob(runtime="torch")) == CLUSTER_TRAINING_RUNTIME.key("torch")
    assert runtime_key(trainjob(runtime="mine", runtime_kind="TrainingRuntime")) == \
        TRAINING_RUNTIME.key("mine", "ns")
    defaulted = trainjob(runtime="torch")
    defaulted["spec"]["runtimeRef"] = {"name": "torch"}  # the API server fills in group and kind
    assert runtime_key(defaulted) == ("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime", "", "torch")
    other = trainjob()
    other["spec"]["runtimeRef"]["kind"] = "SomethingElse"
    assert runtime_key(other) is None
    with pytest.raises(ObjectError, match=r"^unsupported runtime: SomethingElse.trainer.kubeflow.org$"):
        runtime_of(other, {})


def test_a_missing_runtime_is_reported_as_kueue_words_it() -> None:
    with pytest.raises(RelatedMissing, match=r"^runtime 'test' not found$") as info:
        podsets(trainjob(), {})
    assert info.value.key == CLUSTER_TRAINING_RUNTIME.key("test")
    # A namespaced runtime is looked up in the TrainJob's namespace only.
    tj = trainjob(runtime="mine", runtime_kind="TrainingRuntime")
    with pytest.raises(RelatedMissing):
        podsets(tj, related(namespaced_runtime("mine", "elsewhere", replicated_job("node"))))
    assert _counts(tj, namespaced_runtime("mine", "ns", replicated_job("node"))) == [("node", 1)]


# -- counts -----------------------------------------------------------------------------------


def test_without_an_ml_policy_num_nodes_sizes_the_trainer_step() -> None:
    rt = cluster_runtime("test", replicated_job("node", labels=TRAINER_LABELS), replicated_job("foo"))
    assert _counts(trainjob(), rt) == [("node", 1), ("foo", 1)]
    assert _counts(trainjob(num_nodes=3), rt) == [("node", 3), ("foo", 1)]


def test_the_policy_num_nodes_sizes_the_trainer_until_the_trainjob_says_otherwise() -> None:
    rt = cluster_runtime("test", replicated_job("node", labels=TRAINER_LABELS, parallelism=7),
                         replicated_job("other", parallelism=2, completions=4, replicas=3),
                         ml_policy={"numNodes": 4, "torch": {}})
    assert _counts(trainjob(), rt) == [("node", 4), ("other", 6)]  # 3 Jobs of min(2, 2) pods
    assert _counts(trainjob(num_nodes=2), rt) == [("node", 2), ("other", 6)]
    no_nodes = cluster_runtime("test", replicated_job("node", labels=TRAINER_LABELS, parallelism=7),
                               ml_policy={"torch": {}})
    assert _counts(trainjob(), no_nodes) == [("node", 1)]


def test_a_job_without_parallelism_runs_one_pod_and_at_least_one() -> None:
    rt = cluster_runtime("test", replicated_job("a", parallelism=None, completions=None),
                         replicated_job("b", parallelism=0, completions=0, replicas=2))
    assert _counts(trainjob(), rt) == [("a", 1), ("b", 2)]


@pytest.mark.parametrize(("launcher_as_node", "want"), [(False, 4), (True, 3)])
def test_mpi_sizes_the_job_named_node(launcher_as_node: bool, want: int) -> None:
    rt = cluster_runtime("test", replicated_job("launcher", containers=[{"name": "node"}]),
                         replicated_job("node", labels=TRAINER_LABELS),
                         ml_policy={"numNodes": 1, "mpi": {"runLauncherAsNode": launcher_as_node,
                                                           "mpiImplementation": "OpenMPI"}})
    assert _counts(trainjob(num_nodes=4), rt) == [("launcher", 1), ("node", want)]


def test_mpi_fails_as_the_plugin_does_for_an_implementation_it_cannot_configure() -> None:
    rt = cluster_runtime("test", replicated_job("launcher", containers=[{"name": "node"}]),
                         replicated_job("node", labels=TRAINER_LABELS),
                         ml_policy={"mpi": {"mpiImplementation": "Intel"}})
    with pytest.raises(ObjectError, match="MPI implementation for Intel"):
        podsets(trainjob(), related(rt))


@pytest.mark.parametrize("policy", ["jax", "xgboost", "flux"])
def test_other_policies_size_the_trainer_step(policy: str) -> None:
    rt = cluster_runtime("test", replicated_job("node", labels=TRAINER_LABELS),
                         ml_policy={"numNodes": 2, policy: {}})
    assert _counts(trainjob(), rt) == [("node", 2)]
    assert _counts(trainjob(num_nodes=5), rt) == [("node", 5)]


# -- the trainer's and initializers' overrides ---------------------------------------------


def test_the_trainer_step_runs_one_job_with_the_trainjobs_image_resources_and_env() -> None:
    rt = cluster_runtime("test", replicated_job("node", replicas=3, labels=TRAINER_LABELS, containers=[
        {"name": "node", "image": "old", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
         "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "x"}]}},
        {"name": "sidecar", "image": "side"}]))
    tj = trainjob()
    tj["spec"]["trainer"] = {"image": "new", "command": ["python"], "args": ["train.py"],
                             "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}],
                             "resourcesPerNode": {"requests": {"cpu": "4", "nvidia.com/gpu": "1"}}}
    rj = _by_name(child_jobset(tj, rt))["node"]
    assert rj["replicas"] == 1
    node = _node_container(rj)
    assert (node["image"], node["command"], node["args"]) == ("new", ["python"], ["train.py"])
    assert node["resources"] == {"requests": {"cpu": "4", "nvidia.com/gpu": "1"}}  # replaced whole
    assert node["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "20"},
                           {"name": "C", "value": "3"}]
    sidecar = rj["template"]["spec"]["template"]["spec"]["containers"][1]
    assert sidecar == {"name": "sidecar", "image": "side"}
    [ps] = podsets(tj, related(rt))
    assert ps["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "4"
    assert rt["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] == 3, "the runtime is not mutated"


def test_resources_reach_the_node_job_of_an_mpi_runtime_whose_launcher_runs_as_a_node() -> None:
    rt = cluster_runtime("test", replicated_job("launcher", containers=[{"name": "node"}]),
                         replicated_job("node", containers=[{"name": "node"}]),
                         ml_policy={"mpi": {"runLauncherAsNode": True}})
    tj = trainjob()
    tj["spec"]["trainer"] = {"resourcesPerNode": {"limits": {"cpu": "2"}}, "image": "not-here"}
    jobs = _by_name(child_jobset(tj, rt))
    assert _node_container(jobs["node"]) == {"name": "node", "resources": {"limits": {"cpu": "2"}}}
    assert _node_container(jobs["launcher"]) == {"name": "node"}


def test_initializers_run_one_job_and_get_the_storage_uri_env_and_secret() -> None:
    dataset = replicated_job("dataset-initializer", replicas=2,
                             labels={"trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"},
                             containers=[{"name": "dataset-initializer",
                                          "env": [{"name": "STORAGE_URI", "value": "old"}]}])
    model = replicated_job("model-initializer", replicas=2,
                           labels={"trainer.kubeflow.org/trainjob-ancestor-step": "model-initializer"},
                           containers=[{"name": "model-initializer"}])
    rt = cluster_runtime("test", dataset, model)
    tj = trainjob()
    tj["spec"]["initializer"] = {"dataset": {"storageUri": "hf://data", "env": [{"name": "X", "value": "1"}],
                                             "secretRef": {"name": "creds"}}}
    jobs = _by_name(child_jobset(tj, rt))
    assert jobs["dataset-initializer"]["replicas"] == jobs["model-initializer"]["replicas"] == 1
    container = jobs["dataset-initializer"]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [{"name": "STORAGE_URI", "value": "hf://data"}, {"name": "X", "value": "1"}]
    assert container["envFrom"] == [{"secretRef": {"name": "creds"}}]
    assert jobs["model-initializer"]["template"]["spec"]["template"]["spec"]["containers"] == [
        {"name": "model-initializer"}]


def test_coscheduling_labels_every_pod_with_the_trainjobs_pod_group() -> None:
    rt = cluster_runtime("test", replicated_job("node", labels=TRAINER_LABELS), replicated_job("foo"),
                         pod_group_policy={"coscheduling": {"scheduleTimeoutSeconds": 30}})
    for ps in podsets(trainjob(name="mine"), related(rt)):
        assert ps["template"]["metadata"]["labels"] == {POD_GROUP_LABEL: "mine"}
    volcano = cluster_runtime("test", replicated_job("node"), pod_group_policy={"volcano": {}})
    assert "metadata" not in podsets(trainjob(), related(volcano))[0]["template"]


# -- runtime patches ---------------------------------------------------------------------------


def test_runtime_patches_are_merged_into_their_jobs_in_order() -> None:
    rt = cluster_runtime("test", replicated_job("node", labels=TRAINER_LABELS, containers=[
        {"name": "node", "env": [{"name": "A", "value": "1"}],
         "volumeMounts": [{"name": "v", "mountPath": "/a"}]}]), replicated_job("foo"))
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"].update(
        nodeSelector={"zone": "a"}, tolerations=[{"key": "old", "operator": "Exists"}])
    user = runtime_patch("example.com/user", rj_patch("node", pod_labels={"team": "x"},
                                                      node_selector={"disk": "ssd"}))
    user["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"]["containers"] = [{"name": "node", "volumeMounts": [{"name": "w", "mountPath": "/b"}]}]
    kueue = runtime_patch("kueue.x-k8s.io/manager", rj_patch(
        "node", pod_labels={"team": "y", "kueue.x-k8s.io/podset": "node"}, node_selector={"zone": "b"},
        tolerations=[{"key": "spot", "operator": "Exists"}]))
    [node, foo] = podsets(trainjob(patches=[user, kueue]), related(rt))
    assert node["template"]["metadata"]["labels"] == {"team": "y", "kueue.x-k8s.io/podset": "node"}
    spec = node["template"]["spec"]
    assert spec["nodeSelector"] == {"zone": "b", "disk": "ssd"}
    # A list without a merge key is replaced.
    assert spec["tolerations"] == [{"key": "spot", "operator": "Exists"}]
    assert spec["containers"][0]["volumeMounts"] == [{"name": "v", "mountPath": "/a"},
                                                     {"name": "w", "mountPath": "/b"}]
    assert spec["containers"][0]["env"] == [{"name": "A", "value": "1"}]
    assert "metadata" not in foo["template"]


def test_strategic_merge_merges_keyed_lists_replaces_others_and_deletes_nulls() -> None:
    original = {"spec": {"template": {"spec": {
        "containers": [{"name": "a", "env": [{"name": "X", "value": "1"}], "args": ["1"]}],
        "schedulingGates": [{"name": "g1"}], "nodeSelector": {"k": "v", "gone": "x"}}}}}
    patch = {"spec": {"template": {"spec": {
        "containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}], "args": ["2"]}, {"name": "b"}],
        "schedulingGates": [{"name": "g2"}], "nodeSelector": {"gone": None}}}}}
    merged = strategic_merge(original, patch, JOB_TEMPLATE)
    pod = merged["spec"]["template"]["spec"]
    env = [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]
    assert pod["containers"] == [{"name": "a", "env": env, "args": ["2"]}, {"name": "b"}]
    assert pod["schedulingGates"] == [{"name": "g1"}, {"name": "g2"}]
    assert pod["nodeSelector"] == {"k": "v"}
    assert original["spec"]["template"]["spec"]["nodeSelector"] == {"k": "v", "gone": "x"}


def test_the_torch_distributed_runtime_of_the_trainers_release() -> None:
    """The shape of the trainer's ``torch-distributed`` ClusterTrainingRuntime (v2.2): one
    trainer job ``node``, ``numNodes: 1``, a torch policy, a container without requests."""
    rt = cluster_runtime("torch-distributed", replicated_job(
        "node", replicas=None, parallelism=None, completions=None, labels=TRAINER_LABELS,
        containers=[{"name": "node", "image": "pytorch/pytorch", "command": ["/bin/bash", "-c"]}]),
        ml_policy={"numNodes": 1, "torch": {}})
    tj = trainjob(runtime="torch-distributed", num_nodes=2)
    tj["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    [ps] = podsets(tj, related(rt))
    assert (ps["name"], ps["count"]) == ("node", 2)
    assert ps["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1", "memory": "1Gi"}}
