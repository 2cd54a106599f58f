"""The Helm chart's files that need no helm to check: CRD copies, versions, the schema.

Rendering (``helm lint``, ``helm template`` against ``manifests/``) is in
``tests/e2e/test_helm_chart.py``, beside the other tests that run built binaries.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

import yaml

from tests.conftest import REPO
from tests.unit.deploy.chart_crds import CHART_CRDS, SOURCE, stale

CHART = REPO / "charts" / "pykueue"


def test_chart_crds_are_byte_copies_of_the_manifests() -> None:
    assert len(list(SOURCE.glob("*.yaml"))) == 11
    assert not stale(), (f"{CHART_CRDS.relative_to(REPO)} differs from {SOURCE.relative_to(REPO)} in "
                         f"{stale()}: run `python -m tests.unit.deploy.chart_crds --write`")


def test_chart_versions_follow_the_project() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert (chart["version"], chart["appVersion"]) == (version, version)


def _undeclared(node: Any, spec: dict[str, Any], path: str) -> list[str]:
    if not isinstance(node, dict) or spec.get("additionalProperties") is not False:
        return []
    properties = spec["properties"]
    missing = [f"{path}.{key}" for key in node if key not in properties]
    return missing + [problem for key, value in node.items() if key in properties
                      for problem in _undeclared(value, properties[key], f"{path}.{key}")]


def test_every_default_value_is_declared_in_the_schema() -> None:
    """values.schema.json refuses keys it does not know: each default must be declared."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["additionalProperties"] is False
    assert _undeclared(values, schema, "values") == []
    assert _undeclared({"controllerManager": {"replica": 1}}, schema, "values") == [
        "values.controllerManager.replica"]
