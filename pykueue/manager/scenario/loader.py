"""Read scenario files: ordinary Kubernetes objects plus an optional Scenario document.

Several files are read as one world, in order (like ``kubectl apply -f a -f b``), so a
queue set-up and a sample job can live in separate files. Each file may hold one
Scenario document; their steps run in file order and their configs are merged (a key
set twice to different values is an error).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SCENARIO_API = "pykueue.dev/v1alpha1"
STEP_KINDS = ("apply", "advance", "finish", "delete", "failNode", "checkState", "runUntilIdle")


class ScenarioError(ValueError):
    """Invalid scenario input; the message is the one-line reason printed by the CLI."""


@dataclass
class Scenario:
    objects: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    expect: dict[str, Any] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)


def _merge(into: dict[str, Any], more: dict[str, Any], path: str) -> None:
    for k, v in more.items():
        if k in into and isinstance(into[k], dict) and isinstance(v, dict):
            _merge(into[k], v, f"{path}.{k}")
        elif k in into and into[k] != v:
            raise ScenarioError(f"conflicting scenario config {path}.{k}")
        else:
            into[k] = v


def parse_documents(text: str, source: str, into: Scenario) -> None:
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        line = str(exc).splitlines()[0] if str(exc) else "malformed YAML"
        raise ScenarioError(f"{source}: malformed YAML: {line}") from exc
    seen_scenario = False
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict) or not doc.get("kind"):
            raise ScenarioError(f"{source}: a document is not a Kubernetes object (no kind)")
        if doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            into.objects.extend(doc["items"])
            continue
        if doc["kind"] != "Scenario":
            into.objects.append(doc)
            continue
        if seen_scenario:
            raise ScenarioError(f"{source}: more than one Scenario document")
        seen_scenario = True
        spec = doc.get("spec") or {}
        if not isinstance(spec, dict):
            raise ScenarioError(f"{source}: Scenario spec is not a mapping")
        into.names.append(str((doc.get("metadata") or {}).get("name", source)))
        _merge(into.config, spec.get("config") or {}, "config")
        _merge(into.expect, spec.get("expect") or {}, "expect")
        steps = spec.get("steps") or []
        if not isinstance(steps, list):
            raise ScenarioError(f"{source}: Scenario steps is not a list")
        for step in steps:
            if not isinstance(step, dict) or len(step) != 1 or next(iter(step)) not in STEP_KINDS:
                raise ScenarioError(f"{source}: invalid step {step!r}")
            into.steps.append(step)


def load(paths: Sequence[str | Path]) -> Scenario:
    scenario = Scenario()
    for p in paths:
        try:
            text = Path(p).read_text(encoding="utf-8")
        except OSError as exc:
            raise ScenarioError(f"{p}: {exc.strerror or exc}") from exc
        parse_documents(text, str(p), scenario)
    return scenario
