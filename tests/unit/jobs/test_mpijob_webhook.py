"""MPIJob admission: the shared job defaults and checks in ``runPolicy``, the workers' pod
index offset, and topology annotations checked per replica type on create and update."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.gates import FeatureGates
from pykueue.manager.jobs.mpijob.webhook import WEBHOOK

from .test_mpijob_lifecycle import mpijob

POLICY = AdmissionPolicy(frameworks=frozenset({"batch/job", "kubeflow.org/mpijob"}))
NS = {keys.NAMESPACE_NAME_LABEL: "ns"}
LAUNCHER_META = "spec.mpiReplicaSpecs[Launcher].template.metadata"
WORKER_META = "spec.mpiReplicaSpecs[Worker].template.metadata"


def ctx(gates: dict[str, bool] | None = None, **facts: Any) -> AdmissionContext:
    policy = AdmissionPolicy(frameworks=POLICY.frameworks, gates=FeatureGates(gates or {}))
    return AdmissionContext(policy, ClusterFacts(namespace_labels=NS, **facts))


def _annotate(job: dict[str, Any], role: str, annotations: dict[str, str]) -> dict[str, Any]:
    job["spec"]["mpiReplicaSpecs"][role]["template"].setdefault("metadata", {})["annotations"] = annotations
    return job


def test_a_queued_job_is_suspended_in_its_run_policy() -> None:
    job = mpijob(suspend=False)
    del job["spec"]["runPolicy"]
    out = WEBHOOK.default(job, ctx())
    assert out["spec"]["runPolicy"] == {"suspend": True}


def test_a_job_without_queue_is_left_running() -> None:
    job = mpijob(suspend=False)
    del job["metadata"]["labels"][keys.QUEUE_NAME]
    out = WEBHOOK.default(copy.deepcopy(job), ctx())
    assert out == job


def test_managed_by_goes_to_multikueue_from_unset_or_the_mpi_operator_only() -> None:
    for current in (None, "kubeflow.org/mpi-operator"):
        job = mpijob()
        if current:
            job["spec"]["runPolicy"]["managedBy"] = current
        out = WEBHOOK.default(job, ctx(queue_uses_multikueue=True))
        assert out["spec"]["runPolicy"]["managedBy"] == keys.MULTIKUEUE_CONTROLLER
    job = mpijob()
    job["spec"]["runPolicy"]["managedBy"] = "kubeflow.org/training-operator"
    out = WEBHOOK.default(job, ctx(queue_uses_multikueue=True))
    assert out["spec"]["runPolicy"]["managedBy"] == "kubeflow.org/training-operator"


def test_the_worker_index_offset_is_set_even_on_a_job_kueue_does_not_manage() -> None:
    job = mpijob(run_launcher_as_worker=True)
    del job["metadata"]["labels"][keys.QUEUE_NAME]
    out = WEBHOOK.default(job, ctx())
    worker = out["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    assert worker["metadata"]["annotations"] == {keys.POD_INDEX_OFFSET: "1"}
    assert "metadata" not in out["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]


def test_a_worker_without_template_gets_one_for_its_offset() -> None:
    job = mpijob(run_launcher_as_worker=True)
    job["spec"]["mpiReplicaSpecs"]["Worker"] = {"replicas": 2}
    out = WEBHOOK.default(job, ctx())
    assert out["spec"]["mpiReplicaSpecs"]["Worker"]["template"] == {
        "metadata": {"annotations": {keys.POD_INDEX_OFFSET: "1"}}}


def test_create_errors_are_sorted_by_field() -> None:
    job = mpijob()
    job["metadata"]["labels"][keys.QUEUE_NAME] = "bad q"
    _annotate(job, "Worker", {keys.PODSET_SLICE_SIZE: "1"})
    _annotate(job, "Launcher", {keys.PODSET_SLICE_SIZE: "1"})
    paths = [e.path for e in WEBHOOK.validate(job, None, ctx())]
    assert paths == sorted(paths) and paths[0] == f"metadata.labels[{keys.QUEUE_NAME}]"
    assert {p.split(".template")[0] for p in paths[1:]} == {"spec.mpiReplicaSpecs[Launcher]",
                                                           "spec.mpiReplicaSpecs[Worker]"}


def test_an_update_checks_the_creation_rules_and_topology_again() -> None:
    old = _annotate(mpijob(), "Worker", {keys.PODSET_SLICE_REQUIRED_TOPOLOGY: "cloud.com/rack",
                                         keys.PODSET_SLICE_SIZE: "3"})
    new = copy.deepcopy(old)
    errors = WEBHOOK.validate(new, old, ctx())
    assert [e.path for e in errors] == [f"{WORKER_META}.annotations[{keys.PODSET_SLICE_SIZE}]"]
    assert "must not be greater than pod set count 2" in str(errors[0])
    new["metadata"]["labels"][keys.QUEUE_NAME] = "other"
    new["spec"]["runPolicy"]["suspend"] = False
    paths = [e.path for e in WEBHOOK.validate(new, old, ctx())]
    assert paths[0] == f"metadata.labels[{keys.QUEUE_NAME}]", "the update rules come first"


def test_a_prebuilt_workload_is_accepted() -> None:
    job = mpijob()
    job["metadata"]["labels"][keys.PREBUILT_WORKLOAD_NAME] = "wl"
    assert WEBHOOK.validate(job, None, ctx()) == []


def test_topology_rules_are_off_with_the_gate() -> None:
    job = _annotate(mpijob(), "Launcher", {keys.PODSET_REQUIRED_TOPOLOGY: "a",
                                           keys.PODSET_PREFERRED_TOPOLOGY: "b", keys.PODSET_GROUP_NAME: "1"})
    assert WEBHOOK.validate(job, None, ctx({"TopologyAwareScheduling": False})) == []
    assert WEBHOOK.validate(job, None, ctx())


def test_a_group_needs_a_required_or_preferred_topology_to_be_one() -> None:
    job = _annotate(mpijob(), "Launcher", {keys.PODSET_GROUP_NAME: "g",
                                           keys.PODSET_REQUIRED_TOPOLOGY: "rack"})
    _annotate(job, "Worker", {keys.PODSET_GROUP_NAME: "g", keys.PODSET_UNCONSTRAINED_TOPOLOGY: "true"})
    errors = WEBHOOK.validate(job, None, ctx())
    # The worker is refused on its own, and the launcher is a group of one.
    assert [e.path for e in errors] == [f"{LAUNCHER_META}.annotations[{keys.PODSET_GROUP_NAME}]",
                                        f"{WORKER_META}.annotations[{keys.PODSET_GROUP_NAME}]"]
    assert "got: 1 pod set(s)" in str(errors[0]) and "may not be set when neither" in str(errors[1])
