"""Every file under tests/scenarios/tas/ is one topology-aware scheduling behaviour."""

from __future__ import annotations

from pathlib import Path

import pytest

from .scenario_support import check

SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "scenarios" / "tas").glob("*.yaml"))


def test_there_are_enough_tas_scenarios() -> None:
    assert len(SCENARIOS) >= 40


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_tas_scenario(path: Path) -> None:
    problems = check([path])
    assert not problems, "\n".join(problems)
