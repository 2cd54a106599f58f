"""The generated CRDs: up to date, structural, one storage version, and faithful to Kueue's."""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import crdgen
from pykueue.api.registry import KINDS

REPO = Path(__file__).resolve().parents[3]
CRD_DIR = REPO / "manifests" / "crds"
CONSTRAINTS = ("enum", "default", "maxItems", "minItems", "maxLength", "minLength", "minimum", "maximum",
               "pattern", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
               "x-kubernetes-int-or-string")


def _check(out: Path) -> int:
    return crdgen.main(argparse.Namespace(out=out, check=True))


def _committed() -> list[dict[str, Any]]:
    return [yaml.safe_load((CRD_DIR / crdgen.file_name(kind)).read_text()) for kind in KINDS]


def test_committed_crds_are_up_to_date() -> None:
    assert _check(CRD_DIR) == 0


def test_check_fails_on_stale_or_missing_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert crdgen.main(argparse.Namespace(out=tmp_path, check=False)) == 0
    assert _check(tmp_path) == 0
    stale = tmp_path / "kueue.x-k8s.io_workloads.yaml"
    stale.write_text(stale.read_text().replace("maxItems: 18", "maxItems: 19", 1))
    missing = tmp_path / "kueue.x-k8s.io_topologies.yaml"
    missing.unlink()
    capsys.readouterr()
    assert _check(tmp_path) == 1
    err = capsys.readouterr().err
    assert "kueue.x-k8s.io_workloads.yaml" in err and "kueue.x-k8s.io_topologies.yaml" in err
    assert "kueue.x-k8s.io_clusterqueues.yaml" not in err
    shutil.rmtree(tmp_path)


def _nodes(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, node
    for key, child in (node.get("properties") or {}).items():
        yield from _nodes(child, f"{path}.{key}")
    if isinstance(node.get("items"), dict):
        yield from _nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _nodes(node["additionalProperties"], f"{path}{{}}")


def _fits(value: Any, node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if node.get("x-kubernetes-int-or-string"):
        return isinstance(value, int | str) and not isinstance(value, bool)
    if "enum" in node and value not in node["enum"]:
        return False
    if kind == "object":
        props = node.get("properties") or {}
        return isinstance(value, dict) and all(k in props and _fits(v, props[k]) for k, v in value.items())
    expected = {"string": str, "integer": int, "boolean": bool, "array": list, "number": int | float}[kind]
    return isinstance(value, expected)


@pytest.mark.parametrize("crd", _committed(), ids=lambda c: c["spec"]["names"]["kind"])
def test_crd_is_structural_with_one_storage_version(crd: dict[str, Any]) -> None:
    versions = crd["spec"]["versions"]
    assert [v["name"] for v in versions] == ["v1beta1", "v1beta2"]
    assert [v["name"] for v in versions if v["storage"]] == ["v1beta2"]
    assert all(v["served"] for v in versions)
    webhook = crd["spec"]["conversion"]["webhook"]
    assert crd["spec"]["conversion"]["strategy"] == "Webhook"
    assert webhook["conversionReviewVersions"] == ["v1"]
    assert webhook["clientConfig"]["service"]["path"] == "/convert"
    for version in versions:
        root = version["schema"]["openAPIV3Schema"]
        for path, node in _nodes(root):
            where = f"{version['name']}{path}"
            assert "$ref" not in node, where
            assert ("type" in node or node.get("x-kubernetes-int-or-string")
                    or node.get("x-kubernetes-preserve-unknown-fields")), where
            if "default" in node:
                assert _fits(node["default"], node), where
            for name in node.get("required", []):
                assert name in node.get("properties", {}), f"{where}: required {name} undeclared"
            for key in node.get("x-kubernetes-list-map-keys", []):
                item = node["items"]
                assert key in item.get("required", []) or "default" in item["properties"][key], where
        assert root["properties"]["metadata"] == {"type": "object"}


def _reference_versions(shared_dir: Path, plural: str) -> dict[str, dict[str, Any]]:
    path = shared_dir / "reference" / "kueue-crds" / f"kueue.x-k8s.io_{plural}.yaml"
    ref = yaml.safe_load(path.read_text())
    return {"names": ref["spec"]["names"], "scope": ref["spec"]["scope"],
            **{v["name"]: v for v in ref["spec"]["versions"]}}


@pytest.mark.parametrize("crd", _committed(), ids=lambda c: c["spec"]["names"]["kind"])
def test_crd_matches_kueue(shared_dir: Path, crd: dict[str, Any]) -> None:
    """Every field we declare exists in Kueue's schema of that version and vice versa; for
    v1beta2 the constraints and CEL rules are the same too. Names, scope and columns agree.
    (v1beta1 is derived from the v1beta2 models, so it keeps v1beta2's bounds.)"""
    ref = _reference_versions(shared_dir, crd["spec"]["names"]["plural"])
    assert crd["spec"]["names"] == ref["names"]
    assert crd["spec"]["scope"] == ref["scope"]
    for version in crd["spec"]["versions"]:
        theirs_version = ref[version["name"]]
        assert version.get("additionalPrinterColumns") == theirs_version.get("additionalPrinterColumns")
        for key in ("subresources", "deprecated", "deprecationWarning", "selectableFields"):
            assert version.get(key) == theirs_version.get(key), f"{version['name']}: {key}"
        theirs = dict(_nodes(theirs_version["schema"]["openAPIV3Schema"]))
        ours = dict(_nodes(version["schema"]["openAPIV3Schema"]))
        opaque = [p for p, n in ours.items() if n.get("x-kubernetes-preserve-unknown-fields")]
        for path in theirs:
            covered = path in ours or path.startswith(".metadata.") or any(
                path.startswith(o) and path[len(o)] in ".[{" for o in opaque)
            assert covered, f"{version['name']}{path} of Kueue's schema is not modelled"
        for path, node in ours.items():
            where = f"{version['name']}{path}"
            assert path in theirs, f"{where} is not in Kueue's schema"
            other = theirs[path]
            if version["name"] != "v1beta2":
                continue
            if other.get("x-kubernetes-preserve-unknown-fields") or path.endswith(".template"):
                continue
            for key in CONSTRAINTS:
                assert node.get(key) == other.get(key), f"{where}: {key} differs"
            assert sorted(node.get("required", [])) == sorted(other.get("required", [])), where
            rules = [r["rule"] for r in node.get("x-kubernetes-validations", [])]
            assert rules == [r["rule"] for r in other.get("x-kubernetes-validations", [])], where
