"""A TrainJob among the rest of pykueue: the JobSet the trainer makes for it runs under the
TrainJob's Workload (never one of its own), ``simulate`` reads runtimes from the scenario, and a
what-if submission reads them from the cluster's lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.jobset.lifecycle import LIFECYCLE as JOBSET
from pykueue.manager.jobs.ownership import find_managed_ancestor, workload_should_be_suspended
from pykueue.manager.scenario.cluster_snapshot import ClusterListing, SubmissionError, submission_workloads
from pykueue.manager.scenario.loader import ScenarioError
from pykueue.manager.simulate import simulate

from .trainjob_objects import TRAINER_LABELS, cluster_runtime, replicated_job, trainjob

JSON = dict[str, Any]
BOTH = AdmissionPolicy(frameworks=frozenset({"jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"}))
NS = {keys.NAMESPACE_NAME_LABEL: "ns"}


def _child_jobset(owner: JSON) -> JSON:
    """The JobSet the trainer makes: owned by the TrainJob, with its labels."""
    ref = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "trainjob",
           "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "trainjob", "namespace": "ns", "uid": "js-uid",
                         "labels": dict(owner["metadata"].get("labels") or {}), "ownerReferences": [ref]},
            "spec": {"replicatedJobs": [replicated_job("node")]}}


def test_the_trainers_jobset_runs_under_the_trainjobs_workload() -> None:
    owner = trainjob(queue="lq")
    jobset = _child_jobset(owner)
    # The reconciler: a JobSet controlled by an enabled managed kind gets no Workload of its own.
    assert not JOBSET.is_managed(jobset, BOTH, NS)
    # The webhook: the walk finds the TrainJob (which names a queue), so the JobSet is not suspended.
    key = ("trainer.kubeflow.org/v1alpha1", "TrainJob", "ns", "trainjob")
    ctx = AdmissionContext(BOTH, ClusterFacts(namespace_labels=NS, owners={key: owner}))
    assert find_managed_ancestor(jobset, ctx) is owner
    assert not workload_should_be_suspended(jobset, ctx)
    # With the TrainJob integration off, the JobSet is queued on its own, as in Kueue.
    alone = AdmissionPolicy(frameworks=frozenset({"jobset.x-k8s.io/jobset"}))
    assert JOBSET.is_managed(jobset, alone, NS)


def _queues() -> list[JSON]:
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "rf"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
            "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": 4}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
         "metadata": {"name": "lq", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}},
    ]


def _runtime() -> JSON:
    return cluster_runtime("test", replicated_job("node", labels=TRAINER_LABELS))


def test_simulate_reads_the_runtime_from_the_scenario(tmp_path: Path) -> None:
    first = trainjob("a", queue="lq", num_nodes=3, uid="a")
    second = trainjob("b", queue="lq", num_nodes=2, uid="b")
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump_all([*_queues(), _runtime(), first, second]))
    result = simulate([str(path)])
    owners = {w["owner"]: w["status"] for w in result["workloads"].values()}
    assert owners == {"trainer.kubeflow.org/v1alpha1/TrainJob ns/a": "Admitted",
                      "trainer.kubeflow.org/v1alpha1/TrainJob ns/b": "Pending"}  # 3 + 2 CPUs > 4
    missing = tmp_path / "missing.yaml"
    missing.write_text(yaml.safe_dump_all([*_queues(), first]))
    with pytest.raises(ScenarioError, match="runtime 'test' not found"):
        simulate([str(missing)])


def test_a_what_if_submission_reads_the_runtime_from_the_lists() -> None:
    items: dict[str, list[JSON]] = {"Namespace": [{"metadata": {"name": "ns", "labels": NS}}]}
    for obj in _queues():
        items.setdefault(obj["kind"], []).append(obj)
    tj = trainjob(queue="lq", num_nodes=2)
    with pytest.raises(SubmissionError, match="runtime 'test' not found"):
        submission_workloads(tj, ClusterListing(items, {"integrations": {"frameworks": [
            "trainer.kubeflow.org/trainjob"]}}), BOTH, 0)
    runtime = _runtime()
    del runtime["apiVersion"], runtime["kind"]  # as a list's items come
    items["ClusterTrainingRuntime"] = [runtime]
    submitted, [wl] = submission_workloads(tj, ClusterListing(items), BOTH, 0)
    assert submitted.ref == "TrainJob ns/trainjob"
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("node", 2)]


@pytest.mark.parametrize("status", [403, 404])
def test_the_cluster_read_lists_runtimes_when_it_can(status: int) -> None:
    import asyncio

    from pykueue.kube.client import ApiError
    from pykueue.live_cluster import _list_kind, related_listed

    listed = related_listed()
    assert [r.collection_path() for r in listed] == [
        "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes",
        "/apis/trainer.kubeflow.org/v1alpha1/trainingruntimes"]

    class Refusing:
        async def get(self, path: str, query: object = None) -> JSON:
            raise ApiError(status, "no", "no")

    assert asyncio.run(_list_kind(Refusing(), listed[0], optional=True)) == []  # type: ignore[arg-type]
