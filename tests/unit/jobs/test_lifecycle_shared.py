"""What every lifecycle shares: admission -> podset infos, template merging, the registry."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.builtin import BUILTIN
from pykueue.manager.jobs.lifecycle import (
    AdoptsPods,
    GroupedObjects,
    HoldsWorkloads,
    JobLifecycle,
    PodSetInfo,
    StartConflict,
    WorkloadOwner,
    managed_top_level,
    merge_into_template,
    podset_infos,
    restored_template,
)
from pykueue.manager.jobs.registry import enabled_registry

from .helpers import FLAVORS, admitted

WORKLOAD: dict[str, Any] = {"spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 3}]}}


def test_podset_infos_carry_flavor_labels_tolerations_and_queue_labels() -> None:
    [info] = podset_infos(admitted(WORKLOAD, ["main"]), FLAVORS)
    assert info.name == "main" and info.count == 3
    assert dict(info.node_selector) == {"instance-type": "on-demand"}
    assert info.tolerations == ({"key": "spot", "operator": "Exists"},)
    assert dict(info.labels) == {
        keys.PODSET: "main",
        keys.LOCAL_QUEUE_NAME: "lq",
        keys.CLUSTER_QUEUE_NAME: "cq",
    }


def test_cluster_queue_label_only_for_a_valid_dns_label() -> None:
    [info] = podset_infos(admitted(WORKLOAD, ["main"], cq="Not.A.Label"), FLAVORS)
    assert keys.CLUSTER_QUEUE_NAME not in info.labels


def test_admission_check_podset_updates_are_merged_and_conflicts_detected() -> None:
    wl = admitted(WORKLOAD, ["main"])
    wl["status"]["admissionChecks"] = [
        {
            "name": "prov",
            "podSetUpdates": [{"name": "main", "annotations": {"a": "1"}, "nodeSelector": {"zone": "z1"}}],
        }
    ]
    [info] = podset_infos(wl, FLAVORS)
    assert dict(info.annotations) == {"a": "1"}
    assert dict(info.node_selector) == {"instance-type": "on-demand", "zone": "z1"}
    wl["status"]["admissionChecks"][0]["podSetUpdates"][0]["nodeSelector"] = {"instance-type": "spot"}
    with pytest.raises(StartConflict, match="instance-type"):
        podset_infos(wl, FLAVORS)


def test_merge_keeps_equal_values_and_rejects_a_different_one() -> None:
    template = {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"nodeSelector": {"instance-type": "on-demand"}},
    }
    info = PodSetInfo(
        "main",
        1,
        labels={keys.PODSET: "main"},
        node_selector={"instance-type": "on-demand"},
        tolerations=({"key": "t"},),
    )
    merged = merge_into_template(template, info)
    assert merged["metadata"]["labels"] == {"app": "x", keys.PODSET: "main"}
    assert merged["spec"]["tolerations"] == [{"key": "t"}]
    assert template["metadata"]["labels"] == {"app": "x"}, "the input is not mutated"
    with pytest.raises(StartConflict):
        merge_into_template(template, PodSetInfo("main", 1, node_selector={"instance-type": "spot"}))


def test_restored_template_is_none_when_already_original() -> None:
    original = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": []}}
    started = {
        "metadata": {"labels": {"app": "x", keys.PODSET: "main"}},
        "spec": {"containers": [], "nodeSelector": {"a": "b"}},
    }
    assert restored_template(started, original) == original
    assert restored_template(original, original) is None


@pytest.mark.parametrize(
    ("queue", "mjwqn", "ns_name", "managed"),
    [
        ("lq", False, "team", True),
        ("lq", False, "kube-system", False),  # AlwaysRespected: the selector wins over a queue name
        ("", False, "team", False),
        ("", True, "team", True),
        ("", True, "kueue-system", False),
    ],
)
def test_managed_top_level_follows_the_decision_table(
    queue: str, mjwqn: bool, ns_name: str, managed: bool
) -> None:
    policy = AdmissionPolicy.from_config({"manageJobsWithoutQueueName": mjwqn})
    job = {"metadata": {"name": "j", "labels": {keys.QUEUE_NAME: queue} if queue else {}}}
    assert managed_top_level(job, policy, {"kubernetes.io/metadata.name": ns_name}) is managed


def test_every_builtin_satisfies_its_protocols() -> None:
    kinds = {k.lifecycle.integration.kind: k.lifecycle for k in BUILTIN}
    assert set(kinds) >= {"Job", "JobSet", "PyTorchJob", "MPIJob", "LeaderWorkerSet", "Pod"}
    assert all(isinstance(lc, WorkloadOwner) for lc in kinds.values())
    # Every kind but the owners that run through their pods is a job of its own.
    through_pods = ("LeaderWorkerSet", "StatefulSet", "Deployment")
    assert all(isinstance(lc, JobLifecycle) for kind, lc in kinds.items() if kind not in through_pods)
    for kind in through_pods:
        assert not isinstance(kinds[kind], JobLifecycle), f"a {kind} runs through its pods"
    assert isinstance(kinds["LeaderWorkerSet"], AdoptsPods)
    assert isinstance(kinds["StatefulSet"], AdoptsPods) and isinstance(kinds["StatefulSet"], HoldsWorkloads)
    assert isinstance(kinds["Pod"], GroupedObjects) and isinstance(kinds["Pod"], JobLifecycle)


def test_registry_holds_only_enabled_integrations_and_lws_or_pod_brings_pods() -> None:
    assert enabled_registry(AdmissionPolicy.from_config({})).kinds() == ["Job"]
    registry = enabled_registry(
        AdmissionPolicy.from_config(
            {
                "integrations": {
                    "frameworks": [
                        "batch/job",
                        "kubeflow.org/pytorchjob",
                        "leaderworkerset.x-k8s.io/leaderworkerset",
                    ]
                }
            }
        )
    )
    assert registry.kinds() == ["Job", "PyTorchJob", "LeaderWorkerSet", "Pod"]
    pods_only = AdmissionPolicy.from_config({"integrations": {"frameworks": ["pod"]}})
    assert enabled_registry(pods_only).kinds() == ["Pod"]
