"""The pure parts of ``pykueue dev conformance``: scenario objects as API requests, the
Configuration Kueue starts with, what the harness refuses to run, and the comparison."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pykueue.devcluster.conformance import compare, objects
from pykueue.devcluster.conformance.driver import unsupported
from pykueue.devcluster.conformance.harness import with_uids
from pykueue.devcluster.conformance.idle import unsettled
from pykueue.devcluster.conformance.kueue_config import Listeners, configuration, scenario_sections
from pykueue.manager.scenario.loader import Scenario

SERVED = {"Workload": "v1beta2", "ClusterQueue": "v1beta2", "LocalQueue": "v1beta2"}
NOW = "2026-11-25T08:00:00Z"


def _workload(status: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    wl: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns", "uid": "u1", "resourceVersion": "9", **meta},
        "spec": {
            "queueName": "q",
            "podSets": [
                {
                    "name": "main",
                    "count": 3,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
                            ]
                        }
                    },
                }
            ],
        },
    }
    if status is not None:
        wl["status"] = status
    return wl


def _admitted(flavors: dict[str, str], **psa: Any) -> dict[str, Any]:
    return {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "flavors": flavors, **psa}],
        },
        "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}],
    }


def test_a_pre_admitted_workload_gets_the_usage_simulate_counts_and_dated_conditions() -> None:
    req = objects.request(_workload(_admitted({"cpu": "on-demand"})), SERVED, NOW)
    assert req.status is not None
    psa = req.status["admission"]["podSetAssignments"][0]
    # Kueue counts quota from resourceUsage only; only flavored resources hold quota.
    assert psa["resourceUsage"] == {"cpu": "1500m"}
    assert all(c["lastTransitionTime"] == NOW and c["reason"] for c in req.status["conditions"])
    # Server-owned metadata never goes into the create body, nor does the status.
    assert "uid" not in req.body["metadata"] and "resourceVersion" not in req.body["metadata"]
    assert "status" not in req.body


def test_usage_follows_the_assignment_count_and_a_given_usage_is_kept() -> None:
    partial = objects.request(_workload(_admitted({"cpu": "f", "memory": "f"}, count=2)), SERVED, NOW)
    assert partial.status is not None
    assert partial.status["admission"]["podSetAssignments"][0]["resourceUsage"] == {
        "cpu": "1",
        "memory": "2Gi",
    }
    given = objects.request(_workload(_admitted({"cpu": "f"}, resourceUsage={"cpu": "7"})), SERVED, NOW)
    assert given.status is not None
    assert given.status["admission"]["podSetAssignments"][0]["resourceUsage"] == {"cpu": "7"}


def test_nodes_are_ready_with_allocatable_and_unknown_kinds_are_unsupported() -> None:
    node = objects.request(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"capacity": {"cpu": "4"}},
        },
        SERVED,
        NOW,
    )
    assert node.status is not None and node.status["allocatable"] == {"cpu": "4"}
    assert [c["type"] for c in node.status["conditions"]] == ["Ready"]
    with pytest.raises(objects.Unsupported, match="PyTorchJob"):
        objects.request(
            {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "p"}}, SERVED, NOW
        )
    with pytest.raises(objects.Unsupported, match="generateName"):
        objects.request({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "p-"}}, SERVED, NOW)


def test_queued_objects_come_last_in_timestamp_order_others_in_file_order() -> None:
    docs = [
        {"kind": "Workload", "metadata": {"name": "late", "creationTimestamp": "2026-01-01T00:00:10Z"}},
        {"kind": "ClusterQueue", "metadata": {"name": "cq"}},
        {"kind": "Workload", "metadata": {"name": "early", "creationTimestamp": "2026-01-01T00:00:05Z"}},
        {"kind": "LocalQueue", "metadata": {"name": "lq"}},
    ]
    order = [(o["metadata"]["name"], queued) for o, queued in objects.creation_order(docs)]
    assert order == [("cq", False), ("lq", False), ("early", True), ("late", True)]


def test_configuration_owns_the_process_settings_and_reports_what_it_cannot_pass() -> None:
    listeners = Listeners(webhook_port=9443, health_port=8081, cert_dir=Path("certs"))
    document, left_out = configuration(
        {
            "fairSharing": {"enable": True, "preemptionStrategies": ["LessThanOrEqualToFinalShare"]},
            "waitForPodsReady": {"enable": False},
            "webhook": {"port": 1},
            "bogus": 1,
        },
        listeners,
    )
    assert document["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert document["fairSharing"] == {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]}
    # v1beta1's enable: false means off; v0.19.2 waits for pods ready when the section is
    # absent, so off takes its gate (the VisibilityOnDemand one is the harness's own).
    assert "waitForPodsReady" not in document
    assert document["featureGates"] == {"VisibilityOnDemand": False, "DisableWaitForPodsReady": True}
    gated, _ = scenario_sections({"featureGates": {"PrioritizePreemptorWorkloads": True},
                                  "waitForPodsReady": {"enable": False}})
    assert gated["featureGates"] == {"PrioritizePreemptorWorkloads": True, "DisableWaitForPodsReady": True}
    assert "featureGates" not in scenario_sections({"waitForPodsReady": {"timeout": "5m"}})[0]
    assert document["webhook"]["port"] == 9443
    assert sorted(left_out) == [
        "config.bogus (not a Kueue Configuration field)",
        "config.webhook (set by the harness)",
    ]
    assert scenario_sections({})[1] == []


def _scenario(
    objs: list[dict[str, Any]], steps: list[dict[str, Any]], config: dict[str, Any] | None = None
) -> Scenario:
    return Scenario(objects=objs, steps=steps, config=config or {})


def test_what_the_harness_cannot_express_is_reported_before_anything_runs() -> None:
    reasons = unsupported(
        _scenario(
            [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "p"}}],
            [{"advance": "10m"}, {"advance": "5s"}],
        ),
        SERVED,
        30.0,
    )
    assert any("PyTorchJob" in r for r in reasons)
    assert any(r.startswith("advance 10m") for r in reasons)
    assert not any(r.startswith("advance 5s") for r in reasons)
    assert unsupported(_scenario([_workload()], [{"advance": "5s"}]), SERVED, 30.0) == []


def _kueue_wl(
    name: str,
    conditions: dict[str, str],
    cq: str = "",
    flavors: dict[str, str] | None = None,
    evictions: tuple[tuple[str, int], ...] = (),
) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [{"type": t, "status": s} for t, s in conditions.items()]}
    if cq:
        status["admission"] = {
            "clusterQueue": cq,
            "podSetAssignments": [{"name": "main", "count": 1, "flavors": flavors or {}}],
        }
    if evictions:
        status["schedulingStats"] = {"evictions": [{"reason": r, "count": n} for r, n in evictions]}
    return {"metadata": {"namespace": "ns", "name": name}, "status": status}


def test_differences_name_each_field_and_agreement_is_empty() -> None:
    theirs = [
        _kueue_wl(
            "a", {"QuotaReserved": "True", "Admitted": "True"}, "cq", {"cpu": "spot"}, (("Preempted", 1),)
        ),
        _kueue_wl("b", {"QuotaReserved": "False"}),
    ]
    ours = {
        "ns/a": {
            "status": "Admitted",
            "clusterQueue": "cq",
            "podSets": {"main": {"count": 1, "flavors": {"cpu": "spot"}}},
            "evictions": ["Preempted"],
        },
        "ns/b": {"status": "Pending"},
    }
    assert compare.differences(compare.kueue_views(theirs, ours), ours) == []
    ours["ns/a"]["podSets"]["main"]["flavors"] = {"cpu": "on-demand"}
    ours["ns/a"]["evictions"] = []
    ours["ns/b"] = {"status": "Admitted", "clusterQueue": "cq"}
    assert compare.differences(compare.kueue_views(theirs, ours), ours) == [
        "ns/a: podSet main flavors: kueue={cpu:spot} pykueue={cpu:on-demand}",
        "ns/a: evictions: kueue=['Preempted'] pykueue=[]",
        "ns/b: status: kueue=Pending pykueue=Admitted",
    ]


def test_a_jobs_workload_is_matched_by_its_owner_whatever_its_name() -> None:
    theirs = [
        {
            "metadata": {
                "namespace": "ns",
                "name": "job-j-1a2b3",
                "ownerReferences": [
                    {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "controller": True}
                ],
            },
            "status": {"conditions": []},
        }
    ]
    ours = {"ns/job-j-ffff": {"status": "Pending", "owner": "batch/v1/Job ns/j"}}
    assert compare.differences(compare.kueue_views(theirs, ours), ours) == []
    assert compare.differences(compare.kueue_views(theirs, {}), {}) == [
        "ns/job-j-1a2b3: only Kueue has it (Pending)"
    ]


def test_a_bare_evicted_workload_loses_its_reservation_as_a_stopped_job_would() -> None:
    evicted = _kueue_wl(
        "v", {"QuotaReserved": "True", "Admitted": "True", "Evicted": "True"}, "cq", {"cpu": "f"}
    )
    status = objects.finished_eviction(evicted, NOW)
    assert status is not None and "admission" not in status
    by_type = {c["type"]: c for c in status["conditions"]}
    assert by_type["QuotaReserved"]["status"] == "False" and by_type["Admitted"]["status"] == "False"
    assert by_type["Evicted"]["status"] == "True"
    # A job's workload is left to Kueue's job controller; a running one needs nothing.
    owned = {
        **evicted,
        "metadata": {**evicted["metadata"], "ownerReferences": [{"kind": "Job", "name": "j"}]},
    }
    assert objects.finished_eviction(owned, NOW) is None
    running = _kueue_wl("r", {"QuotaReserved": "True", "Admitted": "True"}, "cq", {"cpu": "f"})
    assert objects.finished_eviction(running, NOW) is None


def test_the_queues_with_a_workload_waiting_for_quota_are_found_through_its_local_queue() -> None:
    lqs = [
        {"metadata": {"name": "lq", "namespace": "a"}, "spec": {"clusterQueue": "cq-a"}},
        {"metadata": {"name": "lq", "namespace": "b"}, "spec": {"clusterQueue": "cq-b"}},
        {"metadata": {"name": "held", "namespace": "a"}, "spec": {"clusterQueue": "cq-held"}},
    ]
    waiting = {"metadata": {"name": "w", "namespace": "b"}, "spec": {"queueName": "lq"}}
    admitted = {**_kueue_wl("x", {"QuotaReserved": "True"}, "cq-held", {"cpu": "f"}),
                "spec": {"queueName": "held"}}
    finished = {"metadata": {"name": "f", "namespace": "a"}, "spec": {"queueName": "lq"},
                "status": {"conditions": [{"type": "Finished", "status": "True"}]}}
    no_queue = {"metadata": {"name": "n", "namespace": "a"}, "spec": {"queueName": "missing"}}
    assert objects.waiting_cluster_queues([waiting, admitted, finished, no_queue], lqs) == {"cq-b"}


def test_fair_sharing_gets_the_strategies_v1beta2_requires() -> None:
    sections, _ = scenario_sections({"fairSharing": {"enable": True}})
    assert sections["fairSharing"] == {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    }


def test_simulate_sees_the_uids_the_api_server_gave() -> None:
    step_wl = {**_workload(), "metadata": {"name": "later", "namespace": "ns"}}
    scenario = _scenario(
        [_workload(), {"kind": "ClusterQueue", "metadata": {"name": "cq"}}],
        [{"apply": [step_wl]}, {"advance": "1s"}],
    )
    uids = {
        ("Workload", "ns", "w"): "uid-w",
        ("ClusterQueue", "", "cq"): "uid-cq",
        ("Workload", "ns", "later"): "uid-later",
    }
    stamped = with_uids(scenario, uids)
    assert [o["metadata"]["uid"] for o in stamped.objects] == ["uid-w", "uid-cq"]
    assert stamped.steps[0]["apply"][0]["metadata"]["uid"] == "uid-later"
    assert stamped.steps[1] == {"advance": "1s"}
    assert scenario.objects[0]["metadata"]["uid"] == "u1"  # the input is left alone


def test_a_workload_written_as_evicted_has_its_eviction_counted_as_kueue_counts_it() -> None:
    status = _admitted({"cpu": "f"})
    status["conditions"].append({"type": "Evicted", "status": "True", "reason": "Preempted"})
    req = objects.request(_workload(status), SERVED, NOW)
    assert req.status is not None
    assert req.status["schedulingStats"] == {
        "evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 1}]
    }
    plain = objects.request(_workload(_admitted({"cpu": "f"})), SERVED, NOW)
    assert plain.status is not None and "schedulingStats" not in plain.status


def test_containers_without_an_image_get_a_placeholder_the_api_accepts() -> None:
    pod = objects.request(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c"}, {"name": "d", "image": "mine"}]},
        },
        SERVED,
        NOW,
    )
    assert [c["image"] for c in pod.body["spec"]["containers"]] == [objects.PLACEHOLDER_IMAGE, "mine"]
    job = objects.request(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j"},
            "spec": {
                "template": {"spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "c"}]}}
            },
        },
        SERVED,
        NOW,
    )
    template = job.body["spec"]["template"]["spec"]
    assert (
        template["initContainers"][0]["image"]
        == template["containers"][0]["image"]
        == objects.PLACEHOLDER_IMAGE
    )


def test_a_provisioning_request_check_names_the_harness_config_and_pod_templates_get_images() -> None:
    check = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "prov"},
             "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}}
    config = {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig"}
    assert objects.request(check, SERVED, NOW).body["spec"]["parameters"] == {
        **config, "name": objects.PROVISIONING_CONFIG}
    own = {**check, "spec": {**check["spec"], "parameters": {**config, "name": "mine"}}}
    assert objects.request(own, SERVED, NOW).body["spec"]["parameters"]["name"] == "mine"
    custom = {**check, "spec": {"controllerName": "example.com/mine"}}
    assert "parameters" not in objects.request(custom, SERVED, NOW).body["spec"]
    assert objects.provisioning_checks([check, custom]) == {"prov"}
    wl = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
          "metadata": {"name": "w", "namespace": "ns"},
          "spec": {"queueName": "lq", "podSets": [{"name": "one", "count": 1, "template": {"spec": {
              "containers": [{"name": "c"}]}}}]}}
    pod_set = objects.request(wl, SERVED, NOW).body["spec"]["podSets"][0]
    assert pod_set["template"]["spec"]["containers"][0]["image"] == objects.PLACEHOLDER_IMAGE


def test_the_autoscaler_answers_a_check_verdict_on_the_provisioning_request_once() -> None:
    request: dict[str, Any] = {"metadata": {"name": "w-prov-1"}}
    assert objects.autoscaler_verdict(request, "Ready", NOW)
    assert [(c["type"], c["status"]) for c in request["status"]["conditions"]] == [("Provisioned", "True")]
    assert not objects.autoscaler_verdict(request, "Ready", NOW), "already provisioned: nothing to write"
    assert objects.autoscaler_verdict(request, "Retry", NOW)
    assert request["status"]["conditions"][-1]["type"] == "Failed"


def test_a_verdict_the_autoscaler_cannot_give_is_skipped() -> None:
    check = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "prov"},
             "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}}
    scenario = Scenario(objects=[check], steps=[{"checkState": {"workload": "ns/w", "check": "prov",
                                                                "state": "Rejected"}}], config={})
    assert unsupported(scenario, SERVED, 30.0) == ["checkState Rejected on a ProvisioningRequest check"]
    ready = Scenario(objects=[check], steps=[{"checkState": {"workload": "ns/w", "check": "prov",
                                                             "state": "Ready"}}], config={})
    assert unsupported(ready, SERVED, 30.0) == []


def _wl(name: str, *conditions: tuple[str, str], cq: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    status: dict[str, Any] = {"conditions": [{"type": t, "status": v} for t, v in conditions]}
    if cq:
        status["admission"] = {"clusterQueue": cq}
    return {"metadata": meta, "spec": {"queueName": "lq"}, "status": status}


def test_idle_needs_every_workload_looked_at_evictions_done_pods_ready_and_queue_counts_caught_up() -> None:
    cq = {"metadata": {"name": "cq"}, "status": {"reservingWorkloads": 1}}
    admitted = _wl("a", ("QuotaReserved", "True"), ("Admitted", "True"), ("PodsReady", "True"), cq="cq")
    pending = _wl("p", ("QuotaReserved", "False"))
    done = _wl("d", ("QuotaReserved", "True"), ("Finished", "True"), cq="cq")
    assert unsettled([admitted, pending, done], [cq]) == []
    assert unsettled([admitted, pending, _wl("new")], [cq]) == ["ns/new not yet evaluated"]
    inactive = {**_wl("off"), "spec": {"queueName": "lq", "active": False}}
    assert unsettled([admitted, inactive], [cq]) == []
    evicting = _wl("a", ("QuotaReserved", "True"), ("Evicted", "True"), cq="cq")
    assert unsettled([evicting], [cq]) == ["ns/a still being evicted"]
    unready = _wl("a", ("QuotaReserved", "True"), ("Admitted", "True"), cq="cq")
    assert unsettled([unready], [cq]) == ["ns/a admitted, pods not ready"]
    assert unsettled([unready], [cq], frozenset({"ns/a"})) == []
    assert unsettled([admitted, _wl("b", ("QuotaReserved", "True"), cq="cq")], [cq]) == [
        "ClusterQueue cq reports 1 reserving, 2 stored"]


def test_a_started_job_gets_ready_pods_and_a_suspended_one_none() -> None:
    job: dict[str, Any] = {"spec": {"parallelism": 5, "completions": 3, "suspend": False}}
    assert objects.job_pods_follow_suspend(job)
    assert job["status"]["active"] == job["status"]["ready"] == 3 and job["status"]["startTime"]
    assert not objects.job_pods_follow_suspend(job), "nothing more to write"
    job["spec"]["suspend"] = True
    assert objects.job_pods_follow_suspend(job)
    assert job["status"] == {"active": 0, "ready": 0}
    assert not objects.job_pods_follow_suspend(job)
