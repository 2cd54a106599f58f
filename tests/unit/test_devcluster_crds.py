"""``dev up`` applies a CRD only when its manifest changed: the operators' CRDs are megabytes
of schema that the API server would otherwise re-process on every ``dev up``."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, cast

from pykueue.devcluster import addons
from pykueue.kube.blocking import BlockingClient


class FakeCrdApi:
    """CRDs by name; an applied CRD is Established at once (as the API server says later)."""

    def __init__(self) -> None:
        self.crds: dict[str, dict[str, Any]] = {}
        self.applied: list[str] = []

    def get(self, path: str) -> dict[str, Any]:
        if path == addons.CRD_PATH:
            return {"items": [copy.deepcopy(c) for c in self.crds.values()]}
        return copy.deepcopy(self.crds[path.rsplit("/", 1)[1]])

    def apply(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        name = path.rsplit("/", 1)[1]
        self.applied.append(name)
        self.crds[name] = {**copy.deepcopy(obj),
                           "status": {"conditions": [{"type": "Established", "status": "True"}]}}
        return obj


def _crd(directory: Path, name: str, description: str) -> None:
    directory.mkdir(exist_ok=True)
    (directory / f"{name}.yaml").write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        f"metadata:\n  name: {name}\nspec:\n  description: {description}\n")


def test_unchanged_established_crds_are_not_applied_again(tmp_path: Path) -> None:
    crds = tmp_path / "crds"
    _crd(crds, "as.example.com", "one")
    _crd(crds, "bs.example.com", "one")
    api = FakeCrdApi()
    client = cast(BlockingClient, api)

    assert addons.install_crds(client, (crds,)) == ["as.example.com", "bs.example.com"]
    assert api.applied == ["as.example.com", "bs.example.com"]
    annotations = api.crds["as.example.com"]["metadata"]["annotations"]
    assert len(annotations[addons.CRD_DIGEST_ANNOTATION]) == 64

    api.applied.clear()
    assert addons.install_crds(client, (crds,)) == ["as.example.com", "bs.example.com"]
    assert api.applied == []

    _crd(crds, "bs.example.com", "two")  # a new pin ships another schema
    del api.crds["as.example.com"]["status"]  # and one that is not Established is applied again
    addons.install_crds(client, (crds,))
    assert api.applied == ["as.example.com", "bs.example.com"]
    assert api.crds["bs.example.com"]["spec"]["description"] == "two"


def test_the_digest_ignores_key_order() -> None:
    assert addons.manifest_digest({"a": 1, "b": {"c": 2, "d": 3}}) == \
        addons.manifest_digest({"b": {"d": 3, "c": 2}, "a": 1})
    assert addons.manifest_digest({"a": 1}) != addons.manifest_digest({"a": 2})
