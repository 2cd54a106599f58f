"""Kueue's own unit-test tables, ported case by case to scenario files.

Every file under tests/scenarios/kueue/ names the Kueue test case it ports in the Scenario
document's ``pykueue.dev/source`` annotation. A file marked ``pykueue.dev/deviation`` (we differ
on purpose) or ``pykueue.dev/known-bug`` (we differ by mistake) must not meet its expectation:
once it does, the marker is stale and this test says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.core.scenario_support import check

ROOT = Path(__file__).resolve().parents[2] / "scenarios" / "kueue"
FILES = sorted(ROOT.rglob("*.yaml"))
SOURCE = "pykueue.dev/source"
MARKERS = ("pykueue.dev/deviation", "pykueue.dev/known-bug")
# Lower bound on the number of ported cases; raise it when porting more.
MIN_PORTED = 406


def scenario_annotations(path: Path) -> dict[str, Any]:
    """The Scenario document's metadata.annotations (the loader does not keep them)."""
    for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        if isinstance(doc, dict) and doc.get("kind") == "Scenario":
            ann = (doc.get("metadata") or {}).get("annotations") or {}
            return dict(ann) if isinstance(ann, dict) else {}
    return {}


def test_enough_cases_are_ported() -> None:
    assert len(FILES) >= MIN_PORTED, f"only {len(FILES)} ported Kueue cases, expected at least {MIN_PORTED}"


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_kueue_case(path: Path) -> None:
    ann = scenario_annotations(path)
    assert str(ann.get(SOURCE) or "").strip(), f"{path.name}: no {SOURCE} annotation"
    marked = [m for m in MARKERS if ann.get(m)]
    problems = check([path])
    if marked:
        assert problems, f"{path.name} now meets Kueue's expectation: remove its {marked[0]} annotation"
    else:
        assert not problems, "\n".join(problems)
