"""The recorder computes Kueue's checker quantities from hand-made event sequences."""

from __future__ import annotations

from typing import Any

from benchmarks.kueue_perf_config import CLASS_LABEL
from benchmarks.kueue_perf_recorder import Recorder


def wl(name: str, cls: str, *conds: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {CLASS_LABEL: cls}},
            "status": {"conditions": [{"type": c, "status": "True"} for c in conds]}}


def cq(name: str, usage: str, pending: int = 0, reserving: int = 0, active: bool = True,
       quota: str = "20") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {CLASS_LABEL: "cq"}},
            "spec": {"resourceGroups": [{"flavors": [
                {"resources": [{"name": "cpu", "nominalQuota": quota}]}]}]},
            "status": {"pendingWorkloads": pending, "reservingWorkloads": reserving,
                       "flavorsUsage": [{"name": "rf", "resources": [{"name": "cpu", "total": usage}]}],
                       "conditions": [{"type": "Active", "status": "True" if active else "False"}]}}


def test_time_to_admission_is_first_admitted_event_minus_first_event() -> None:
    r = Recorder()
    r.workload_event(1000, wl("a", "small"))
    r.workload_event(1500, wl("b", "small"))
    r.workload_event(4000, wl("a", "small", "QuotaReserved", "Admitted"))
    r.workload_event(4500, wl("a", "small", "QuotaReserved", "Admitted"))  # repeated: no effect
    r.workload_event(2500, wl("b", "small", "QuotaReserved", "Admitted"))
    r.workload_event(100, wl("c", "large"))
    r.workload_event(400, wl("c", "large", "Admitted"))
    assert r.time_to_admission_ms() == {"small": (3000 + 1000) // 2, "large": 300}


def test_readmission_after_eviction_keeps_the_first_admission_and_counts_evictions() -> None:
    r = Recorder()
    r.workload_event(0, wl("a", "small"))
    r.workload_event(200, wl("a", "small", "Admitted"))
    r.workload_event(300, wl("a", "small", "Evicted"))
    r.workload_event(900, wl("a", "small", "Admitted"))
    r.workload_event(950, wl("a", "small", "Admitted", "Finished"))
    assert r.time_to_admission_ms() == {"small": 200}
    assert r.evictions() == 1
    assert r.evictions_by_cause() == {"small/unknown": 1}
    assert r.counts() == (0, 0, 1)


def test_evictions_are_told_apart_by_the_evicted_class_and_the_preemption_reason() -> None:
    def evicted(name: str, cls: str, preempted: str | None,
                evicted_reason: str = "Preempted") -> dict[str, Any]:
        obj = wl(name, cls)
        obj["status"]["conditions"] = [{"type": "Evicted", "status": "True", "reason": evicted_reason}] + (
            [{"type": "Preempted", "status": "True", "reason": preempted}] if preempted else [])
        return obj
    r = Recorder()
    r.workload_event(0, evicted("a", "small", "InCohortReclamation"))
    r.workload_event(10, wl("a", "small", "Admitted"))
    r.workload_event(20, evicted("a", "small", "InClusterQueue"))
    r.workload_event(30, evicted("b", "medium", "InClusterQueue"))
    r.workload_event(40, evicted("c", "medium", None, "PodsReadyTimeout"))
    assert r.evictions_by_cause() == {"medium/InClusterQueue": 1, "medium/PodsReadyTimeout": 1,
                                      "small/InClusterQueue": 1, "small/InCohortReclamation": 1}
    assert r.evicted_workloads() == (3, 2)  # a twice, b and c once


def test_no_eviction_counts_no_evicted_workload() -> None:
    r = Recorder()
    r.workload_event(0, wl("a", "small"))
    r.workload_event(10, wl("a", "small", "Admitted"))
    assert r.evicted_workloads() == (0, 0)


def test_usage_integrates_usage_between_status_events() -> None:
    r = Recorder()
    r.queue_event(0, cq("q1", "0"))
    r.queue_event(1000, cq("q1", "10"))        # 0 mCPU for 1 s
    r.queue_event(3000, cq("q1", "20"))        # 10 CPU for 2 s = 20,000,000 mCPU*ms
    r.queue_event(4000, cq("q1", "0"))         # 20 CPU for 1 s = 20,000,000
    r.queue_event(0, cq("q2", "500m"))
    r.queue_event(4000, cq("q2", "0"))         # 0.5 CPU for 4 s = 2,000,000
    # (20e6 + 20e6 + 2e6) * 100 / ((20000 + 20000) mCPU * 4000 ms)
    assert r.usage_pct() == {"cq": round(42e6 * 100 / (40000 * 4000), 2)}


def test_stop_condition_needs_active_queues_without_pending_or_reserving() -> None:
    r = Recorder()
    r.queue_event(0, cq("q1", "0", pending=3))
    assert r.expect_more()
    r.queue_event(10, cq("q1", "5", reserving=1))
    assert r.expect_more()
    r.queue_event(20, cq("q1", "0", pending=2, active=False))
    assert not r.expect_more()
    r.queue_event(30, cq("q1", "0"))
    assert not r.expect_more()


def test_counts_split_pending_admitted_finished() -> None:
    r = Recorder()
    r.workload_event(0, wl("a", "s"))
    r.workload_event(0, wl("b", "s", "Admitted"))
    r.workload_event(0, wl("c", "s", "Admitted", "Finished"))
    assert r.counts() == (1, 1, 1)


def sized(name: str, cpu: str, count: int, *conds: str) -> dict[str, Any]:
    obj = wl(name, "small", *conds)
    obj["spec"] = {"podSets": [{"name": "main", "count": count, "template": {"spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}]}
    return obj


def test_admitted_usage_integrates_observed_admitted_cpu_until_finished_or_lost() -> None:
    r = Recorder()
    r.queue_event(0, cq("q1", "0", quota="10"))
    r.queue_event(0, cq("q2", "0", quota="10"))  # 20 CPU of nominal quota in all
    r.workload_event(0, sized("a", "2", 3))  # 6 CPU
    r.workload_event(1000, sized("a", "2", 3, "QuotaReserved", "Admitted"))
    r.workload_event(2000, sized("a", "2", 3, "QuotaReserved", "Admitted"))  # repeated: no effect
    r.workload_event(3000, sized("a", "2", 3, "QuotaReserved", "Admitted", "Finished"))  # 6 CPU x 2 s
    r.workload_event(500, sized("b", "500m", 2))  # 1 CPU
    r.workload_event(1000, sized("b", "500m", 2, "QuotaReserved", "Admitted"))
    r.workload_event(2000, sized("b", "500m", 2, "Evicted"))  # lost Admitted: 1 CPU x 1 s
    r.workload_event(3000, sized("b", "500m", 2, "QuotaReserved", "Admitted"))
    r.workload_event(4000, sized("b", "500m", 2, "QuotaReserved", "Admitted", "Finished"))  # 1 CPU x 1 s
    # (12 + 1 + 1) CPU-seconds over 20 CPU x 4 s
    assert r.admitted_usage_pct() == round(14 * 100 / (20 * 4), 2)


def test_admitted_usage_is_zero_before_anything_finished() -> None:
    r = Recorder()
    assert r.admitted_usage_pct() == 0.0
    r.queue_event(0, cq("q1", "0"))
    r.workload_event(0, sized("a", "1", 1, "Admitted"))
    assert r.admitted_usage_pct() == 0.0


def queued(name: str, priority: int, *conds: str, preemptor: str = "") -> dict[str, Any]:
    obj = wl(name, "c", *conds)
    obj["spec"] = {"queueName": "lq", "priority": priority}
    if preemptor:
        obj["status"]["conditions"].append(
            {"type": "Preempted", "status": "True", "reason": "InClusterQueue",
             "message": f"Preempted to accommodate a workload (UID: uid-{preemptor}, JobUID: j) due to x"})
    return obj


def test_preemption_trace_tells_admissions_past_a_waiting_higher_priority_workload() -> None:
    r = Recorder()
    r.workload_event(0, queued("big", 200))
    r.workload_event(10, queued("small", 50))
    r.workload_event(20, queued("small", 50, "Admitted"))  # past "big", still pending
    r.workload_event(1020, queued("small", 50, "Admitted", "Evicted", preemptor="big"))
    r.workload_event(1030, queued("big", 200, "Admitted"))  # nothing higher waits
    r.workload_event(1040, queued("late", 300))
    r.workload_event(1045, queued("small", 50, "Evicted"))  # its quota released
    r.workload_event(1050, queued("small", 50, "Admitted"))  # readmitted past "late"
    r.workload_event(1550, queued("small", 50, "Admitted", "Evicted", preemptor="late"))
    r.workload_event(1560, queued("other", 50, "Admitted"))
    r.workload_event(1570, queued("other", 50, "Admitted", "Evicted", preemptor="nobody"))
    trace = r.preemption_trace()
    assert trace["admitted_past_higher"] == 3  # small twice, other past "late"
    preemptors = ("preemptor_there_before", "preemptor_came_after", "preemptor_unknown")
    assert [trace[k] for k in preemptors] == [2, 0, 1]
    held = (trace["victim_admitted_ms_p50"], trace["victim_admitted_ms_p90"])
    assert held == (500, 1000)  # of 10, 500, 1000
    assert (trace["held_ms_p50"], trace["held_ms_p90"]) == (None, None)  # nothing finished
    assert (trace["finish_write_ms_p50"], trace["finish_write_ms_p90"]) == (None, None)
    assert (trace["finish_late_ms_p50"], trace["finish_echo_ms_p90"]) == (None, None)


def test_preemption_trace_tells_how_long_workloads_never_evicted_stay_admitted() -> None:
    r = Recorder()
    for i, (admitted, finished) in enumerate([(100, 300), (100, 1100), (200, 700), (0, 50)]):
        r.workload_event(0, queued(f"w{i}", 50))
        r.workload_event(admitted, queued(f"w{i}", 50, "Admitted"))
        r.workload_event(finished, queued(f"w{i}", 50, "Admitted", "Finished"))
    r.workload_event(0, queued("victim", 50))
    r.workload_event(10, queued("victim", 50, "Admitted"))
    r.workload_event(20, queued("victim", 50, "Admitted", "Evicted"))
    r.workload_event(30, queued("victim", 50, "Admitted"))
    r.workload_event(9000, queued("victim", 50, "Admitted", "Finished"))  # evicted once: left out
    r.finish_writes_ms.extend([40.0, 5.0, 20.0])  # the runner's finish writes, as they end
    r.finish_late_ms.extend([3.0, 1.0, 2.0, 9.0])  # its timers, past their due time
    r.finish_echo_ms.extend([300.0, 100.0])  # from a write's return to its watch event
    trace = r.preemption_trace()
    assert (trace["held_ms_p50"], trace["held_ms_p90"]) == (500, 1000)  # of 50, 200, 500, 1000
    assert (trace["finish_write_ms_p50"], trace["finish_write_ms_p90"]) == (20, 40)
    assert (trace["finish_late_ms_p50"], trace["finish_late_ms_p90"]) == (3, 9)
    assert (trace["finish_echo_ms_p50"], trace["finish_echo_ms_p90"]) == (300, 300)


def test_preemption_trace_counts_a_preemptor_created_after_its_victim_was_admitted() -> None:
    r = Recorder()
    r.workload_event(0, queued("small", 50))
    r.workload_event(5, queued("small", 50, "Admitted"))
    r.workload_event(100, queued("big", 200))
    r.workload_event(400, queued("small", 50, "Admitted", "Evicted", preemptor="big"))
    trace = r.preemption_trace()
    assert trace["admitted_past_higher"] == 0
    assert (trace["preemptor_there_before"], trace["preemptor_came_after"]) == (0, 1)
    assert trace["victim_admitted_ms_p50"] == 395
    assert trace["first_admission_s"] < 0.1  # "small", 5 ms after its creation
    assert (trace["evicted_at_s_p10"], trace["evicted_at_s_p90"]) == (0, 0)  # 0.4 s in: whole seconds


def test_preemption_trace_tells_when_the_first_admission_and_the_evictions_came() -> None:
    r = Recorder()
    assert r.preemption_trace()["first_admission_s"] is None  # nothing admitted
    r.workload_event(1000, queued("a", 50))
    r.workload_event(3500, queued("a", 50, "Admitted"))
    for i, at in enumerate((5000, 21000, 61000, 91000)):
        r.workload_event(at - 10, queued(f"v{i}", 50, "Admitted"))
        r.workload_event(at, queued(f"v{i}", 50, "Admitted", "Evicted"))
    trace = r.preemption_trace()
    assert trace["first_admission_s"] == 2.5  # from the first creation, not the recorder's start
    at = (trace["evicted_at_s_p10"], trace["evicted_at_s_p50"], trace["evicted_at_s_p90"])
    assert at == (4, 60, 90)  # of 4, 20, 60, 90 s


def test_tta_percentiles_leave_out_the_never_admitted_which_the_mean_counts_zero() -> None:
    r = Recorder()
    for i, wait in enumerate((100, 200, 300, 400, 500, 600, 700, 800, 900, 1000)):
        r.workload_event(1000, wl(f"d{i}", "deep"))
        r.workload_event(1000 + wait, wl(f"d{i}", "deep", "QuotaReserved", "Admitted"))
    r.workload_event(1000, wl("stuck-1", "deep"))
    r.workload_event(1000, wl("stuck-2", "deep"))
    r.workload_event(0, wl("s", "shallow"))  # never admitted: no percentile for its class
    # Of the ten waits 100..1000 ms, nearest rank below: the 6th and the 10th.
    assert r.time_to_admission_pct_ms(0.5) == {"deep": 600, "shallow": None}
    assert r.time_to_admission_pct_ms(0.9) == {"deep": 1000, "shallow": None}
    assert r.never_admitted() == {"deep": 2, "shallow": 1}
    # Kueue's mean counts the two stuck ones as 0: 5,500 ms over 12 workloads.
    assert r.time_to_admission_ms() == {"deep": 5500 // 12, "shallow": 0}


def test_tta_percentiles_take_the_first_admission_of_a_readmitted_workload() -> None:
    r = Recorder()
    r.workload_event(0, wl("a", "c"))
    r.workload_event(50, wl("a", "c", "Admitted"))
    r.workload_event(60, wl("a", "c", "Evicted"))
    r.workload_event(5000, wl("a", "c", "Admitted"))
    assert r.time_to_admission_pct_ms(0.9) == {"c": 50}
    assert r.never_admitted() == {"c": 0}


def test_admissions_per_minute_span_the_first_creation_to_the_last_first_admission() -> None:
    r = Recorder()
    # Class "deep": created from 2 s, four admitted, the last first admission at 32 s: 4 in 0.5 min.
    for i, (created, admitted) in enumerate(((2000, 3000), (2500, 10000), (3000, 20000), (4000, 32000))):
        r.workload_event(created, wl(f"d{i}", "deep"))
        r.workload_event(admitted, wl(f"d{i}", "deep", "Admitted"))
    r.workload_event(33000, wl("d0", "deep", "Evicted"))
    r.workload_event(90000, wl("d0", "deep", "Admitted"))  # readmitted: neither counted nor the end
    r.workload_event(5000, wl("d9", "deep"))  # never admitted: not counted
    # Class "fast": one admitted 600 ms after it was created: one in 0.01 min.
    r.workload_event(100, wl("f", "fast"))
    r.workload_event(700, wl("f", "fast", "Admitted"))
    r.workload_event(0, wl("n", "never"))
    r.workload_event(10, wl("z", "zero", "Admitted"))  # admitted on its first event: no span
    assert r.admissions_per_min() == {"deep": 8.0, "fast": 100.0, "never": None, "zero": None}


def test_a_backlog_waits_from_the_managers_start() -> None:
    r = Recorder()
    # Two created before the manager was ready at 10 s, one after: the first two wait from
    # 10 s, the third from its creation.
    r.workload_event(1000, wl("b0", "deep"))
    r.workload_event(2000, wl("b1", "deep"))
    r.start_ms = 10000
    r.workload_event(12000, wl("b2", "deep"))
    r.workload_event(11000, wl("b0", "deep", "Admitted"))
    r.workload_event(13000, wl("b1", "deep", "Admitted"))
    r.workload_event(16000, wl("b2", "deep", "Admitted"))
    # Waits of 1, 3 and 4 s.
    assert r.time_to_admission_ms() == {"deep": 2666}
    assert r.time_to_admission_pct_ms(0.5) == {"deep": 3000}
    # Three admitted between the start at 10 s and 16 s: 30 a minute.
    assert r.admissions_per_min() == {"deep": 30.0}
