"""The Helm chart's CRDs (``charts/pykueue/crds/``): byte copies of ``manifests/crds/``.

Helm installs a chart's ``crds/`` directory as it is, before the templates, and cannot read
files outside the chart, so the chart carries copies. ``python -m tests.unit.deploy.chart_crds
--write`` refreshes them after ``make crds``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SOURCE = REPO / "manifests" / "crds"
CHART_CRDS = REPO / "charts" / "pykueue" / "crds"


def stale() -> list[str]:
    """Files that differ, are missing from the chart, or are extra in it."""
    source = {p.name: p.read_bytes() for p in SOURCE.glob("*.yaml")}
    chart = {p.name: p.read_bytes() for p in CHART_CRDS.glob("*.yaml")}
    return sorted(name for name in source.keys() | chart.keys() if source.get(name) != chart.get(name))


def write() -> None:
    for path in CHART_CRDS.glob("*.yaml"):
        path.unlink()
    for path in SOURCE.glob("*.yaml"):
        shutil.copyfile(path, CHART_CRDS / path.name)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        print("usage: python -m tests.unit.deploy.chart_crds --write", file=sys.stderr)
        raise SystemExit(2)
    write()
