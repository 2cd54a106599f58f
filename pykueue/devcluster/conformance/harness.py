"""``pykueue dev conformance``: each scenario file through real Kueue and through ``simulate``.

One private control plane and one Kueue binary serve the whole run; between scenarios
Kueue is stopped and every scenario object deleted, which takes well under a second where
a fresh etcd and API server take several. Output: one line per scenario (agree, differ
with each difference, or skipped with why) and, last, one JSON line with the totals.
"""

from __future__ import annotations

import copy
import json
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pykueue.devcluster import kueue_build
from pykueue.devcluster.build import binary_paths, build, missing_binaries
from pykueue.devcluster.conformance import compare, kueue_install
from pykueue.devcluster.conformance.control_plane import ControlPlane
from pykueue.devcluster.conformance.driver import MAX_ADVANCE_S, ScenarioRun, reset
from pykueue.devcluster.conformance.kueue_process import KueueProcess
from pykueue.devcluster.conformance.objects import KINDS
from pykueue.manager.scenario.loader import Scenario, ScenarioError, load
from pykueue.manager.scenario.report import result
from pykueue.manager.scenario.runner import Simulation

Report = Callable[[str], None]
NAMESPACED_KINDS = frozenset(kind for kind, ref in KINDS.items() if ref.namespaced)
_NEEDED = ("etcd", "kube-apiserver")


@dataclass
class Verdict:
    path: str
    result: str  # agree | differ | skipped
    details: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        text = f"{self.path}: {self.result}"
        if self.details:
            text += ": " + "; ".join(self.details)
        if self.notes:
            text += f" (notes: {'; '.join(self.notes)})"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.path,
            "result": self.result,
            "details": self.details,
            "notes": self.notes,
            "seconds": round(self.seconds, 1),
        }


def load_inputs(paths: list[str]) -> list[tuple[str, Scenario]]:
    """Every file parsed and simulated up front, so bad input fails before any start-up."""
    out = []
    for path in paths:
        scenario = load([path])
        simulate_scenario(scenario)
        out.append((path, scenario))
    return out


def summary(verdicts: list[Verdict], version: str) -> dict[str, Any]:
    return {
        "scenarios": len(verdicts),
        "agree": sum(v.result == "agree" for v in verdicts),
        "kueue_version": version,
        "differences": {v.path: v.details for v in verdicts if v.result == "differ"},
        "skipped": {v.path: v.details for v in verdicts if v.result == "skipped"},
    }


def with_uids(scenario: Scenario, uids: Mapping[tuple[str, str, str], str]) -> Scenario:
    """The scenario with the UIDs the API server gave its objects. Kueue breaks ties between
    otherwise equal workloads (preemption candidates, queue order) by UID, which a file
    rarely sets; ``simulate`` must see the same ones to face the same ties."""

    def stamped(obj: Any) -> Any:
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            return obj
        meta = obj["metadata"]
        ns = str(meta.get("namespace") or "default") if obj.get("kind") in NAMESPACED_KINDS else ""
        uid = uids.get((str(obj.get("kind")), ns, str(meta.get("name"))))
        return obj if uid is None else {**obj, "metadata": {**meta, "uid": uid}}

    steps = []
    for step in scenario.steps:
        arg = step.get("apply")
        if isinstance(arg, list):
            step = {"apply": [stamped(o) for o in arg]}
        elif isinstance(arg, dict):
            step = {"apply": stamped(arg)}
        steps.append(step)
    return replace(scenario, objects=[stamped(o) for o in scenario.objects], steps=steps)


def simulate_scenario(scenario: Scenario) -> dict[str, Any]:
    """``simulate --json``'s result; the scenario is left as it was."""
    sim = Simulation(copy.deepcopy(scenario))
    sim.run()
    return result(sim.core)


def judge(path: str, outcome_workloads: list[dict[str, Any]], ours: dict[str, Any]) -> Verdict:
    theirs = compare.kueue_views(outcome_workloads, ours.get("workloads") or {})
    diffs = compare.differences(theirs, ours.get("workloads") or {})
    return Verdict(path, "differ" if diffs else "agree", diffs)


def run(
    paths: list[str],
    version: str | None,
    *,
    as_json: bool = False,
    max_advance_s: float = MAX_ADVANCE_S,
    report: Report = print,
) -> dict[str, Any]:
    inputs = load_inputs(paths)
    version = kueue_build.check_version(version) if version else kueue_build.pinned()
    kueue_binary = kueue_build.binary(kueue_build.MANAGER, version, report=report)
    source = kueue_build.source_dir(version, report=report)
    provisioning = kueue_install.provisioning_request_crds(
        kueue_build.dependency_dir(kueue_install.AUTOSCALER_APIS, version, report=report)
    )
    missing = [name for name in _NEEDED if name in missing_binaries()]
    if missing:
        build(only=tuple(missing), report=report)
    verdicts: list[Verdict] = []
    with tempfile.TemporaryDirectory(prefix="pykueue-conformance-") as tmp:
        plane = ControlPlane(binary_paths(), Path(tmp) / "control-plane")
        started = time.monotonic()
        kueue: KueueProcess | None = None
        try:
            plane.start()
            kueue = KueueProcess(kueue_binary, plane.kubeconfig, Path(tmp) / "kueue", plane.client)
            kueue_install.install(plane.client, source, kueue.listeners.webhook_port, extra_crds=provisioning)
            served = kueue_install.served_versions(plane.client)
            report(f"control plane and Kueue {version} CRDs ready in {time.monotonic() - started:.1f}s")
            for path, scenario in inputs:
                verdict = _one(plane, kueue, served, path, scenario, max_advance_s)
                verdicts.append(verdict)
                print(json.dumps(verdict.to_json()) if as_json else verdict.line(), flush=True)
        finally:
            if kueue is not None:
                kueue.stop()
            plane.stop()
    return summary(verdicts, version)


def _one(
    plane: ControlPlane,
    kueue: KueueProcess,
    served: dict[str, str],
    path: str,
    scenario: Scenario,
    max_advance_s: float,
) -> Verdict:
    started = time.monotonic()
    kueue.stop()
    reset(plane.client)
    runner = ScenarioRun(plane.client, kueue, served, max_advance_s)
    try:
        outcome = runner.run(scenario)
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        verdict = Verdict(path, "differ", [f"harness error: {first}"])
    else:
        if outcome.skipped:
            verdict = Verdict(path, "skipped", outcome.skipped)
        else:
            verdict = judge(path, outcome.workloads, simulate_scenario(with_uids(scenario, outcome.uids)))
        verdict.notes = outcome.notes
    finally:
        kueue.stop()
    verdict.seconds = time.monotonic() - started
    return verdict


def main(paths: list[str], version: str | None, as_json: bool) -> int:
    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    def terminated(signum: int, _frame: object) -> None:
        # As for Ctrl-C: unwind, so etcd, the API server and Kueue are stopped on the way out.
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminated)
    try:
        result = run(paths, version, as_json=as_json, report=progress)
    except ScenarioError as exc:
        print(f"pykueue dev conformance: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0
