"""Every Kueue document in the reference examples parses and serialises back unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import registry


def _kueue_documents(shared_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted((shared_dir / "reference" / "examples").rglob("*.y*ml")):
        for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if not isinstance(doc, dict):
                continue
            if registry.model_for(str(doc.get("apiVersion")), str(doc.get("kind"))) is None:
                continue
            found.append((f"{path.name}#{index}:{doc['kind']}", doc))
    return found


def test_examples_round_trip_exactly(shared_dir: Path) -> None:
    docs = _kueue_documents(shared_dir)
    kinds = {doc["kind"] for _, doc in docs}
    # The examples cover most kinds; an empty walk would make this test vacuous.
    assert {"ClusterQueue", "LocalQueue", "ResourceFlavor", "AdmissionCheck", "Topology",
            "ProvisioningRequestConfig", "MultiKueueCluster", "MultiKueueConfig"} <= kinds
    for label, doc in docs:
        original = json.loads(json.dumps(doc))
        obj = registry.parse(doc)
        assert obj.to_dict() == original, label
        # Byte-exact: the JSON text is identical too, so quantities kept their spelling.
        assert json.dumps(obj.to_dict(), sort_keys=True) == json.dumps(original, sort_keys=True), label
        assert doc == original, f"{label}: parsing mutated its input"


@pytest.mark.parametrize("value", ["500m", "1Gi", "0.5", 9, "1e3", "100Mi", 2.5])
def test_quantities_keep_their_spelling(value: object) -> None:
    doc = {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
        "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "f", "resources": [{"name": "cpu", "nominalQuota": value}]}]}]},
    }
    cq = registry.parse(doc)
    assert cq.to_dict() == doc
