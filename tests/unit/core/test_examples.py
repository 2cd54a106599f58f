"""The scenario files under examples/ keep their promises, alone and all together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykueue.cli import main as cli_main

from .scenario_support import check

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.yaml"))


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_outcome(path: Path) -> None:
    problems = check([path])
    assert not problems, "\n".join(problems)


def test_all_examples_run_as_one_world(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["simulate", "--json", *map(str, EXAMPLES)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"single-cq", "team-a-cq", "team-b-cq", "gated-cq", "ready-cq"} <= set(data["clusterQueues"])
    assert data["workloads"]["team-b/analysis"]["status"] == "Admitted"
