"""What-if prediction time on a large cluster snapshot: ``simulate --cluster`` without the reads.

A synthetic listing stands for what the API would return: 1,000 ClusterQueues (10 cohorts of
100, nominal 20 CPU, borrowingLimit 100, Kueue's preemption settings), a Namespace and a
LocalQueue per queue, and 15,000 Workloads as the API stores them: 10 per queue admitted (2 CPU
each, with their ``status.admission``: every queue uses its nominal quota), 5 pending (1, 5 or
20 CPU) with their ``WaitingForQuota`` condition. That is a state the manager leaves: nothing
more fits and nothing may be preempted (equal priorities, nobody borrows). The measured time is
what ``simulate --cluster`` spends after the lists are read: building the snapshot, turning
a submitted Job into its Workload (webhook defaulting included), running the core until idle
and rendering the JSON view. The median of ``--repeat`` runs is reported as ``median_s``
(target: 2 s); ``explain_median_s`` is the same for ``explain`` of one pending workload.

``--quick`` uses 100 queues and 1,500 Workloads.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import sys
import time
from typing import Any

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.scenario.cluster_snapshot import ClusterListing
from pykueue.manager.scenario.explain import explain
from pykueue.manager.scenario.what_if import predict

NOW = 1_800_000_000.0
CREATED = "2027-01-15T07:00:00Z"
ADMITTED_PER_QUEUE = 10
PENDING_PER_QUEUE = 5
TARGET_S = 2.0


def _template(cpu: int) -> dict[str, Any]:
    return {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": str(cpu)}}}]}}


def _workload(ns: str, name: str, cpu: int, priority: int, admitted_in: str | None,
              second: int) -> dict[str, Any]:
    wl: dict[str, Any] = {
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}",
                     "creationTimestamp": f"2027-01-15T07:{second // 60:02d}:{second % 60:02d}Z"},
        "spec": {"queueName": "lq", "priority": priority,
                 "podSets": [{"name": "main", "count": 1, "template": _template(cpu)}]}}
    if admitted_in:
        cond = {"status": "True", "lastTransitionTime": CREATED}
        wl["status"] = {
            "conditions": [{**cond, "type": "QuotaReserved", "reason": "QuotaReserved"},
                           {**cond, "type": "Admitted", "reason": "Admitted"}],
            "admission": {"clusterQueue": admitted_in, "podSetAssignments": [
                {"name": "main", "count": 1, "flavors": {"cpu": "rf"}, "resourceUsage": {"cpu": str(cpu)}}]}}
    else:
        wl["status"] = {"conditions": [{"type": "QuotaReserved", "status": "False",
                                        "reason": "WaitingForQuota", "lastTransitionTime": CREATED}]}
    return wl


def listing(cohorts: int, queues: int) -> ClusterListing:
    items: dict[str, list[dict[str, Any]]] = {
        "Namespace": [], "ResourceFlavor": [{"metadata": {"name": "rf"}}], "ClusterQueue": [],
        "LocalQueue": [], "Workload": []}
    for c in range(cohorts):
        for q in range(queues):
            name = f"cq-{c}-{q}"
            labels = {"kubernetes.io/metadata.name": name}
            items["Namespace"].append({"metadata": {"name": name, "labels": labels}})
            items["ClusterQueue"].append({"metadata": {"name": name}, "spec": {
                "cohortName": f"cohort-{c}", "namespaceSelector": {},
                "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "rf", "resources": [
                    {"name": "cpu", "nominalQuota": "20", "borrowingLimit": "100"}]}]}]}})
            items["LocalQueue"].append({"metadata": {"name": "lq", "namespace": name},
                                        "spec": {"clusterQueue": name}})
            for i in range(ADMITTED_PER_QUEUE):
                items["Workload"].append(_workload(name, f"run-{i}", 2, 50, name, i))
            for i in range(PENDING_PER_QUEUE):
                items["Workload"].append(_workload(name, f"wait-{i}", (1, 5, 20)[i % 3], 50, None, 100 + i))
    return ClusterListing(items, {}, now=NOW)


def submission(ns: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "what-if", "namespace": ns, "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {"parallelism": 1, "completions": 1, "template": _template(1)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    cohorts, queues = (2, 50) if args.quick else (10, 100)
    data = listing(cohorts, queues)
    policy = AdmissionPolicy.from_config({})
    job = submission("cq-0-0")
    predict_s: list[float] = []
    explain_s: list[float] = []
    status = ""
    for _ in range(args.repeat):
        started = time.perf_counter()
        view = predict(data, [job], policy)
        json.dumps(view)
        predict_s.append(time.perf_counter() - started)
        key = view["submitted"][0]["workloads"][0]
        status = f"{view['workloads'][key]['status']} {view['workloads'][key].get('tier', '')}".strip()
        started = time.perf_counter()
        explain(data, ["cq-0-0/wait-2"])
        explain_s.append(time.perf_counter() - started)
        print(f"predict {predict_s[-1]:.3f} s ({status}), explain {explain_s[-1]:.3f} s", file=sys.stderr)
    median = statistics.median(predict_s)
    metrics = {"median_s": round(median, 3), "min_s": round(min(predict_s), 3),
               "explain_median_s": round(statistics.median(explain_s), 3),
               "workloads": len(data.items["Workload"]), "cluster_queues": len(data.items["ClusterQueue"]),
               "target_s": TARGET_S, "target_ratio": round(median / TARGET_S, 3), "prediction": status,
               "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    env = {"python": platform.python_version(), "machine": platform.machine(), "repeat": args.repeat,
           "quick": args.quick}
    print(json.dumps({"benchmark": "what_if", "metrics": metrics, "env": env}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
