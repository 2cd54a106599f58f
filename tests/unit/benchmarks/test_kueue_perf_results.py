"""The JSON line of kueue_perf: runs, which run the top level describes, pykueue/Kueue ratios."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks import kueue_perf
from benchmarks.kueue_perf_managers import (
    busy_pct,
    client_requests,
    machine_cpu_times,
    preemption_counts,
    status_write_timings,
)
from benchmarks.kueue_perf_results import (
    ENTRY_KEYS,
    comparison,
    ratio_to_reference,
    run_entry,
    run_label,
    summary,
    top_index,
)
from benchmarks.plot_kueue_perf import compare_rows, table_rows
from pykueue.manager.runtime.metrics import KueueMetrics


def _metrics(mode: str, qps: float, burst: int, wall: float, **extra: Any) -> dict[str, Any]:
    return {"config": "quick", "qps": qps, "burst": burst, "wall_s": wall, "usage_pct": 50.0,
            "admitted_usage_pct": 20.0 if mode == "kueue" else 10.0,
            "usage_pct_by_class": {"cq": 50.0}, "tta_ms": {"small": 4000, "large": 1000},
            "manager_cpu_s": 3.0, "manager_peak_rss_mb": 100.0, "api_requests": 1000, "evictions": 2,
            "workloads": 384, "manager": mode, **extra}


def test_entry_has_the_contract_keys_and_names_the_manager() -> None:
    measured = _metrics("kueue", 50.0, 100, 20.0, reference={"wall_s": 1.0}, ratio={"wall": 20.0})
    entry = run_entry("kueue", "v0.19.2", measured, "kueue 50/100")
    assert list(entry)[:len(ENTRY_KEYS)] == list(ENTRY_KEYS)
    assert entry["manager"] == "kueue" and entry["version"] == "v0.19.2" and entry["mode"] == "kueue"
    assert entry["workloads"] == 384 and entry["label"] == "kueue 50/100"
    assert "reference" not in entry and "ratio" not in entry


def test_labels() -> None:
    assert run_label("pykueue", 50.0, 100) == "pykueue 50/100"
    assert run_label("kueue", 300.0, 500, 2) == "kueue 300/500 #2"
    assert run_label("pykueue", None, None) == "pykueue external"


def test_compare_takes_medians_per_setting_and_divides_pykueue_by_kueue() -> None:
    runs = [run_entry("pykueue", "0.1.0", _metrics("own", 50.0, 100, w), "") for w in (10.0, 12.0, 30.0)]
    runs += [run_entry("kueue", "v0.19.2", _metrics("kueue", 50.0, 100, w, manager_cpu_s=6.0, evictions=n),
                       "") for w, n in ((20.0, 4), (24.0, 8), (22.0, 1))]
    runs.append(run_entry("pykueue", "0.1.0", _metrics("own", 300.0, 500, 5.0), ""))  # no Kueue run
    out = comparison(runs)
    assert list(out) == ["50/100"]
    block = out["50/100"]
    assert block["pykueue"]["wall_s"] == 12.0 and block["kueue"]["wall_s"] == 22.0
    assert block["pykueue"]["runs"] == 3 and block["kueue"]["runs"] == 3
    assert block["ratio"]["wall"] == round(12 / 22, 3)
    assert block["ratio"]["usage"] == 1.0 and block["ratio"]["admitted_usage"] == 0.5
    assert block["ratio"]["manager_cpu"] == 0.5
    assert block["ratio"]["manager_peak_rss"] == 1.0 and block["ratio"]["api_requests"] == 1.0
    assert block["ratio"]["tta"] == {"large": 1.0, "small": 1.0}
    assert block["kueue"]["evictions"] == 4.0 and block["ratio"]["evictions"] == 0.5  # 2 / median of 4, 8, 1


def test_summary_top_level_is_the_pykueue_run_and_runs_is_a_list() -> None:
    own = _metrics("own", 50.0, 100, 10.0)
    theirs = _metrics("kueue", 50.0, 100, 20.0)
    entries = [run_entry("pykueue", "0.1.0", own, "pykueue 50/100"),
               run_entry("kueue", "v0.19.2", theirs, "kueue 50/100")]
    assert top_index(entries) == 0
    metrics = summary(entries, own)
    assert metrics["wall_s"] == 10.0 and metrics["manager"] == "own"
    assert [r["manager"] for r in metrics["runs"]] == ["pykueue", "kueue"]
    assert metrics["compare"]["50/100"]["ratio"]["wall"] == 0.5
    assert metrics["kueue_version"] == "v0.19.2"
    only_kueue = [entries[1]]
    assert top_index(only_kueue) == 0 and "compare" not in summary(only_kueue, theirs)


def test_floor_runs_stay_out_of_runs_and_each_manager_is_divided_by_the_floor() -> None:
    own = _metrics("own", 300.0, 500, 12.0)
    fast = {"small": 500, "large": 250}
    entries = [run_entry("floor", "0.1.0", _metrics("floor", 300.0, 500, w, tta_ms=fast, usage_pct=None),
                         f"floor 300/500 #{n}")
               for n, w in enumerate((6.0, 8.0), 1)]
    entries += [run_entry("pykueue", "0.1.0", own, "pykueue 300/500"),
                run_entry("kueue", "v0.19.2", _metrics("kueue", 300.0, 500, 21.0), "kueue 300/500")]
    metrics = summary(entries, own)
    assert [r["manager"] for r in metrics["runs"]] == ["pykueue", "kueue"]
    assert [r["label"] for r in metrics["floor_runs"]] == ["floor 300/500 #1", "floor 300/500 #2"]
    block = metrics["floor"]["300/500"]
    assert block["floor"]["wall_s"] == 7.0 and block["floor"]["runs"] == 2
    assert block["pykueue_over_floor"] == {"wall": round(12 / 7, 3), "tta": {"large": 4.0, "small": 8.0}}
    assert block["kueue_over_floor"]["wall"] == 3.0
    assert metrics["compare"]["300/500"]["ratio"]["wall"] == round(12 / 21, 3)  # the floor is no manager
    assert table_rows({"metrics": metrics})[0].startswith("| quick | floor 300/500 #1 | 6 (-) | - | ")
    assert "floor" not in summary(entries[2:], own)


def test_a_run_over_the_published_means_leaves_out_what_it_did_not_measure() -> None:
    ref = kueue_perf.REFERENCE["baseline"]
    floor = _metrics("floor", 300.0, 500, 117.0, tta_ms={"large": 8250, "small": 9000}, usage_pct=None)
    assert ratio_to_reference(floor, ref) == {
        "wall": round(117.0 / ref["wall_s"], 3), "usage": None,
        "tta": {c: round(ms / ref["tta_ms"][c], 3) for c, ms in (("large", 8250), ("small", 9000))}}
    own = _metrics("own", 300.0, 500, 170.0, usage_pct=93.0)
    assert ratio_to_reference(own, ref)["usage"] == round(93.0 / ref["usage_pct"], 3)
    assert ratio_to_reference(own, kueue_perf.REFERENCE["tas"])["tta"] == {}


def test_rows_for_the_readme() -> None:
    own = _metrics("own", 50.0, 100, 10.0)
    theirs = _metrics("kueue", 50.0, 100, 20.0)
    entries = [run_entry("pykueue", "0.1.0", own, "pykueue 50/100"),
               run_entry("kueue", "v0.19.2", theirs, "kueue 50/100")]
    result = {"metrics": summary(entries, own)}
    rows = table_rows(result)
    assert rows[0].startswith("| quick | pykueue 50/100 | 10 ")
    assert rows[1].startswith("| quick | Kueue 50/100 | 20 ")
    assert compare_rows(result) == [
        "| quick | pykueue / Kueue 50/100 (1 + 1 runs) | 0.50x | 1.00x | 1.00x | - | 1.00x | 1.00x | 1.00x "
        "| 1.00x | 2 / 2 |"]


def test_client_go_request_counter_is_summed_per_method() -> None:
    text = """# HELP rest_client_requests_total Number of HTTP requests
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 12
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 3
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PUT"} 2
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PUT"} 380
workqueue_adds_total{name="workload"} 99
"""
    assert client_requests(text) == (397, {"get": 12, "post": 3, "put": 382})
    assert client_requests("") == (0, {})


def test_preemptions_decided_add_pykueues_withdrawn_reservations_to_kueues_counter() -> None:
    m = KueueMetrics()
    m.preempted("cq-a", "InClusterQueue")
    m.preempted("cq-b", "InCohortReclamation")
    m.withdrawn("cq-a", 3)
    page = m.exposition().decode()
    assert preemption_counts(page, True) == (5, 3)
    kueue_page = """# TYPE kueue_preempted_workloads_total counter
kueue_preempted_workloads_total{preempting_cluster_queue="cq-a",reason="InClusterQueue"} 4
kueue_preempted_workloads_total{preempting_cluster_queue="cq-b",reason="InCohortReclamation"} 2
kueue_preempted_workloads_totalx 7
"""
    assert preemption_counts(kueue_page, False) == (6, None)
    assert preemption_counts("", True) == (0, 0)


def test_compare_plans_alternating_runs_per_setting_and_round() -> None:
    plan = kueue_perf.plan_runs(["own", "kueue"], [(50.0, 100), (300.0, 500)], 2)
    assert [s.label for s in plan] == [
        "pykueue 50/100", "kueue 50/100", "pykueue 300/500", "kueue 300/500",
        "pykueue 50/100 #2", "kueue 50/100 #2", "pykueue 300/500 #2", "kueue 300/500 #2"]
    assert len({s.tag for s in plan}) == len(plan)
    floored = kueue_perf.plan_runs(["floor", "own"], [(300.0, 500)], 1)
    assert [(s.label, s.manager) for s in floored] == [("floor 300/500", "floor"),
                                                       ("pykueue 300/500", "pykueue")]


@pytest.mark.parametrize(("argv", "message"), [
    (["--compare", "--manager", "external"], "leave out --manager"),
    (["--rounds", "2"], "goes with --compare"),
    (["--kueue-version", "v0.19.2"], "goes with --manager kueue"),
    (["--kueue-limiter", "per-resource"], "--kueue-limiter goes with --manager kueue"),
    (["--kueue-log-level", "3"], "--kueue-log-level goes with --manager kueue"),
    (["--manager", "kueue", "--kueue-log-level", "0"], "N >= 1"),
    (["--qps", "50"], "together"),
    (["--compare", "--qps", "0", "--burst", "100"], "positive"),
    (["--floor", "--manager", "external"], "does not go with --manager external"),
])
def test_usage_errors_are_one_line_and_exit_2(argv: list[str], message: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert kueue_perf.main(["--config", "quick", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_the_floor_is_refused_for_a_topology_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert kueue_perf.main(["--config", "tas", "--floor"]) == 2
    assert "places no topology" in capsys.readouterr().err


def test_an_unsupported_kueue_version_is_refused_before_anything_runs(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert kueue_perf.main(["--config", "quick", "--manager", "kueue", "--kueue-version", "v0.9.0"]) == 2
    assert "older than" in capsys.readouterr().err


def test_result_files_are_named_by_kind_and_limits() -> None:
    parse = kueue_perf._parser().parse_args
    assert kueue_perf._output_path(parse([]), "quick") == kueue_perf.RESULTS / "kueue_perf-quick.json"
    assert kueue_perf._output_path(parse(["--compare", "--qps", "50", "--burst", "100"]), "quick") == \
        kueue_perf.RESULTS / "kueue_perf-quick-compare-50-100.json"
    assert kueue_perf._output_path(parse(["--manager", "kueue"]), "tas") == \
        kueue_perf.RESULTS / "kueue_perf-tas-kueue.json"
    assert kueue_perf._output_path(parse(["--compare", "--kueue-limiter", "per-resource"]), "baseline") == \
        kueue_perf.RESULTS / "kueue_perf-baseline-compare-per-resource.json"
    assert kueue_perf._output_path(parse(["--manager", "kueue", "--kueue-log-level", "3"]), "tas") == \
        kueue_perf.RESULTS / "kueue_perf-tas-kueue-log3.json"
    assert kueue_perf._output_path(parse(["--output", "x.json"]), "quick") == Path("x.json")


def test_status_write_timings_come_from_the_managers_work_queue_histograms() -> None:
    metrics = KueueMetrics()
    for lane, wait, work in (("workload-status-urgent", 0.1, 0.2), ("workload-status-urgent", 0.3, 0.4),
                             ("workload-status", 30.0, 0.3)):
        metrics.waited(lane, wait)
        metrics.worked("workload-status", work)
    metrics.waited("jobs", 9.0)
    metrics.worked("jobs", 9.0)
    text = metrics.exposition().decode()
    assert status_write_timings(text) == {"count": 3.0, "mean_write_ms": 300.0, "urgent_mean_wait_ms": 200.0,
                                          "other_mean_wait_ms": 30000.0}
    assert status_write_timings(text, "jobs") == {"count": 1.0, "mean_write_ms": 9000.0,
                                                  "urgent_mean_wait_ms": None, "other_mean_wait_ms": 9000.0}
    assert status_write_timings(KueueMetrics().exposition().decode()) is None  # nothing written yet


def test_machine_busy_share_between_two_readings() -> None:
    assert busy_pct((100, 1000), (250, 1200)) == 75.0
    assert busy_pct((100, 1000), (100, 1000)) is None
    busy, total = machine_cpu_times()
    assert 0 <= busy <= total


def test_the_shutdown_line_a_pykueue_client_logs_is_the_one_read_back(tmp_path: Path) -> None:
    from benchmarks.kueue_perf_managers import ManagerStats, _with_logged_requests
    from pykueue.kube.client import KubeClient

    client = KubeClient(None)
    client.requests_issued = 5
    client.requests_by_verb.update({"patch": 3, "get": 2})
    log = tmp_path / "manager.log"
    log.write_text(f"INFO shutting down: {client.request_summary()}\n")
    stats = _with_logged_requests(ManagerStats(1.0, 1.0, 1.0), log)
    assert stats.api_requests == 5 and stats.api_requests_by_verb == {"get": 2, "patch": 3}
    assert stats.throttled_s == 0.0


def test_the_events_share_of_api_requests_comes_from_the_managers_exit_lines(tmp_path: Path) -> None:
    from benchmarks.kueue_perf import events_api_share
    from benchmarks.kueue_perf_managers import ManagerStats, _with_logged_requests

    log = tmp_path / "pykueue.log"
    log.write_text("... INFO shutting down: 900 API requests {'patch': 880, 'get': 20}, 0.0s throttled "
                   "by ...\n"
                   "... INFO events: 250 events recorded, 80 created, 20 series updates, 150 rate-limited, "
                   "0 dropped on a full queue, 0 failed\n")
    stats = _with_logged_requests(ManagerStats(1.0, 1.0, 1.0), log)
    assert stats.events == {"recorded": 250, "created": 80, "series_updates": 20, "rate_limited": 150,
                            "dropped": 0, "failed": 0}
    assert events_api_share(stats) == 0.1
    assert events_api_share(ManagerStats(1.0, 1.0, 1.0)) is None


def test_compare_takes_per_class_medians_and_ratios_of_the_percentiles_and_rates_and_of_cycles() -> None:
    def run(manager: str, wall: float, p90: int, rate: float, cycles: int | None,
            stuck: int) -> dict[str, Any]:
        extra = {"tta_p50_ms": {"deep": p90 // 2}, "tta_p90_ms": {"deep": p90, "shallow": 9000},
                 "admissions_per_min": {"deep": rate, "shallow": None}, "never_admitted": {"deep": stuck},
                 "scheduling_cycles": cycles,
                 "cycles_per_min": None if cycles is None else round(cycles * 60 / wall, 1)}
        mode = "kueue" if manager == "kueue" else "own"
        return run_entry(manager, "v", _metrics(mode, 50.0, 100, wall, **extra), "")

    runs = [run("pykueue", 60.0, 100, 600.0, 6000, 0), run("pykueue", 60.0, 300, 400.0, None, 2),
            run("pykueue", 60.0, 200, 500.0, 3000, 1),
            run("kueue", 120.0, 1000, 100.0, 1200, 0), run("kueue", 120.0, 2000, 50.0, 2400, 0)]
    block = comparison(runs)["50/100"]
    ours, theirs, ratio = block["pykueue"], block["kueue"], block["ratio"]
    assert ours["tta_p90_ms"] == {"deep": 200.0, "shallow": 9000.0} and ours["tta_p50_ms"] == {"deep": 100.0}
    assert theirs["tta_p90_ms"] == {"deep": 1500.0, "shallow": 9000.0}
    assert ours["admissions_per_min"] == {"deep": 500.0, "shallow": None}  # no run measured "shallow"
    assert ours["never_admitted"] == {"deep": 1.0} and "never_admitted" not in ratio
    assert ours["scheduling_cycles"] == 4500.0  # the run whose page was not read is left out
    assert (ours["cycles_per_min"], theirs["cycles_per_min"]) == (4500.0, 900.0)
    assert ratio["tta_p90"] == {"deep": round(200 / 1500, 3), "shallow": 1.0}
    assert ratio["tta_p50"] == {"deep": round(100 / 750, 3)}
    assert ratio["admissions_per_min"] == {"deep": round(500 / 75, 3), "shallow": None}
    assert ratio["cycles_per_min"] == 5.0 and ratio["scheduling_cycles"] == round(4500 / 1800, 3)
    assert ratio["tta"] == {"large": 1.0, "small": 1.0}  # the mean's ratios as before


def test_scheduling_cycles_are_the_admission_attempts_of_either_manager() -> None:
    from benchmarks.kueue_perf_managers import scheduling_cycles

    m = KueueMetrics()
    assert scheduling_cycles(m.exposition().decode()) == 0  # no cycle yet
    for admitted in (True, False, False):
        m.admission_attempt(admitted, 0.001)
    assert scheduling_cycles(m.exposition().decode()) == 3
    kueue_page = """# TYPE kueue_admission_attempts_total counter
kueue_admission_attempts_total{replica_role="standalone",result="inadmissible"} 1710
kueue_admission_attempts_total{replica_role="standalone",result="success"} 540
kueue_admission_attempt_duration_seconds_count{replica_role="standalone",result="success"} 540
"""
    assert scheduling_cycles(kueue_page) == 2250


def test_pykueues_configuration_turns_fair_sharing_on_with_kueues_default_strategies(tmp_path: Path) -> None:
    from benchmarks.kueue_perf_managers import OwnManager
    from pykueue.manager.core.config import config_from

    plain = OwnManager(tmp_path / "kubeconfig", 50.0, 100, tmp_path).configuration()
    fair = OwnManager(tmp_path / "kubeconfig", 50.0, 100, tmp_path, fair_sharing=True).configuration()
    assert "fairSharing" not in plain and config_from(plain).fair_sharing is None
    assert fair == {**plain, "fairSharing": {"preemptionStrategies": [
        "LessThanOrEqualToFinalShare", "LessThanInitialShare"]}}
    assert config_from(fair).fair_sharing == ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
    assert fair["clientConnection"] == {"qps": 50.0, "burst": 100}


def test_the_configs_fair_sharing_reaches_both_managers(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    from benchmarks.kueue_perf_config import load_config
    from benchmarks.kueue_perf_managers import KueueManager, OwnManager

    built: list[tuple[float, int, str, bool]] = []

    def fake_binary(version: str, qps: float, burst: int, *, limiter: str, fair_sharing: bool,
                    report: object) -> Path:
        built.append((qps, burst, limiter, fair_sharing))
        return tmp_path / f"minimalkueue-{qps:g}"

    monkeypatch.setattr(kueue_perf.kueue_minimal, "binary", fake_binary)
    specs = kueue_perf.plan_runs(["own", "kueue"], [(50.0, 100), (300.0, 500)], 2)
    binaries = kueue_perf._kueue_binaries("v0.19.2", specs, "shared", True)
    assert built == [(50.0, 100, "shared", True), (300.0, 500, "shared", True)]  # once per setting
    for name, fair in (("deep-queue", True), ("quick", False)):
        config = load_config(kueue_perf.CONFIGS / f"{name}.yaml")
        bench = kueue_perf.Bench(tmp_path / "kubeconfig", config, name, "", tmp_path, None, None, "v0.19.2",
                                 binaries, "shared")
        own = bench.manager(None, specs[0])  # type: ignore[arg-type]
        assert isinstance(own, OwnManager) and own.fair_sharing is fair
        assert isinstance(bench.manager(None, specs[1]), KueueManager)  # type: ignore[arg-type]
