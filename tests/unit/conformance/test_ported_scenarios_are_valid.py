"""The ported Kueue table cases are objects a real API server with Kueue accepts: the
harness creates them through the API, so one invalid object turns a case into a harness
error (Kueue's unit tests build their objects without validation)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import registry
from pykueue.api.validation import validate
from pykueue.devcluster.conformance import objects
from pykueue.webhook import crd_rules

PORTED = Path(__file__).resolve().parents[2] / "scenarios" / "kueue"
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_RULES = {
    "ClusterQueue": crd_rules.validate_cluster_queue,
    "Cohort": crd_rules.validate_cohort,
    "ResourceFlavor": crd_rules.validate_resource_flavor,
    "LocalQueue": crd_rules.validate_local_queue,
    "Workload": crd_rules.validate_workload,
}


def _problems(raw: dict[str, Any]) -> list[str]:
    """What the API server would refuse in the create and status requests the harness makes."""
    kind = str(raw.get("kind"))
    if kind not in objects.KINDS:
        return [f"{kind} is not a kind the harness can create"]
    try:
        req = objects.request(raw, {}, "2026-01-01T00:00:00Z")
    except objects.Unsupported:
        return []  # the harness reports the case as skipped, whatever the object says
    obj = {**req.body, **({"status": req.status} if req.status is not None else {})}
    name = str((obj.get("metadata") or {}).get("name") or "")
    out = (
        [] if _NAME.fullmatch(name) and len(name) <= 253 else [f"metadata.name {name!r} is not a valid name"]
    )
    if (
        str(obj.get("apiVersion", "")).startswith("kueue.x-k8s.io/")
        and registry.model_for(str(obj["apiVersion"]), kind) is not None
    ):
        out += validate(registry.parse(obj))
    rule = _RULES.get(kind)
    if rule is not None:
        out += [str(e) for e in rule(obj, None)]
    return out


@pytest.mark.parametrize("path", sorted(PORTED.glob("*/*.yaml")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_object_of_a_ported_case_is_valid(path: Path) -> None:
    problems = [
        f"{d.get('kind')} {(d.get('metadata') or {}).get('name')}: {p}"
        for d in yaml.safe_load_all(path.read_text())
        if isinstance(d, dict) and d.get("kind") != "Scenario"
        for p in _problems(d)
    ]
    assert not problems, "\n".join(problems)
