"""AppWrappers queued by pykueue and run by the real AppWrapper controller.

The dev cluster runs the AppWrapper controller (``devcluster.operators``) next to the operators
of what it wraps. pykueue queues and admits the AppWrapper; once admitted, the AppWrapper
controller creates the wrapped object with the admission's node selector in its pod templates,
that object's own controller (Kubernetes' Job controller, the training operator, LWS) makes the
pods, and kwok runs them. The wrapped objects get no Workload of their own.

The AppWrappers are the samples as their projects publish them, created with ``kubectl``:
``kueue-examples/appwrapper/*.yaml`` are Kueue v0.19.2's ``site/static/examples/appwrapper/``
(a PyTorchJob, a LeaderWorkerSet), ``appwrapper-samples/wrapped-job.yaml`` is the AppWrapper
v1.2.2 module's ``samples/wrapped-job.yaml`` (a batch Job; Kueue's examples have none). Where a
test runs two of one sample, they differ in the name of the AppWrapper and of the object it
wraps, their queue and the run time kwok gives their pods; nothing else is changed.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import (
    NODE_LABELS,
    OperatorKind,
    check_a_higher_priority_one_preempts,
    check_the_second_waits_until_the_first_is_done,
    cq_cpu_usage,
    kind_queues,
)

pytestmark = pytest.mark.e2e

MANIFESTS = Path(__file__).parent / "manifests"
WRAPPED_JOB = MANIFESTS / "appwrapper-samples" / "wrapped-job.yaml"
PYTORCH = MANIFESTS / "kueue-examples" / "appwrapper" / "pytorch-sample.yaml"
LWS = MANIFESTS / "kueue-examples" / "appwrapper" / "leaderworkerset-sample.yaml"
RESOURCE = "appwrappers.workload.codeflare.dev"
COMPLETE_AFTER = "pod-complete.stage.kwok.x-k8s.io/delay"
# The label the AppWrapper controller puts on everything it creates, pods included.
APPWRAPPER_LABEL = "workload.codeflare.dev/appwrapper"


class AppWrapperKind(OperatorKind):
    def is_done(self, obj: dict[str, Any]) -> bool:
        return (obj.get("status") or {}).get("phase") == self.done


def _appwrapper_kind(pod_count: int) -> AppWrapperKind:
    """AppWrappers whose wrapped object runs ``pod_count`` pods (found by the AppWrapper's label)."""
    return AppWrapperKind(RESOURCE, "AppWrapper", "Succeeded", lambda aw: aw["spec"].get("suspend") is True,
                          APPWRAPPER_LABEL, pod_count=pod_count)


WRAPPING_A_JOB = _appwrapper_kind(1)
WRAPPING_A_PYTORCHJOB = _appwrapper_kind(2)  # master and worker
WRAPPING_AN_LWS = _appwrapper_kind(6)  # two groups of a leader and two workers


def _load(path: Path) -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return copy.deepcopy(doc)


def _adapted(path: Path, name: str, runtime: str, priority_class: str | None) -> dict[str, Any]:
    aw = _load(path)
    aw["metadata"]["name"] = name
    aw["metadata"]["labels"][keys.QUEUE_NAME] = "lq"
    if priority_class:
        aw["metadata"]["labels"][keys.PRIORITY_CLASS] = priority_class
    [component] = aw["spec"]["components"]
    component["template"]["metadata"]["name"] = name
    return aw


def _complete_after(template: dict[str, Any], runtime: str) -> None:
    template.setdefault("metadata", {}).setdefault("annotations", {})[COMPLETE_AFTER] = runtime


def wrapped_job(name: str, runtime: str, priority_class: str | None = None) -> dict[str, Any]:
    aw = _adapted(WRAPPED_JOB, name, runtime, priority_class)
    _complete_after(aw["spec"]["components"][0]["template"]["spec"]["template"], runtime)
    return aw


def wrapped_pytorchjob(name: str, runtime: str, priority_class: str | None = None) -> dict[str, Any]:
    aw = _adapted(PYTORCH, name, runtime, priority_class)
    for replica in aw["spec"]["components"][0]["template"]["spec"]["pytorchReplicaSpecs"].values():
        _complete_after(replica["template"], runtime)
    return aw


def _workload_owners(dev_cluster: DevCluster, namespace: str) -> set[str]:
    return {r["kind"] for wl in dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]
            for r in wl["metadata"].get("ownerReferences") or ()}


def test_a_wrapped_job_runs_on_the_flavors_nodes_and_the_next_waits_suspended(
        dev_cluster: DevCluster, namespace: str) -> None:
    with kind_queues(dev_cluster, namespace, WRAPPING_A_JOB, "1") as cq:
        check_the_second_waits_until_the_first_is_done(
            dev_cluster, namespace, cq, WRAPPING_A_JOB, wrapped_job, [("first-0", 1)])
        # The Jobs the AppWrapper controller made ran under their AppWrappers' Workloads only.
        assert _workload_owners(dev_cluster, namespace) == {"AppWrapper"}
        jobs = dev_cluster.get_json("jobs", "-n", namespace)["items"]
        assert sorted(j["metadata"]["ownerReferences"][0]["name"] for j in jobs) == ["first", "second"]


def test_a_higher_priority_wrapped_pytorchjob_preempts_a_running_one_and_both_succeed(
        dev_cluster: DevCluster, namespace: str) -> None:
    with kind_queues(dev_cluster, namespace, WRAPPING_A_PYTORCHJOB, "3") as cq:
        check_a_higher_priority_one_preempts(dev_cluster, namespace, cq, WRAPPING_A_PYTORCHJOB,
                                             wrapped_pytorchjob)
        assert _workload_owners(dev_cluster, namespace) == {"AppWrapper"}


def test_a_wrapped_leaderworkerset_runs_its_groups_and_goes_away_with_its_appwrapper(
        dev_cluster: DevCluster, namespace: str) -> None:
    with kind_queues(dev_cluster, namespace, WRAPPING_AN_LWS, "2") as cq:
        _check_the_lws_sample(dev_cluster, namespace, cq)


def _check_the_lws_sample(dev_cluster: DevCluster, namespace: str, cq: str) -> None:
    # The sample's queue.
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
                       "metadata": {"name": "user-queue", "namespace": namespace},
                       "spec": {"clusterQueue": cq}})
    dev_cluster.kubectl("create", "-n", namespace, "-f", str(LWS))
    name = "sample-appwrapper-lws"
    wait_until("the LeaderWorkerSet's pods running",
               lambda: WRAPPING_AN_LWS.running(dev_cluster, namespace, name), 90.0)
    [wl] = [w for w in dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]]
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "AppWrapper"
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [(f"{name}-0", 2), (f"{name}-1", 3)]
    for pod in WRAPPING_AN_LWS.pods(dev_cluster, namespace, name):
        assert NODE_LABELS.items() <= (pod["spec"].get("nodeSelector") or {}).items()
    assert cq_cpu_usage(dev_cluster, cq) == "800m"  # what the AppWrapper declares: 2 x 100m + 3 x 200m
    lws = dev_cluster.get_json("leaderworkersets.leaderworkerset.x-k8s.io", "-n", namespace)["items"]
    assert [o["metadata"]["ownerReferences"][0]["name"] for o in lws] == [name]
    dev_cluster.kubectl("delete", RESOURCE, name, "-n", namespace, "--wait=false")

    def gone() -> bool:
        kinds = (RESOURCE, "leaderworkersets.leaderworkerset.x-k8s.io", "workloads.kueue.x-k8s.io")
        left = [dev_cluster.get_json(kind, "-n", namespace)["items"] for kind in kinds]
        return not any(left) and not WRAPPING_AN_LWS.pods(dev_cluster, namespace, name)

    wait_until("the AppWrapper, its LeaderWorkerSet, their pods and the Workload gone", gone, 90.0)
    wait_until("no quota used", lambda: cq_cpu_usage(dev_cluster, cq) == "0", 30.0)
