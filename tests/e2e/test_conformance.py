"""``pykueue dev conformance`` on a small fixed subset of the ported Kueue cases, in CI.

Real Kueue (built from its Go module by ``make test``) runs against a private etcd and API
server, not the shared dev cluster. The subset covers each area the harness drives: plain
admission, flavor assignment, preemption (Kueue evicts, the harness finishes the eviction of
bare Workloads), fair sharing, a Job turned into a Workload by Kueue's own job controller, and
topology-aware placement. A scenario with a kind the harness cannot create must come back
skipped, never agreeing. The full run is one command (README, "Kueue conformance").

Each case here has its waiting workloads in one ClusterQueue, which the harness holds until
Kueue has built its cache: with waiting workloads in several queues Kueue's first cycles may
run before all of its queues and cohorts are in, so such a case can come out differently from
run to run on a loaded machine (`scheduler/admit-in-different-cohorts` did once in a full run).
"""

from __future__ import annotations

import json
import subprocess
import sys

from pykueue.devcluster import kueue_build

from .conftest import REPO

PORTED = "tests/scenarios/kueue"
SUBSET = (
    f"{PORTED}/scheduler/borrow-after-all-flavors.yaml",
    f"{PORTED}/flavorassigner/borrow-try-next-flavor-found-the-second-flavor.yaml",
    f"{PORTED}/scheduler/minimal-preemptions-when-target-queue-is-exhausted.yaml",
    f"{PORTED}/preemption/cq-with-higher-weight-can-preempt-more.yaml",
    f"{PORTED}/tas/block-required-4-pods-fit-into-one-host-each-bestfit.yaml",
    "tests/scenarios/job-becomes-workload.yaml",
)
UNSUPPORTED = "tests/scenarios/pytorchjob-master-and-workers.yaml"


def test_real_kueue_agrees_on_the_ci_subset_and_what_it_cannot_run_is_skipped() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pykueue", "dev", "conformance", "--json", *SUBSET, UNSUPPORTED],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    per_scenario = {entry["scenario"]: entry for entry in map(json.loads, lines[:-1])}
    summary = json.loads(lines[-1])
    assert set(per_scenario) == {*SUBSET, UNSUPPORTED}
    assert summary["kueue_version"] == kueue_build.pinned()
    assert summary["scenarios"] == len(SUBSET) + 1
    assert summary["differences"] == {}, summary["differences"]
    assert summary["agree"] == len(SUBSET)
    skipped = per_scenario[UNSUPPORTED]
    assert skipped["result"] == "skipped"
    assert any("PyTorchJob" in reason for reason in skipped["details"]), skipped
    assert list(summary["skipped"]) == [UNSUPPORTED]
