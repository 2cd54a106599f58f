"""The live-snapshot builder, what-if prediction and explain, over hand-made API lists."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.scenario.cluster_snapshot import (
    ClusterListing,
    SubmissionError,
    what_if_scenario,
    world_objects,
)
from pykueue.manager.scenario.explain import explain, text
from pykueue.manager.scenario.loader import ScenarioError
from pykueue.manager.scenario.what_if import predict, table

NOW = 1_800_000_000.0
CREATED = "2027-01-15T08:00:00Z"  # NOW
POLICY = AdmissionPolicy.from_config({"integrations": {"frameworks": ["batch/job"]}})


def _cq(name: str, cpu: str, cohort: str | None = None,
        preemption: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": [{
        "coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [
            {"name": "cpu", "nominalQuota": cpu}]}]}]}
    if cohort:
        spec["cohortName"] = cohort
    if preemption:
        spec["preemption"] = preemption
    return {"metadata": {"name": name}, "spec": spec}


def _lq(ns: str, name: str, cq: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": cq}}


def _pod_template(cpu: str) -> dict[str, Any]:
    return {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}


def _admitted(ns: str, name: str, cq: str, cpu: str, priority: int = 0) -> dict[str, Any]:
    """A Workload as the API returns it after pykueue admitted it (no kind: list items)."""
    t = {"type": "QuotaReserved", "status": "True", "lastTransitionTime": CREATED, "reason": "QuotaReserved"}
    a = {"type": "Admitted", "status": "True", "lastTransitionTime": CREATED, "reason": "Admitted"}
    return {"metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "creationTimestamp": CREATED},
            "spec": {"queueName": "lq", "priority": priority,
                     "podSets": [{"name": "main", "count": 1, "template": _pod_template(cpu)}]},
            "status": {"conditions": [t, a], "admission": {"clusterQueue": cq, "podSetAssignments": [
                {"name": "main", "count": 1, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": cpu}}]}}}


def _job(ns: str, name: str, cpu: str, queue: str | None = "lq", priority_class: str | None = None,
         deadline: int | None = None) -> dict[str, Any]:
    labels = {keys.QUEUE_NAME: queue} if queue else {}
    if priority_class:
        labels[keys.PRIORITY_CLASS] = priority_class
    spec: dict[str, Any] = {"parallelism": 1, "completions": 1, "template": _pod_template(cpu)}
    if deadline:
        spec["activeDeadlineSeconds"] = deadline
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": spec}


def _listing(cpu: str = "2", workloads: tuple[dict[str, Any], ...] = (), lqs: tuple[str, ...] = ("lq",),
             extra_cqs: tuple[dict[str, Any], ...] = ()) -> ClusterListing:
    return ClusterListing({
        "Namespace": [{"metadata": {"name": "team", "labels": {"kubernetes.io/metadata.name": "team"}}}],
        "ResourceFlavor": [{"metadata": {"name": "default"}}],
        "ClusterQueue": [_cq("cq", cpu, preemption={"withinClusterQueue": "LowerPriority"}), *extra_cqs],
        "LocalQueue": [_lq("team", lq, "cq") for lq in lqs] + [_lq("team", "empty", "cq-empty")],
        "WorkloadPriorityClass": [{"metadata": {"name": "high"}, "value": 100}],
        "Workload": list(workloads),
    }, {"integrations": {"frameworks": ["batch/job"]}}, now=NOW)


def test_world_objects_get_kinds_ready_nodes_bound_pods_and_oldest_workload_first() -> None:
    ready = {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    down = {"metadata": {"name": "n2"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    bound = {"metadata": {"name": "p1", "namespace": "team"}, "spec": {"nodeName": "n1"},
             "status": {"phase": "Running"}}
    done = {"metadata": {"name": "p2", "namespace": "team"}, "spec": {"nodeName": "n1"},
            "status": {"phase": "Succeeded"}}
    newer = {**_admitted("team", "b", "cq", "1"), "metadata": {
        **_admitted("team", "b", "cq", "1")["metadata"], "creationTimestamp": "2027-01-15T09:00:00Z"}}
    listing = ClusterListing({"Node": [ready, down], "Pod": [bound, done],
                              "Workload": [newer, _admitted("team", "a", "cq", "1")]})
    objs = world_objects(listing)
    assert [(o["kind"], o["metadata"]["name"]) for o in objs] == [
        ("Node", "n1"), ("Pod", "p1"), ("Workload", "a"), ("Workload", "b")]
    assert objs[-1]["apiVersion"] == keys.API_VERSION


def test_a_job_is_defaulted_by_the_webhook_rules_before_it_becomes_a_workload() -> None:
    listing = _listing(lqs=("lq", "default"))
    scenario, submitted = what_if_scenario(listing, [_job("team", "j", "1", queue=None)], POLICY)
    wl = scenario.objects[-1]
    assert wl["kind"] == "Workload" and wl["spec"]["queueName"] == "default"  # the default LocalQueue
    assert submitted[0].owner == "batch/v1/Job team/j"
    assert wl["metadata"]["ownerReferences"][0]["name"] == "j"


def test_a_job_pykueue_would_not_manage_or_the_webhook_would_deny_is_an_error() -> None:
    with pytest.raises(SubmissionError, match="would not manage"):
        what_if_scenario(_listing(), [_job("team", "j", "1", queue=None)], POLICY)
    with pytest.raises(SubmissionError, match="namespace nowhere not found"):
        what_if_scenario(_listing(), [_job("nowhere", "j", "1")], POLICY)
    bad = _job("team", "j", "1")
    bad["metadata"]["labels"][keys.QUEUE_NAME] = "Not_A_Name!"
    with pytest.raises(SubmissionError, match="webhook would deny"):
        what_if_scenario(_listing(), [bad], POLICY)


def test_full_queue_predicts_waiting_for_quota_and_an_empty_queue_admission() -> None:
    listing = _listing(workloads=(_admitted("team", "running", "cq", "2"),),
                       extra_cqs=(_cq("cq-empty", "2"),))
    view = predict(listing, [_job("team", "waits", "1"), _job("team", "fits", "1", queue="empty")], POLICY)
    by_owner = {w["owner"]: (k, w) for k, w in view["workloads"].items() if w.get("submitted")}
    _, waits = by_owner["batch/v1/Job team/waits"]
    assert (waits["status"], waits["tier"], waits["position"]) == ("Pending", "WaitingForQuota", 1)
    assert "1 more needed" in waits["reason"]
    _, fits = by_owner["batch/v1/Job team/fits"]
    assert (fits["status"], fits["clusterQueue"]) == ("Admitted", "cq-empty")
    assert fits["podSets"]["main"]["flavors"] == {"cpu": "default"}
    assert view["workloads"]["team/running"]["status"] == "Admitted"  # untouched
    assert set(view) >= {"workloads", "clusterQueues", "submitted"}
    assert "WaitingForQuota" in table(view)


def test_a_higher_priority_job_names_the_workload_it_would_preempt() -> None:
    listing = _listing(workloads=(_admitted("team", "low", "cq", "2"),))
    view = predict(listing, [_job("team", "urgent", "2", priority_class="high")], POLICY)
    key = view["submitted"][0]["workloads"][0]
    assert view["workloads"][key]["status"] == "Admitted"
    assert view["workloads"][key]["preempts"] == ["team/low"]


def test_until_admitted_finishes_the_running_workload_at_its_expected_end() -> None:
    running = _admitted("team", "running", "cq", "2")
    running["spec"]["maximumExecutionTimeSeconds"] = 600
    listing = _listing(workloads=(running,))
    view = predict(listing, [_job("team", "next", "1")], POLICY, until_admitted=True, assume_runtime_s=60)
    key = view["submitted"][0]["workloads"][0]
    predicted = view["workloads"][key]["predictedAdmission"]
    # Admitted at NOW and limited to 600 s: the next one is admitted 600 s later, and the
    # estimate used is named.
    assert predicted["estimates"] == ["maximumExecutionTimeSeconds"]
    assert (predicted["inSeconds"], predicted["clusterQueue"]) == (600.0, "cq")


def test_until_admitted_uses_the_assumed_runtime_when_nothing_says_more() -> None:
    running = _admitted("team", "running", "cq", "2")
    running["status"]["conditions"][0]["lastTransitionTime"] = "2027-01-15T07:59:00Z"  # a minute ago
    listing = _listing(workloads=(running,))
    # The submitted job's own deadline is its runtime, not the running one's.
    view = predict(listing, [_job("team", "next", "1", deadline=30), _job("team", "after", "2")], POLICY,
                   until_admitted=True, assume_runtime_s=3600.0)
    nxt, after = (view["submitted"][i]["workloads"][0] for i in (0, 1))
    predicted = view["workloads"][nxt]["predictedAdmission"]
    assert predicted["estimates"] == ["assumedRuntime"] and predicted["inSeconds"] == 3540.0
    # "after" needs both CPUs: it waits for "next" too, which ends 30 s after its admission.
    predicted = view["workloads"][after]["predictedAdmission"]
    assert predicted["inSeconds"] == 3570.0
    assert predicted["finishedBefore"] == {"activeDeadlineSeconds": 1, "assumedRuntime": 1}


def test_explain_reports_tier_position_quota_numbers_and_preemption_candidates() -> None:
    pending = {"metadata": {"name": "waits", "namespace": "team", "uid": "u-w", "creationTimestamp": CREATED},
               "spec": {"queueName": "lq", "priority": 100,
                        "podSets": [{"name": "main", "count": 3, "template": _pod_template("1")}]}}
    listing = _listing(workloads=(_admitted("team", "running", "cq", "2"), pending))
    [entry] = explain(listing, ["team/waits"])
    assert (entry["status"], entry["reason"], entry["clusterQueue"], entry["position"]) == (
        "Pending", "ExceedsMaxQuota", "cq", 1)
    numbers = entry["podSets"]["main"]["flavors"]["default"]["cpu"]
    assert numbers == {"requested": "3", "nominal": "2", "used": "2", "borrowable": "0", "free": "0",
                       "needed": "3"}
    assert entry["preemptionCandidates"] == {"default": ["team/running"]}
    rendered = text(entry)
    assert "Position:      1 of 1 pending" in rendered and "team/running" in rendered
    with pytest.raises(KeyError):
        explain(listing, ["team/nothing"])


ALL_KINDS = AdmissionPolicy.from_config({"integrations": {"frameworks": [
    "batch/job", "kubeflow.org/pytorchjob", "leaderworkerset.x-k8s.io/leaderworkerset"]}})


def test_pytorchjob_and_leaderworkerset_become_their_workloads() -> None:
    replicas = {"Master": {"replicas": 1, "template": _pod_template("1")},
                "Worker": {"replicas": 2, "template": _pod_template("1")}}
    ptj = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
           "metadata": {"name": "train", "namespace": "team", "labels": {keys.QUEUE_NAME: "lq"}},
           "spec": {"pytorchReplicaSpecs": replicas}}
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "serve", "namespace": "team", "labels": {keys.QUEUE_NAME: "lq"}},
           "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2, "workerTemplate": _pod_template("1")}}}
    listing = ClusterListing(_listing(cpu="8").items, {}, now=NOW)
    view = predict(listing, [ptj, lws], ALL_KINDS)
    [ptj_sub, lws_sub] = view["submitted"]
    [ptj_key] = ptj_sub["workloads"]
    podsets = view["workloads"][ptj_key]["podSets"]
    assert {n: p["count"] for n, p in podsets.items()} == {"master": 1, "worker": 2}
    assert view["workloads"][ptj_key]["status"] == "Admitted"
    assert len(lws_sub["workloads"]) == 2  # one Workload per group
    assert all(view["workloads"][k]["owner"] == "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet team/serve"
               for k in lws_sub["workloads"])
    with pytest.raises(SubmissionError, match="integration is not enabled"):
        predict(listing, [ptj], POLICY)


def _node(name: str, rack: str, cpu: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"rack": rack, "kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def test_explain_names_the_closest_topology_domains_of_a_pod_set_that_does_not_fit() -> None:
    topology = {"metadata": {"name": "default"},
                "spec": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": "kubernetes.io/hostname"}]}}
    cq = _cq("cq", "100")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "tas"
    template = _pod_template("1")
    template["metadata"] = {"annotations": {keys.PODSET_REQUIRED_TOPOLOGY: "rack"}}
    waits = {"metadata": {"name": "big", "namespace": "team", "uid": "u-big", "creationTimestamp": CREATED},
             "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 4, "template": template}]}}
    listing = ClusterListing({
        "Namespace": [{"metadata": {"name": "team"}}],
        "ResourceFlavor": [{"metadata": {"name": "tas"}, "spec": {"topologyName": "default"}}],
        "Topology": [topology], "ClusterQueue": [cq], "LocalQueue": [_lq("team", "lq", "cq")],
        # Rack r1 takes 3 one-CPU pods, r0 only 1: no rack takes all four.
        "Node": [_node("n0", "r0", "1"), _node("n1", "r1", "2"), _node("n2", "r1", "1")],
        "Workload": [waits]}, {}, now=NOW)
    [entry] = explain(listing, ["team/big"])
    assert (entry["status"], entry["reason"]) == ("Pending", "TopologyPlacementFailed")
    closest = entry["podSets"]["main"]["closestDomains"]["tas"]
    assert closest == {"levels": ["rack"],
                       "domains": [{"values": ["r1"], "fit": 3}, {"values": ["r0"], "fit": 1}]}
    assert "closest rack domains in tas: r1 (3 of 4), r0 (1 of 4)" in text(entry)


def test_a_cluster_object_the_core_cannot_read_is_ignored_as_the_manager_does() -> None:
    broken = _admitted("team", "broken", "cq", "1")
    broken["spec"]["podSets"][0]["template"] = _pod_template("not-a-quantity")
    view = predict(_listing(workloads=(broken,)), [_job("team", "fits", "1")], POLICY)
    assert [line.split(":")[0] for line in view["ignored"]] == ["Workload team/broken"]
    key = view["submitted"][0]["workloads"][0]
    assert view["workloads"][key]["status"] == "Admitted"
    bad_job = _job("team", "bad", "not-a-quantity")
    with pytest.raises(ScenarioError):
        predict(_listing(), [bad_job], POLICY)


def test_explain_counts_what_earlier_pod_sets_take_in_the_needed_amount() -> None:
    two = {"metadata": {"name": "two", "namespace": "team", "uid": "u-two", "creationTimestamp": CREATED},
           "spec": {"queueName": "lq", "podSets": [
               {"name": "leader", "count": 1, "template": _pod_template("1")},
               {"name": "workers", "count": 2, "template": _pod_template("1")}]}}
    listing = _listing(cpu="2", workloads=(_admitted("team", "running", "cq", "1"), two))
    [entry] = explain(listing, ["team/two"])
    needed = {ps: n["flavors"]["default"]["cpu"]["needed"] for ps, n in entry["podSets"].items()}
    assert needed == {"leader": "0", "workers": "2"}  # 1 CPU free: the leader fits, then 2 more


def test_until_admitted_gives_up_at_once_on_a_workload_time_cannot_help() -> None:
    listing = _listing(workloads=(_admitted("team", "running", "cq", "2"),))
    view = predict(listing, [_job("team", "lost", "1", queue="missing"), _job("team", "next", "1")], POLICY,
                   until_admitted=True, assume_runtime_s=60)
    lost, nxt = (view["submitted"][i]["workloads"][0] for i in (0, 1))
    assert view["workloads"][lost]["tier"] == "Misconfigured"
    assert view["workloads"][lost]["predictedAdmission"] is None
    assert view["workloads"][nxt]["predictedAdmission"]["inSeconds"] == 60.0


def test_a_job_with_generate_name_is_predicted_under_a_made_up_name() -> None:
    # Kueue's documented examples name their Jobs with metadata.generateName only.
    def generated(serial: int) -> dict[str, Any]:
        job = _job("team", "unused", "1")
        del job["metadata"]["name"]
        job["metadata"]["generateName"] = "sample-job-"
        return job

    listing = _listing(extra_cqs=(_cq("cq-empty", "2"),))
    first = predict(listing, [generated(0), generated(1)], POLICY)
    refs = [s["object"] for s in first["submitted"]]
    assert len(set(refs)) == 2 and all(r.startswith("Job team/sample-job-") for r in refs)
    assert all(len(r.removeprefix("Job team/sample-job-")) == 5 for r in refs)
    assert [s["object"] for s in predict(listing, [generated(0), generated(1)], POLICY)["submitted"]] == refs
    assert all(first["workloads"][k]["status"] == "Admitted"
               for s in first["submitted"] for k in s["workloads"])
    nameless = generated(0)
    del nameless["metadata"]["generateName"]
    with pytest.raises(SubmissionError, match=r"no metadata\.name"):
        predict(listing, [nameless], POLICY)


def test_a_check_nothing_serves_keeps_the_live_queue_inactive() -> None:
    # Read from a cluster, an AdmissionCheck no controller marked Active is inactive, as in Kueue.
    listing = _listing()
    cq = listing.items["ClusterQueue"][0]
    cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "prov"}]}
    checks = [{"metadata": {"name": "prov"}, "spec": {"controllerName": "ProvisioningRequestController"}}]
    view = predict(ClusterListing({**listing.items, "AdmissionCheck": checks}, listing.config, listing.now),
                   [_job("team", "j", "1")], POLICY)
    (waiting,) = [w for w in view["workloads"].values() if w.get("submitted")]
    assert waiting["status"] == "Pending" and "AdmissionCheckInactive (prov)" in waiting["reason"]
