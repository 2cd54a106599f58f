"""Run scenario files and compare their ``expect`` block with the simulation result.

Matching is by subset: every key in ``expect`` must be in the result with an equal value;
mappings are compared recursively, lists exactly. A ``reason`` is matched as a substring
(messages carry numbers and names worth checking without repeating whole sentences).
``expect.jobs`` maps a job's ``namespace/name`` to the expectation of each Workload built
for it, so tests need not spell generated names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pykueue.manager.scenario.loader import load
from pykueue.manager.scenario.report import result
from pykueue.manager.scenario.runner import Simulation


def mismatches(expected: Any, actual: Any, path: str = "") -> list[str]:
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected a mapping, got {actual!r}"]
        out: list[str] = []
        for k, v in expected.items():
            if k not in actual:
                out.append(f"{path}.{k}: missing")
            else:
                out.extend(mismatches(v, actual[k], f"{path}.{k}"))
        return out
    if path.endswith(".reason") and isinstance(expected, str) and isinstance(actual, str):
        return [] if expected in actual else [f"{path}: {expected!r} not in {actual!r}"]
    return [] if expected == actual else [f"{path}: expected {expected!r}, got {actual!r}"]


def run_scenario(paths: list[Path]) -> tuple[Simulation, dict[str, Any]]:
    sim = Simulation(load(paths))
    sim.run()
    return sim, result(sim.core)


def check(paths: list[Path]) -> list[str]:
    sim, data = run_scenario(paths)
    expect = dict(sim.scenario.expect)
    assert expect, "a scenario must carry an expect block"
    problems: list[str] = []
    for job, want in (expect.pop("jobs", None) or {}).items():
        keys = sim.job_workloads.get(job)
        if not keys:
            problems.append(f"jobs.{job}: no workloads")
            continue
        if "count" in want:
            want = dict(want)
            n = want.pop("count")
            if n != len(keys):
                problems.append(f"jobs.{job}: {len(keys)} workloads, expected {n}")
        for key in keys:
            problems.extend(mismatches(want, data["workloads"][key], f"jobs.{job}[{key}]"))
    problems.extend(mismatches(expect, data))
    return problems
