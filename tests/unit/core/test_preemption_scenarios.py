"""Scenario files for preemption, fair sharing and admission fair sharing: one behaviour each."""

from __future__ import annotations

from pathlib import Path

import pytest

from .scenario_support import check

ROOT = Path(__file__).resolve().parents[2] / "scenarios"
SCENARIOS = sorted([*(ROOT / "preemption").glob("*.yaml"), *(ROOT / "fair-sharing").glob("*.yaml"),
                    *(ROOT / "admission-fair-sharing").glob("*.yaml")])


def test_there_are_preemption_scenarios() -> None:
    assert len(SCENARIOS) >= 40


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_preemption_scenario(path: Path) -> None:
    problems = check([path])
    assert not problems, "\n".join(problems)
