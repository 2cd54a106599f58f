"""Prediction honesty: what ``simulate --cluster`` says a job gets, against what the manager does.

Two ClusterQueues in a cohort with random quotas over two flavors, WorkloadPriorityClasses
and preemption, a random set of jobs already running; then 20 random jobs are submitted one at
a time. Before each (once no eviction is in flight), the what-if predicts its outcome
(admitted with which flavor, or pending with which tier); the job is then created and the
manager's verdict read from its Workload.
A workload the manager parks unevaluated behind an equivalent one (equivalence hashing: Kueue
writes it no reason) is compared with that equivalent's reason. At least 95 % must agree, and
each disagreement is printed with both sides and its likely cause (``-s`` shows them).
The seed is printed too; ``WHAT_IF_SEED`` replays a run.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .test_what_if import job, pykueue

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
SUBMISSIONS = 20
AGREEMENT = 0.95
# Reasons the manager shows on the way to its verdict, not verdicts of their own.
TRANSIENT = {"PendingEvaluation", "WaitingForPreemptedWorkloads"}
UNEVALUATED = ("Pending", "")
VERDICT_WINDOW_S = 6.0
VERDICT_DEADLINE_S = 60.0


def _setup(dev_cluster: DevCluster, namespace: str, rng: random.Random) -> dict[str, str]:
    names = {"rf1": f"rf1-{namespace}", "rf2": f"rf2-{namespace}", "a": f"cq-a-{namespace}",
             "b": f"cq-b-{namespace}", "hi": f"hi-{namespace}", "lo": f"lo-{namespace}"}
    for rf in ("rf1", "rf2"):
        dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ResourceFlavor",
                           "metadata": {"name": names[rf]}})
    for wpc, value in (("hi", 100), ("lo", 10)):
        dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "WorkloadPriorityClass",
                           "metadata": {"name": names[wpc]}, "value": value})
    for cq, flavors in (("a", ("rf1", "rf2")), ("b", ("rf1",))):
        quotas = [{"name": names[f], "resources": [{"name": "cpu", "nominalQuota": str(rng.randint(0, 3))}]}
                  for f in flavors]
        dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ClusterQueue",
                           "metadata": {"name": names[cq]},
                           "spec": {"namespaceSelector": {}, "cohortName": f"co-{namespace}",
                                    "preemption": {"withinClusterQueue": "LowerPriority",
                                                   "reclaimWithinCohort": "Any"},
                                    "resourceGroups": [{"coveredResources": ["cpu"], "flavors": quotas}]}})
        dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
                           "metadata": {"name": f"lq-{cq}", "namespace": namespace},
                           "spec": {"clusterQueue": names[cq]}})
    return names


def _random_job(namespace: str, name: str, names: dict[str, str], rng: random.Random) -> dict[str, Any]:
    manifest = job(namespace, name, rng.choice(("lq-a", "lq-b")), str(rng.choice((1, 1, 1, 2, 2, 3, 5))),
                   delay=rng.choices(("600s", "5s"), weights=(5, 1))[0])
    manifest["metadata"]["labels"][keys.PRIORITY_CLASS] = names[rng.choice(("hi", "lo", "lo"))]
    return manifest


def _workload_of(dev_cluster: DevCluster, namespace: str, job_name: str) -> dict[str, Any] | None:
    for wl in dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]:
        refs = wl["metadata"].get("ownerReferences") or ()
        if any(r["kind"] == "Job" and r["name"] == job_name for r in refs):
            return dict(wl)
    return None


def _verdict(wl: dict[str, Any] | None) -> tuple[str, str] | None:
    """("Admitted", flavor) or ("Pending", tier) once the manager decided; None before."""
    if wl is None:
        return None
    conds = {c["type"]: c for c in (wl.get("status") or {}).get("conditions") or ()}
    reserved = conds.get("QuotaReserved")
    if reserved is None:
        return None
    if reserved["status"] == "True":
        psa = (wl["status"].get("admission") or {}).get("podSetAssignments") or [{}]
        return "Admitted", ",".join(sorted(set((psa[0].get("flavors") or {}).values())))
    if reserved.get("reason") in TRANSIENT:
        return None
    return "Pending", str(reserved.get("reason"))


def _observe(dev_cluster: DevCluster, namespace: str, job_name: str) -> tuple[str, str]:
    """The manager's verdict; UNEVALUATED when its Workload stays without any condition for a
    while (a reason on the way, such as waiting for preempted workloads, is waited out)."""
    started = time.monotonic()
    while True:
        wl = _workload_of(dev_cluster, namespace, job_name)
        verdict = _verdict(wl)
        if verdict is not None:
            return verdict
        waited = time.monotonic() - started
        conditions = ((wl or {}).get("status") or {}).get("conditions")
        if wl is not None and not conditions and waited > VERDICT_WINDOW_S:
            return UNEVALUATED
        assert waited < VERDICT_DEADLINE_S, f"no verdict on job {job_name} within {VERDICT_DEADLINE_S:.0f}s"
        time.sleep(0.25)  # polling interval, with the deadlines above


def _evicting(dev_cluster: DevCluster, namespace: str) -> list[str]:
    """Workloads being evicted (Evicted while still holding quota): the state is in motion."""
    return sorted(wl["metadata"]["name"] for wl in dev_cluster.get_json(
        "workloads.kueue.x-k8s.io", "-n", namespace)["items"]
        if {(c["type"], c["status"]) for c in (wl.get("status") or {}).get("conditions") or ()}
        >= {("Evicted", "True"), ("QuotaReserved", "True")})


def _predicted(view: dict[str, Any]) -> tuple[tuple[str, str], dict[str, Any]]:
    key = view["submitted"][0]["workloads"][0]
    w = view["workloads"][key]
    if w["status"] == "Pending":
        return ("Pending", w["tier"]), w
    return ("Admitted", ",".join(sorted(set(w["podSets"]["main"]["flavors"].values())))), w


def test_predictions_agree_with_the_manager(dev_cluster: DevCluster, namespace: str, tmp_path: Path) -> None:
    seed = int(os.environ.get("WHAT_IF_SEED") or time.time())
    print(f"what-if honesty seed {seed}")
    rng = random.Random(seed)
    names = _setup(dev_cluster, namespace, rng)
    shapes: dict[str, tuple[str, str, str]] = {}  # job -> (queue, cpu, priority class)
    for i in range(rng.randint(0, 3)):  # a random state to start from
        pre = _random_job(namespace, f"pre-{i}", names, rng)
        dev_cluster.apply(pre)
        shapes[f"pre-{i}"] = _shape(pre)
    # Each starting job decided, or parked unevaluated behind an equivalent one that did not
    # fit (two starting jobs of one shape that can never fit: the second gets no condition).
    for name in shapes:
        _observe(dev_cluster, namespace, name)

    agreed, disagreements, notes = 0, [], []
    for i in range(SUBMISSIONS):
        manifest = _random_job(namespace, f"j-{i}", names, rng)
        path = tmp_path / f"j-{i}.yaml"
        path.write_text(yaml.safe_dump(manifest))
        # Predict at rest: an eviction in flight resolves on the pods' schedule, not the core's.
        wait_until("no eviction in flight", lambda: not _evicting(dev_cluster, namespace), 60.0)
        done_before = _finished_jobs(dev_cluster, namespace)
        evicting = _evicting(dev_cluster, namespace)
        result = pykueue("simulate", "--cluster", "--json", "--kubeconfig", str(dev_cluster.kubeconfig),
                         str(path))
        assert result.returncode == 0, result.stderr
        predicted, entry = _predicted(json.loads(result.stdout))
        dev_cluster.apply(manifest)
        observed = _observe(dev_cluster, namespace, f"j-{i}")
        print(f"j-{i}: predicted {predicted}, manager {observed}")
        if observed == predicted:
            agreed += 1
            shapes[f"j-{i}"] = _shape(manifest)
            continue
        if observed == UNEVALUATED and predicted[0] == "Pending":
            # Kueue writes no reason on a new workload parked behind an equivalent one that did not
            # fit (equivalence hashing): the equivalent's reason is the manager's verdict for it.
            shape = _shape(manifest)
            verdicts = {_verdict(_workload_of(dev_cluster, namespace, other)) for other, s in shapes.items()
                        if s == shape}
            twins = {v for v in verdicts if v is not None and v[0] == "Pending" and v != UNEVALUATED}
            if predicted in twins or not twins:
                agreed += 1
                notes.append(f"j-{i}: predicted {predicted}; the manager parked it unevaluated behind "
                             f"an equivalent workload ({', '.join(map(str, twins)) or 'none seen'})")
                shapes[f"j-{i}"] = shape
                continue
            observed = next(iter(twins))
        shapes[f"j-{i}"] = _shape(manifest)
        finished = sorted(_finished_jobs(dev_cluster, namespace) - done_before)
        if finished:
            why = f"job(s) {', '.join(finished)} finished between prediction and verdict (quota freed)"
        elif evicting:
            why = (f"Workload(s) {', '.join(evicting)} were being evicted when it was predicted (the "
                   "what-if releases their quota at once, the manager once their pods are gone)")
        else:
            why = "nothing changed in between: the prediction is wrong"
        spec = manifest["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
        labels = manifest["metadata"]["labels"]
        disagreements.append(f"j-{i} (queue {labels[keys.QUEUE_NAME]}, cpu {spec['cpu']}, "
                             f"{labels[keys.PRIORITY_CLASS]}): predicted {predicted} "
                             f"({entry.get('reason') or entry.get('preempts')}), manager {observed}; {why}")
    print(f"what-if honesty: {agreed}/{SUBMISSIONS} agree")
    for line in notes:
        print("  note:", line)
    for line in disagreements:
        print("  disagreement:", line)
    assert agreed / SUBMISSIONS >= AGREEMENT, "\n".join(disagreements)


def _shape(manifest: dict[str, Any]) -> tuple[str, str, str]:
    labels = manifest["metadata"]["labels"]
    cpu = manifest["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    return labels[keys.QUEUE_NAME], str(cpu), labels[keys.PRIORITY_CLASS]


def _finished_jobs(dev_cluster: DevCluster, namespace: str) -> set[str]:
    return {j["metadata"]["name"] for j in dev_cluster.get_json("jobs", "-n", namespace)["items"]
            if any(c["type"] == "Complete" and c["status"] == "True"
                   for c in (j.get("status") or {}).get("conditions") or ())}
