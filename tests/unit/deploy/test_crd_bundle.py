"""The CRD install bundle is the concatenation of the generated CRDs, never stale."""

from __future__ import annotations

import yaml

from tests.unit.deploy.crd_bundle import BUNDLE, CRD_DIR, render


def test_bundle_matches_generated_crds() -> None:
    assert BUNDLE.read_text() == render(), "manifests/01-crds.yaml is stale: run `make crds`"


def test_bundle_holds_every_crd_once() -> None:
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(BUNDLE.read_text()) if d]
    assert len(names) == len(set(names)) == len(list(CRD_DIR.glob("*.yaml"))) == 11
    assert "workloads.kueue.x-k8s.io" in names
