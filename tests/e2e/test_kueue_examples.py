"""Kueue's documented examples, applied with kubectl as a user types them, behave as Kueue's
docs say: the quick start (getting-started), plain pods and pod groups (tasks/run/plain_pods),
partial admission and elastic Jobs (tasks/run/jobs), and topology-aware Jobs (concepts/
topology_aware_scheduling, on the dev cluster's nodes, which carry the labels of Kueue's
``tas/kind-cluster.yaml``).

The manifests under ``manifests/kueue-examples`` are Kueue v0.19.2's, copied as they are.
Only what ties them to one cluster is adapted when they are applied: their namespace
(``default`` becomes the test's own), the ClusterQueue's name (one per test) and, where the
example's container sleeps, kwok's ``pod-complete`` delay on the pod (kwok plays the
kubelet and knows nothing of ``sleep``). Everything after ``kubectl`` is pykueue's doing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import condition, workloads_owned_by
from .test_tas_manager import wait_for_empty_nodes

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).parent / "manifests" / "kueue-examples"
COMPLETE_AFTER = "pod-complete.stage.kwok.x-k8s.io/delay"
RACK, BLOCK = "cloud.provider.com/topology-rack", "cloud.provider.com/topology-block"


def _example(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((EXAMPLES / name).read_text()) if d]


def _adapted(docs: list[dict[str, Any]], namespace: str, cq: str) -> list[dict[str, Any]]:
    """The example's objects in the test's namespace and ClusterQueue."""
    for doc in docs:
        meta = doc.setdefault("metadata", {})
        if doc["kind"] == "ClusterQueue":
            meta["name"] = cq
        elif doc["kind"] not in ("ResourceFlavor", "Topology"):
            meta["namespace"] = namespace
        if doc["kind"] == "LocalQueue":
            doc["spec"]["clusterQueue"] = cq
    return docs


def _manifest(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs)


def _sleeps(pod_like: dict[str, Any], seconds: str) -> None:
    """kwok completes the pod after ``seconds``, as the example's container would."""
    pod_like.setdefault("metadata", {}).setdefault("annotations", {})[COMPLETE_AFTER] = seconds


@pytest.fixture
def user_queue(dev_cluster: DevCluster, namespace: str) -> Iterator[str]:
    """Kueue's single-clusterqueue-setup example (9 CPUs, 36Gi) for this namespace; the
    ClusterQueue's name, deleted afterwards."""
    cq = f"cluster-queue-{namespace}"
    docs = _adapted(_example("single-clusterqueue-setup.yaml"), namespace, cq)
    dev_cluster.kubectl("apply", "-f", "-", stdin=_manifest(docs))
    try:
        yield cq
    finally:
        dev_cluster.kubectl("delete", "jobs,pods", "--all", "-n", namespace, "--wait=false", check=False)
        dev_cluster.kubectl("delete", "clusterqueues.kueue.x-k8s.io", cq, "--wait=false", check=False)


def _pod(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any] | None:
    result = dev_cluster.kubectl("get", "pod", name, "-n", namespace, "-o", "json", check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def _phase(pod: dict[str, Any] | None) -> str:
    return str(((pod or {}).get("status") or {}).get("phase") or "")


def _finalizers(pod: dict[str, Any] | None) -> list[str]:
    return list(((pod or {}).get("metadata") or {}).get("finalizers") or [])


def _create(dev_cluster: DevCluster, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``kubectl create`` (the examples use generateName); the objects as stored."""
    out = dev_cluster.kubectl("create", "-f", "-", "-o", "json", stdin=_manifest(docs)).stdout
    created = json.loads(out)
    return list(created["items"]) if created.get("kind") == "List" else [created]


def _deleted_cleanly(dev_cluster: DevCluster, namespace: str, *names: str) -> None:
    """``kubectl delete`` returns (no finalizer of pykueue's holds the pods) and they are gone."""
    result = dev_cluster.kubectl("delete", "pod", *names, "-n", namespace, "--timeout=30s", check=False,
                                 timeout_s=45.0)
    assert result.returncode == 0, result.stderr
    assert all(_pod(dev_cluster, namespace, n) is None for n in names)


def test_a_labelled_pod_is_admitted_runs_and_is_deleted_cleanly(
        dev_cluster: DevCluster, namespace: str, user_queue: str) -> None:
    [doc] = _adapted(_example("kueue-pod.yaml"), namespace, user_queue)
    _sleeps(doc, "3s")  # its container: sleep 3s
    [created] = _create(dev_cluster, [doc])
    name = created["metadata"]["name"]
    # As Kueue's webhook leaves it: gated, managed, with Kueue's finalizer.
    assert {"name": keys.ADMISSION_GATE} in created["spec"]["schedulingGates"]
    assert created["metadata"]["labels"][keys.MANAGED] == "true"
    assert keys.MANAGED_POD_FINALIZER in created["metadata"]["finalizers"]

    def workload() -> dict[str, Any] | None:
        found = workloads_owned_by(dev_cluster, namespace, "Pod", name)
        return found[0] if found and condition(found[0], "Admitted") else None

    wl = wait_until("the pod's Workload admitted", workload, 60.0)
    assert wl["metadata"]["name"].startswith(f"pod-{name}-")
    [ps] = wl["spec"]["podSets"]
    assert (ps["name"], ps["count"]) == ("main", 1)
    assert wl["status"]["admission"]["clusterQueue"] == user_queue

    def succeeded() -> dict[str, Any] | None:
        pod = _pod(dev_cluster, namespace, name)
        return pod if _phase(pod) == "Succeeded" else None

    pod = wait_until("the pod to run and succeed", succeeded, 60.0)
    assert not pod["spec"].get("schedulingGates"), "ungated at admission"

    def finished() -> dict[str, Any] | None:
        found = workloads_owned_by(dev_cluster, namespace, "Pod", name)
        return found[0] if found and condition(found[0], "Finished") else None

    wait_until("the Workload finished", finished, 60.0)
    wait_until("Kueue's finalizer removed from the finished pod",
               lambda: keys.MANAGED_POD_FINALIZER not in _finalizers(_pod(dev_cluster, namespace, name)),
               30.0)
    _deleted_cleanly(dev_cluster, namespace, name)


def test_a_running_labelled_pod_is_deleted_cleanly(dev_cluster: DevCluster, namespace: str,
                                                   user_queue: str) -> None:
    [doc] = _adapted(_example("kueue-pod.yaml"), namespace, user_queue)
    [created] = _create(dev_cluster, [doc])  # no kwok delay: it runs until deleted
    name = created["metadata"]["name"]
    wait_until("the pod running", lambda: _phase(_pod(dev_cluster, namespace, name)) == "Running", 60.0)
    assert keys.MANAGED_POD_FINALIZER in _finalizers(_pod(dev_cluster, namespace, name))
    _deleted_cleanly(dev_cluster, namespace, name)


def test_a_pod_group_is_admitted_as_one_runs_and_is_deleted_cleanly(
        dev_cluster: DevCluster, namespace: str, user_queue: str) -> None:
    docs = _adapted(_example("kueue-pod-group.yaml"), namespace, user_queue)
    _sleeps(docs[0], "3s")  # the leader: sleep 3
    _sleeps(docs[1], "2s")  # the worker: sleep 2
    leader, worker = _create(dev_cluster, docs[:1]) + _create(dev_cluster, docs[1:])
    names = [leader["metadata"]["name"], worker["metadata"]["name"]]
    for pod in (leader, worker):
        assert {"name": keys.ADMISSION_GATE} in pod["spec"]["schedulingGates"]

    def group(when: str) -> dict[str, Any] | None:
        result = dev_cluster.kubectl("get", "workloads.kueue.x-k8s.io", "sample-group", "-n", namespace,
                                     "-o", "json", check=False)
        wl = json.loads(result.stdout) if result.returncode == 0 else None
        return wl if wl is not None and condition(wl, when) else None

    wl = wait_until("the group's Workload admitted", lambda: group("Admitted"), 60.0)
    # Both pods ask for the same (3 CPUs): one role, one pod set of 2, 6 CPUs of the 9.
    [ps] = wl["spec"]["podSets"]
    assert ps["count"] == 2
    assert ps["name"] == leader["metadata"]["annotations"][keys.ROLE_HASH]
    assert wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["cpu"] == "6"
    assert sorted(r["name"] for r in wl["metadata"]["ownerReferences"]) == sorted(names)

    wait_until("both pods succeeded",
               lambda: all(_phase(_pod(dev_cluster, namespace, n)) == "Succeeded" for n in names), 60.0)
    done = wait_until("the group's Workload finished", lambda: group("Finished"), 60.0)
    finished = next(c for c in done["status"]["conditions"] if c["type"] == "Finished")
    assert (finished["reason"], finished["message"]) == ("Succeeded", "Pods succeeded: 2/2.")
    wait_until("Kueue's finalizers removed",
               lambda: all(keys.MANAGED_POD_FINALIZER not in _finalizers(_pod(dev_cluster, namespace, n))
                           for n in names), 30.0)
    _deleted_cleanly(dev_cluster, namespace, *names)


def _job(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
    return dict(dev_cluster.get_json("job", name, "-n", namespace))


def _running_pods(dev_cluster: DevCluster, namespace: str, job: str) -> list[dict[str, Any]]:
    pods = dev_cluster.get_json("pods", "-n", namespace, "-l", f"job-name={job}")["items"]
    return [p for p in pods if _phase(p) == "Running" and not p["metadata"].get("deletionTimestamp")]


def test_a_partially_admitted_job_never_runs_more_pods_than_admitted(
        dev_cluster: DevCluster, namespace: str, user_queue: str) -> None:
    [doc] = _adapted(_example("sample-job-partial-admission.yaml"), namespace, user_queue)
    _sleeps(doc["spec"]["template"], "2s")
    dev_cluster.kubectl("apply", "-f", "-", stdin=_manifest([doc]))
    name = doc["metadata"]["name"]

    def admitted() -> dict[str, Any] | None:
        found = workloads_owned_by(dev_cluster, namespace, "Job", name)
        return found[0] if found and condition(found[0], "Admitted") else None

    wl = wait_until("the Job's Workload admitted", admitted, 60.0)
    # "When queued in a ClusterQueue with only 9 CPUs available, it will be admitted with
    # parallelism=9. Note that the number of completions doesn't change."
    assert wl["status"]["admission"]["podSetAssignments"][0]["count"] == 9
    most = 0

    def complete() -> bool:
        nonlocal most
        job = _job(dev_cluster, namespace, name)
        running = len(_running_pods(dev_cluster, namespace, name))
        active = int((job.get("status") or {}).get("active") or 0)
        most = max(most, running, active)
        assert running <= 9 and active <= 9, f"{running} running, {active} active: more than admitted"
        if not job["spec"].get("suspend"):
            assert (job["spec"]["parallelism"], job["spec"]["completions"]) == (9, 20)
        return condition(job, "Complete")

    wait_until("the Job complete, never above the admitted count", complete, 120.0)
    assert most == 9, "it ran as many pods as were admitted"
    # What `kubectl describe` shows, in Kueue's words.
    wl_name = wl["metadata"]["name"]
    wait_until("the Job's events", lambda: {
        ("CreatedWorkload", f"Created Workload: {namespace}/{wl_name}"),
        ("Started", f"Admitted by clusterQueue {user_queue}"),
    } <= _events(dev_cluster, namespace, name), 30.0)
    wait_until("the Workload's events", lambda: {
        ("Admitted", f"Admitted by ClusterQueue {user_queue}, wait time since reservation was 0s"),
    } <= _events(dev_cluster, namespace, wl_name), 30.0)
    reserved = [m for r, m in _events(dev_cluster, namespace, wl_name) if r == "QuotaReserved"]
    assert len(reserved) == 1 and reserved[0].startswith(
        f"Quota reserved in ClusterQueue {user_queue}, wait time since queued was "), reserved


def _events(dev_cluster: DevCluster, namespace: str, name: str) -> set[tuple[str, str]]:
    """(reason, message) of the events about the object ``name``, as kubectl lists them."""
    items = dev_cluster.get_json("events", "-n", namespace, "--field-selector",
                                 f"involvedObject.name={name}")["items"]
    return {(str(e.get("reason")), str(e.get("message") or e.get("note") or "")) for e in items}


def _elastic_workloads(dev_cluster: DevCluster, namespace: str) -> list[dict[str, Any]]:
    return workloads_owned_by(dev_cluster, namespace, "Job", "sample-elastic-job")


def _apply_parallelism(dev_cluster: DevCluster, doc: dict[str, Any], parallelism: int) -> None:
    """As the docs' walkthrough: edit ``parallelism`` in the example and apply it."""
    doc["spec"]["parallelism"] = parallelism
    dev_cluster.kubectl("apply", "-f", "-", stdin=_manifest([doc]))


def test_an_elastic_job_scales_without_restarting_its_pods(dev_cluster: DevCluster, namespace: str,
                                                           user_queue: str) -> None:
    [doc] = _adapted(_example("sample-scalable-job.yaml"), namespace, user_queue)
    _sleeps(doc["spec"]["template"], "600s")  # sleep 60 at least: they run through the test
    dev_cluster.kubectl("apply", "-f", "-", stdin=_manifest([doc]))
    job = "sample-elastic-job"

    def running(n: int) -> list[dict[str, Any]]:
        pods = _running_pods(dev_cluster, namespace, job)
        return pods if len(pods) == n else []

    first = {p["metadata"]["uid"] for p in wait_until("3 pods running", lambda: running(3), 60.0)}
    [slice1] = _elastic_workloads(dev_cluster, namespace)
    assert condition(slice1, "Admitted") and slice1["spec"]["podSets"][0]["count"] == 3

    # Scale up by 2: a new Workload for 5 is admitted, the first is Finished, the 3 pods run on.
    _apply_parallelism(dev_cluster, doc, 5)
    pods = wait_until("5 pods running", lambda: running(5), 60.0)
    assert first <= {p["metadata"]["uid"] for p in pods}, "the first 3 pods were not restarted"
    assert all(not p["spec"].get("schedulingGates") for p in pods)

    def replaced() -> list[dict[str, Any]]:
        wls = {w["metadata"]["name"]: w for w in _elastic_workloads(dev_cluster, namespace)}
        old = wls.get(slice1["metadata"]["name"])
        new = [w for n, w in wls.items() if n != slice1["metadata"]["name"] and condition(w, "Admitted")]
        return [old, new[0]] if old is not None and condition(old, "Finished") and new else []

    old, new = wait_until("the first Workload finished, a new one admitted", replaced, 60.0)
    finished = next(c for c in old["status"]["conditions"] if c["type"] == "Finished")
    assert finished["reason"] == "WorkloadSliceReplaced"
    assert new["spec"]["podSets"][0]["count"] == 5
    assert new["metadata"]["annotations"][keys.WORKLOAD_SLICE_REPLACEMENT_FOR] == \
        f"{namespace}/{slice1['metadata']['name']}"
    assert not _job(dev_cluster, namespace, job)["spec"].get("suspend"), "never suspended"

    # Scale down to 1: the same Workload shrinks, the Job's controller removes 4 pods.
    _apply_parallelism(dev_cluster, doc, 1)
    wait_until("1 pod running", lambda: running(1), 60.0)

    def shrunk() -> bool:
        wls = [w for w in _elastic_workloads(dev_cluster, namespace) if not condition(w, "Finished")]
        return len(wls) == 1 and wls[0]["metadata"]["name"] == new["metadata"]["name"] \
            and wls[0]["spec"]["podSets"][0]["count"] == 1

    wait_until("the admitted Workload counting 1 pod, no new Workload", shrunk, 60.0)

    def reserved_cpu() -> str:
        status = dev_cluster.get_json("clusterqueues.kueue.x-k8s.io", user_queue)["status"]
        usage = status["flavorsReservation"]
        return str(next(r["total"] for f in usage for r in f["resources"] if r["name"] == "cpu"))

    wait_until("the ClusterQueue reserving 100m CPU, the quota of the 4 pods freed",
               lambda: reserved_cpu() == "100m", 30.0)


def test_the_quick_start_job_is_admitted_and_completes(dev_cluster: DevCluster, namespace: str) -> None:
    cq = f"cluster-queue-{namespace}"
    dev_cluster.kubectl("apply", "-f", "-", stdin=_manifest(
        _adapted(_example("quick-start-setup.yaml"), namespace, cq)))
    try:
        [job] = _adapted(_example("quick-start-job.yaml"), namespace, cq)
        _sleeps(job["spec"]["template"], "2s")  # its containers: sleep 30
        _create(dev_cluster, [job])
        wait_until("the quick start's Job complete", lambda: condition(
            dev_cluster.get_json("jobs", "sample-job", "-n", namespace), "Complete"), 90.0)
        [wl] = workloads_owned_by(dev_cluster, namespace, "Job", "sample-job")
        assert wl["status"]["admission"]["clusterQueue"] == cq
        assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("main", 3)]
        wait_until("its Workload finished", lambda: condition(
            workloads_owned_by(dev_cluster, namespace, "Job", "sample-job")[0], "Finished"), 30.0)
    finally:
        dev_cluster.kubectl("delete", "clusterqueues.kueue.x-k8s.io", cq, "--wait=false", check=False)


def test_the_topology_samples_keep_their_pods_together(dev_cluster: DevCluster, namespace: str) -> None:
    """``tas/sample-queues.yaml``, then ``sample-job-required.yaml`` (10 pods in one rack) and
    ``sample-job-preferred.yaml`` (40 pods, a block preferred: a block has 32 CPUs, so two)."""
    wait_for_empty_nodes(dev_cluster, namespace)
    cq = f"tas-cluster-queue-{namespace}"
    dev_cluster.kubectl("apply", "-f", "-", stdin=_manifest(
        _adapted(_example("tas-sample-queues.yaml"), namespace, cq)))
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in dev_cluster.get_json("nodes")["items"]}

    def running(job: str, count: int) -> list[dict[str, Any]] | None:
        pods = dev_cluster.get_json("pods", "-n", namespace, "-l", f"job-name={job}")["items"]
        live = [p for p in pods if _phase(p) == "Running" and p["spec"].get("nodeName")]
        return live if len(live) == count else None

    def domains(pods: list[dict[str, Any]], level: str) -> set[str]:
        return {labels[p["spec"]["nodeName"]][level] for p in pods}

    try:
        for sample, count, level, spans in (("tas-sample-job-required.yaml", 10, RACK, 1),
                                            ("tas-sample-job-preferred.yaml", 40, BLOCK, 2)):
            [doc] = _adapted(_example(sample), namespace, cq)
            _sleeps(doc["spec"]["template"], "1h")  # its container: pause, until deleted
            [created] = _create(dev_cluster, [doc])
            job = created["metadata"]["name"]
            pods = wait_until(f"the {count} pods of {job} running",
                              lambda j=job, c=count: running(j, c), 120.0)
            assert len(domains(pods, level)) == spans, (sample, sorted(domains(pods, level)))
    finally:
        dev_cluster.kubectl("delete", "jobs", "--all", "-n", namespace, "--wait=false", check=False)
        dev_cluster.kubectl("delete", "clusterqueues.kueue.x-k8s.io", cq, "--wait=false", check=False)
