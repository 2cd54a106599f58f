"""The test-only fault hook: off unless its variable is set, and nothing we ship sets it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykueue.manager.runtime.fault_hooks import (
    ENVIRONMENT_VARIABLE,
    FAIL_SCHEDULING,
    FaultHooks,
    InjectedFault,
)

REPO = Path(__file__).resolve().parents[3]


def test_off_without_the_variable_even_when_the_file_exists(tmp_path: Path) -> None:
    (tmp_path / FAIL_SCHEDULING).touch()
    FaultHooks.from_environment({}).check(FAIL_SCHEDULING)


def test_raises_once_the_test_creates_the_file(tmp_path: Path) -> None:
    hooks = FaultHooks.from_environment({ENVIRONMENT_VARIABLE: str(tmp_path)})
    hooks.check(FAIL_SCHEDULING)
    (tmp_path / FAIL_SCHEDULING).touch()
    with pytest.raises(InjectedFault, match=FAIL_SCHEDULING):
        hooks.check(FAIL_SCHEDULING)


def test_nothing_shipped_sets_the_variable() -> None:
    shipped = [REPO / "Dockerfile", *sorted((REPO / "manifests").rglob("*.yaml"))]
    charts = REPO / "charts"
    if charts.is_dir():
        shipped += sorted(p for p in charts.rglob("*") if p.is_file())
    assert len(shipped) > 5
    assert [str(p.relative_to(REPO)) for p in shipped if ENVIRONMENT_VARIABLE in p.read_text()] == []
