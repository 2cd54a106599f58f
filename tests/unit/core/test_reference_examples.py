"""Kueue's published example manifests through ``simulate``, with the outcome Kueue gives.

Queue set-ups and sample jobs are read as they are published; where the example needs a
Configuration (resource transformations) or an extra object, a small file is written
beside them in a temporary folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pykueue.manager.simulate import simulate


def _ex(shared: Path, *parts: str) -> str:
    return str(shared / "reference" / "examples" / Path(*parts))


def _by_owner(data: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [w for w in data["workloads"].values() if w["owner"].startswith(prefix)]


def test_quick_start(shared_dir: Path) -> None:
    data = simulate([_ex(shared_dir, "getting-started", "quick-start-setup.yaml"),
                     _ex(shared_dir, "getting-started", "quick-start-job.yaml")])
    (wl,) = data["workloads"].values()
    assert wl["status"] == "Admitted"
    assert wl["podSets"]["main"]["count"] == 3
    assert wl["podSets"]["main"]["flavors"] == {"cpu": "default-flavor", "memory": "default-flavor"}
    usage = data["clusterQueues"]["cluster-queue"]["usage"]
    assert usage == {"default-flavor": {"cpu": "3", "memory": "600Mi"}}


def test_single_cluster_queue_takes_three_sample_jobs_of_four(shared_dir: Path) -> None:
    job = _ex(shared_dir, "jobs", "sample-job.yaml")
    data = simulate([_ex(shared_dir, "admin", "single-clusterqueue-setup.yaml"), job, job, job, job])
    statuses = sorted(w["status"] for w in data["workloads"].values())
    assert statuses == ["Admitted", "Admitted", "Admitted", "Pending"]
    cq = data["clusterQueues"]["cluster-queue"]
    assert (cq["pending"], cq["admitted"]) == (1, 3)
    assert cq["usage"]["default-flavor"]["cpu"] == "9"


def test_shared_quota_with_cpu_credits(shared_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"apiVersion": "pykueue.dev/v1alpha1", "kind": "Scenario",
                                      "metadata": {"name": "credits"}, "spec": {"config": {"resources": {
                                          "transformations": [{"input": "cpu", "strategy": "Retain",
                                                               "outputs": {"cpu_credits": "1"}}]}}}}))
    job = _ex(shared_dir, "admin", "shared-quota-sample-job.yaml")
    data = simulate([str(config), _ex(shared_dir, "admin", "shared-quota-setup.yaml"), *[job] * 5])
    admitted = [w for w in data["workloads"].values() if w["status"] == "Admitted"]
    pending = [w for w in data["workloads"].values() if w["status"] == "Pending"]
    # 14 credits allow four 3-CPU jobs: three fill on-demand (9 CPU), the fourth goes to spot.
    assert len(admitted) == 4 and len(pending) == 1
    assert sorted(w["podSets"]["main"]["flavors"]["cpu"] for w in admitted) == ["on-demand"] * 3 + ["spot"]
    assert all(w["podSets"]["main"]["flavors"]["cpu_credits"] == "credits" for w in admitted)
    assert "cpu_credits" in pending[0]["reason"]
    assert data["clusterQueues"]["team-cluster-queue"]["usage"]["credits"] == {"cpu_credits": "12"}


def test_concurrent_admission_setup_falls_through_flavors(shared_dir: Path, tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "six", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "team-queue"}},
        "spec": {"parallelism": 6, "template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}))
    data = simulate([_ex(shared_dir, "admin", "concurrent-admission-setup.yaml"), str(job)])
    (wl,) = data["workloads"].values()
    assert wl["status"] == "Admitted"
    assert wl["podSets"]["main"]["flavors"] == {"cpu": "on-demand", "memory": "on-demand"}


def test_pytorchjob_sample(shared_dir: Path) -> None:
    data = simulate([_ex(shared_dir, "admin", "single-clusterqueue-setup.yaml"),
                     _ex(shared_dir, "jobs", "sample-pytorchjob.yaml")])
    (wl,) = _by_owner(data, "kubeflow.org/v1/PyTorchJob")
    assert wl["status"] == "Admitted"
    assert set(wl["podSets"]) == {"master", "worker"}
    usage = data["clusterQueues"]["cluster-queue"]["usage"]["default-flavor"]
    assert usage == {"cpu": "2", "memory": "400Mi"}


def test_leaderworkerset_sample(shared_dir: Path) -> None:
    data = simulate([_ex(shared_dir, "admin", "single-clusterqueue-setup.yaml"),
                     _ex(shared_dir, "serving-workloads", "sample-leaderworkerset.yaml")])
    groups = _by_owner(data, "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet")
    assert len(groups) == 2
    for wl in groups:
        assert wl["status"] == "Admitted"
        assert {n: p["count"] for n, p in wl["podSets"].items()} == {"leader": 1, "worker": 2}
    # Two groups of one 100m leader and two 200m workers.
    assert data["clusterQueues"]["cluster-queue"]["usage"]["default-flavor"]["cpu"] == "1"


def test_partial_admission_sample(shared_dir: Path) -> None:
    data = simulate([_ex(shared_dir, "admin", "single-clusterqueue-setup.yaml"),
                     _ex(shared_dir, "jobs", "sample-job-partial-admission.yaml")])
    (wl,) = data["workloads"].values()
    assert wl["status"] == "Admitted"
    assert wl["podSets"]["main"]["count"] == 9  # 20 asked, at least 5, 9 CPUs of quota


def test_admission_fair_sharing_setup_admits_both_jobs(shared_dir: Path) -> None:
    data = simulate([_ex(shared_dir, "admission-fs", "admission-fair-sharing-setup.yaml"),
                     _ex(shared_dir, "admission-fs", "lq-a-simple-job.yaml"),
                     _ex(shared_dir, "admission-fs", "lq-b-simple-job.yaml")])
    assert [w["status"] for w in data["workloads"].values()] == ["Admitted", "Admitted"]
    assert data["clusterQueues"]["cluster-queue"]["usage"]["default-flavor"]["cpu"] == "6"


def test_provisioning_setup_reserves_quota_and_waits_for_the_check(shared_dir: Path) -> None:
    data = simulate([_ex(shared_dir, "provisioning", "provisioning-setup.yaml"),
                     _ex(shared_dir, "provisioning", "sample-job.yaml")])
    (wl,) = data["workloads"].values()
    assert wl["status"] == "QuotaReserved"
    assert wl["admissionChecks"] == {"sample-prov": "Pending"}


def test_minimal_cluster_queue_without_its_checks_is_inactive(shared_dir: Path, tmp_path: Path) -> None:
    objs = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
             "metadata": {"name": "q", "namespace": "default"}, "spec": {"clusterQueue": "cluster-queue-2"}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
             "metadata": {"name": "w", "namespace": "default"},
             "spec": {"queueName": "q",
                      "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]}}]
    extra = tmp_path / "extra.yaml"
    extra.write_text(yaml.safe_dump_all(objs))
    data = simulate([_ex(shared_dir, "admin", "minimal-cq.yaml"), str(extra)])
    assert "AdmissionCheckNotFound" in data["workloads"]["default/w"]["reason"]
