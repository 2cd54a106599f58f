"""``pykueue dev sample``: a first look at queueing on the running dev cluster.

It applies a small quota setup (a ResourceFlavor, a ClusterQueue with 4 CPUs, a LocalQueue
in namespace ``pykueue-sample``) and three Jobs of 2 CPUs each, then follows them: two
fit and are admitted, the third waits in the queue and starts when one of the first two
completes. Every change of a Job's phase is printed as it is observed, so the user sees
admission, queueing and completion happen, then the kubectl commands to look further.

The Jobs are created suspended with the queue-name label, exactly as a user's would be
after the admission webhook; creating them suspended also makes the sample work when no
webhook is registered. A second run deletes the previous sample Jobs first, so it always
shows the same story. Exit status 0 means every Job completed within the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykueue.api import keys
from pykueue.kube.blocking import BlockingClient
from pykueue.kube.client import ApiError

NAMESPACE = "pykueue-sample"
QUEUE = "sample-queue"
CLUSTER_QUEUE = "sample-cluster-queue"
FLAVOR = "sample-flavor"
JOBS = ("sample-job-a", "sample-job-b", "sample-job-c")
JOB_CPU = "2"
QUOTA_CPU = "4"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
JOBS_PATH = f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs"

Say = Callable[[str], None]


def quota_objects() -> list[tuple[str, dict[str, Any]]]:
    """(API path, object) of the quota setup, in dependency order."""
    return [
        (f"/api/v1/namespaces/{NAMESPACE}",
         {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        (f"{KUEUE}/resourceflavors/{FLAVOR}",
         {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR},
          "spec": {"nodeLabels": {"instance-type": "on-demand"}}}),
        (f"{KUEUE}/clusterqueues/{CLUSTER_QUEUE}",
         {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": CLUSTER_QUEUE},
          "spec": {"namespaceSelector": {}, "resourceGroups": [{
              "coveredResources": ["cpu", "memory"],
              "flavors": [{"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": QUOTA_CPU},
                                                         {"name": "memory", "nominalQuota": "16Gi"}]}]}]}}),
        (f"{KUEUE}/namespaces/{NAMESPACE}/localqueues/{QUEUE}",
         {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
          "metadata": {"name": QUEUE, "namespace": NAMESPACE}, "spec": {"clusterQueue": CLUSTER_QUEUE}}),
    ]


def job(name: str, runtime_s: int) -> dict[str, Any]:
    """A suspended Job of one pod asking for 2 CPUs; kwok completes the pod after ``runtime_s``."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {keys.QUEUE_NAME: QUEUE}},
        "spec": {"suspend": True, "parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {
            "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": f"{runtime_s}s"}},
            "spec": {"restartPolicy": "Never", "containers": [{
                "name": "main", "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": JOB_CPU, "memory": "1Gi"}}}]}}},
    }


def phase(obj: dict[str, Any] | None) -> str:
    """A Job's phase as the sample reports it."""
    if obj is None:
        return "missing"
    status = obj.get("status") or {}
    for cond in status.get("conditions") or ():
        if cond.get("status") == "True" and cond.get("type") in ("Complete", "Failed"):
            return "completed" if cond["type"] == "Complete" else "failed"
    if (obj.get("spec") or {}).get("suspend"):
        return "queued (suspended)"
    if status.get("active"):
        return "running"
    if status.get("succeeded") or status.get("failed"):
        return "finishing"  # its pods are done; the Job controller has not marked it yet
    return "admitted"


@dataclass
class Outcome:
    completed: bool
    order: list[str]  # job names in the order they were first seen running or admitted


def _delete_previous(client: BlockingClient, say: Say, deadline_s: float) -> None:
    stale = [name for name in JOBS if client.get_or_none(f"{JOBS_PATH}/{name}") is not None]
    for name in stale:
        client.request("DELETE", f"{JOBS_PATH}/{name}",
                       {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"})
    if stale:
        say(f"removing the previous sample run ({', '.join(stale)}) ...")
    end = time.monotonic() + deadline_s
    while any(client.get_or_none(f"{JOBS_PATH}/{name}") is not None for name in stale):
        if time.monotonic() > end:
            raise TimeoutError("previous sample Jobs were not deleted in time")
        time.sleep(0.5)


def run(client: BlockingClient, say: Say = print, deadline_s: float = 120.0, runtime_s: int = 5) -> Outcome:
    """Apply the sample, follow its Jobs until they all complete (or the deadline passes)."""
    for path, obj in quota_objects():
        client.apply(path, obj)
    say(f"quota: ClusterQueue {CLUSTER_QUEUE} with {QUOTA_CPU} CPUs, LocalQueue {NAMESPACE}/{QUEUE}")
    _delete_previous(client, say, deadline_s)
    for name in JOBS:
        try:
            client.request("POST", JOBS_PATH, job(name, runtime_s))
        except ApiError as exc:
            if exc.status != 409:
                raise
    say(f"submitted {len(JOBS)} Jobs of {JOB_CPU} CPUs each: two fit in the quota, one has to wait")
    started = time.monotonic()
    seen: dict[str, str] = {}
    order: list[str] = []
    while True:
        for name in JOBS:
            now = phase(client.get_or_none(f"{JOBS_PATH}/{name}"))
            if seen.get(name) != now:
                seen[name] = now
                say(f"{time.monotonic() - started:6.1f}s  {name}: {now}")
                if now in ("admitted", "running", "completed") and name not in order:
                    order.append(name)
        if all(p == "completed" for p in seen.values()) and len(seen) == len(JOBS):
            return Outcome(True, order)
        if any(p == "failed" for p in seen.values()) or time.monotonic() - started > deadline_s:
            return Outcome(False, order)
        time.sleep(0.5)


def next_steps(kubeconfig: str) -> list[str]:
    return [
        "all sample Jobs completed. Look around with kubectl:",
        f"  export KUBECONFIG={kubeconfig}",
        f"  kubectl get clusterqueue {CLUSTER_QUEUE}",
        f"  kubectl -n {NAMESPACE} get localqueues,workloads,jobs",
        f"  kubectl -n {NAMESPACE} describe workload   # conditions: QuotaReserved, Admitted, Finished",
    ]
