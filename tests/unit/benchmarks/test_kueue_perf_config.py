"""Kueue's generator format: shipped configs, object layout, and clear errors on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchmarks.kueue_perf_config import (
    CLASS_LABEL,
    RUNNING_TIME_LABEL,
    ConfigError,
    load_config,
    parse_config,
    queue_plans,
    topology_objects,
    workload_object,
)

CONFIGS = Path(__file__).resolve().parents[3] / "benchmarks" / "configs" / "kueue_perf"


def test_baseline_has_kueues_shape() -> None:
    config = load_config(CONFIGS / "baseline.yaml")
    assert config.workload_count == 15_000
    assert config.workload_classes == ["small", "medium", "large"]
    plans = queue_plans(config)
    assert len(plans) == 30
    assert plans[0].name == "cq-0-0-cohort-0" and plans[0].cohort == "cohort-0"
    assert {p.cohort for p in plans} == {f"cohort-{i}" for i in range(5)}
    assert config.flavor.name == "rf" and config.topology is None


def test_large_scale_and_quick_sizes() -> None:
    assert load_config(CONFIGS / "large-scale.yaml").workload_count == 50_000
    assert len(queue_plans(load_config(CONFIGS / "large-scale.yaml"))) == 1000
    quick = load_config(CONFIGS / "quick.yaml")
    assert quick.workload_count == 384


def test_tas_config_builds_topology_and_nodes() -> None:
    config = load_config(CONFIGS / "tas.yaml")
    assert config.workload_count == 15_000
    topology, nodes = topology_objects(config)
    assert [lv["nodeLabel"] for lv in topology["spec"]["levels"]] == [
        "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack", "kubernetes.io/hostname"]
    assert len(nodes) == 640
    assert len({n["metadata"]["name"] for n in nodes}) == 640
    racks = {n["metadata"]["labels"]["cloud.provider.com/topology-rack"] for n in nodes}
    assert len(racks) == 10
    first = nodes[0]
    assert first["metadata"]["labels"]["kubernetes.io/hostname"] == first["metadata"]["name"]
    assert first["metadata"]["labels"]["tas-node-group"] == "tas"
    assert first["status"]["allocatable"]["cpu"] == "96"


def test_objects_follow_kueues_layout() -> None:
    plan = queue_plans(load_config(CONFIGS / "baseline.yaml"), prefix="p-")[7]
    cq, ns, lq = plan.objects("rf")
    names = {cq["metadata"]["name"], ns["metadata"]["name"], lq["metadata"]["name"],
             lq["metadata"]["namespace"]}
    assert names == {plan.name}
    assert cq["spec"]["cohortName"] == "p-cohort-1"
    quota = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert (quota["nominalQuota"], quota["borrowingLimit"]) == ("20", "100")
    assert cq["spec"]["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    template = plan.queues.workloads_sets[2].workloads[0]
    wl = workload_object(template, "large-2-0-0", ns["metadata"]["name"], lq["metadata"]["name"])
    assert wl["metadata"]["labels"] == {RUNNING_TIME_LABEL: "1000", CLASS_LABEL: "large"}
    assert wl["spec"]["priority"] == 200
    podset = wl["spec"]["podSets"][0]
    assert podset["count"] == 1
    assert podset["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "20"}


def test_tas_workloads_carry_their_topology_request() -> None:
    config = load_config(CONFIGS / "tas.yaml")
    sets = config.cohorts[0].queues_sets[0].workloads_sets
    requests = [workload_object(s.workloads[0], "w", "ns", "lq")["spec"]["podSets"][0] for s in sets[:3]]
    assert requests[0]["topologyRequest"] == {"required": "cloud.provider.com/topology-rack"}
    assert requests[1]["topologyRequest"] == {"preferred": "cloud.provider.com/topology-rack"}
    assert requests[2]["topologyRequest"] == {
        "podSetSliceRequiredTopology": "cloud.provider.com/topology-rack", "podSetSliceSize": 1}
    assert requests[0]["count"] == 2


@pytest.mark.parametrize(("doc", "message"), [
    ({}, "cohorts must be a non-empty list"),
    ({"cohorts": [{"className": "c", "count": 1}]}, "queuesSets must be a non-empty list"),
    ({"cohorts": [{"className": "c", "count": 1, "queuesSets": [
        {"className": "q", "count": 1, "nominalQuota": 1, "workloadsSets": [
            {"count": -1, "workloads": [{"className": "s", "runtimeMs": 1, "request": 1}]}]}]}]},
     "count must be a non-negative integer"),
    ({"cohorts": [{"className": "c", "count": 1, "queuesSets": [
        {"className": "q", "count": 1, "nominalQuota": 1, "workloadsSets": [
            {"count": 1, "workloads": [{"className": "s", "runtimeMs": 1, "request": 1,
                                        "tasConstraint": "nearby", "tasLevel": "rack"}]}]}]}]},
     "tasConstraint must be one of"),
    ({"cohorts": [{"className": "c", "count": 1, "queuesSets": [
        {"className": "q", "count": 1, "workloadsSets": [
            {"count": 1, "workloads": [{"className": "s", "runtimeMs": 1, "request": 1}]}]}]}]},
     "nominalQuota is required"),
    ("not a mapping", "expected a mapping"),
])
def test_bad_configs_name_the_field(doc: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(doc)


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("cohorts: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml"):
        load_config(bad)
    with pytest.raises(ConfigError, match=r"missing\.yaml"):
        load_config(tmp_path / "missing.yaml")


def test_kueue_generator_file_parses_unchanged(tmp_path: Path) -> None:
    """Kueue's files quote quantities and omit optional fields; both forms are accepted."""
    doc = {"cohorts": [{"className": "cohort", "count": 1, "queuesSets": [
        {"className": "cq", "count": 2, "nominalQuota": "8500", "borrowingLimit": "17000",
         "reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority",
         "workloadsSets": [{"count": 3, "creationIntervalMs": 200, "workloads": [
             {"className": "small", "runtimeMs": 10000, "priority": 50, "request": "2"}]}]}]}]}
    path = tmp_path / "generator.yaml"
    path.write_text(yaml.safe_dump(doc))
    config = load_config(path)
    assert config.workload_count == 6
    assert config.cohorts[0].queues_sets[0].nominal_quota == "8500"


def test_fair_sharing_is_our_top_level_switch_off_by_default() -> None:
    doc = {"cohorts": [{"className": "c", "count": 1, "queuesSets": [
        {"className": "q", "count": 1, "nominalQuota": 1, "workloadsSets": [
            {"count": 1, "workloads": [{"className": "s", "runtimeMs": 1, "request": 1}]}]}]}]}
    assert parse_config(doc).fair_sharing is False
    assert parse_config({**doc, "fairSharing": True}).fair_sharing is True
    assert parse_config({**doc, "fairSharing": False}).fair_sharing is False
    with pytest.raises(ConfigError, match="fairSharing must be true or false, not 'yes'"):
        parse_config({**doc, "fairSharing": "yes"})
    # The objects are the same either way: fair sharing is the managers' setting.
    plain, fair = (queue_plans(parse_config(d))[0].objects("rf") for d in (doc, {**doc, "fairSharing": True}))
    assert plain == fair


def test_the_deep_queue_runs_fair_sharing_and_kueues_configs_do_not() -> None:
    assert load_config(CONFIGS / "deep-queue.yaml").fair_sharing is True
    for name in ("baseline", "large-scale", "tas", "quick"):
        assert load_config(CONFIGS / f"{name}.yaml").fair_sharing is False, name


def test_create_before_start_is_our_workloads_set_switch_off_by_default() -> None:
    doc = yaml.safe_load((CONFIGS / "quick.yaml").read_text())
    assert not any(p.has_backlog for p in queue_plans(parse_config(doc)))
    wset = doc["cohorts"][0]["queuesSets"][0]["workloadsSets"][0]
    wset["createBeforeStart"] = True
    plans = queue_plans(parse_config(doc))
    assert plans[0].has_backlog and plans[0].queues.workloads_sets[0].before_start
    wset["createBeforeStart"] = "yes"
    message = "workloadsSets\\[0\\]: createBeforeStart must be true or false, not 'yes'"
    with pytest.raises(ConfigError, match=message):
        parse_config(doc)


def test_the_deep_queues_backlog_is_there_before_the_manager() -> None:
    plans = queue_plans(load_config(CONFIGS / "deep-queue.yaml"))
    assert [p.queues.class_name for p in plans if p.has_backlog] == ["deep"]
