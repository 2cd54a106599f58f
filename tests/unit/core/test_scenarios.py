"""Every file under tests/scenarios/ is one behaviour with its expected outcome."""

from __future__ import annotations

from pathlib import Path

import pytest

from .scenario_support import check

SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "scenarios").glob("*.yaml"))


def test_there_are_enough_scenarios() -> None:
    assert len(SCENARIOS) >= 60


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    problems = check([path])
    assert not problems, "\n".join(problems)
