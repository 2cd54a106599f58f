"""Rendering ``charts/pykueue`` with the real helm, and the value sets the tests render.

helm is one of the binaries ``python -m pykueue.devcluster build`` builds from its pinned Go module
(``make test`` does); a test that needs it fails, never skips, when it is not there.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.devcluster.build import binary_path
from pykueue.devcluster.versions import BINARIES

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "pykueue"
MANIFESTS = REPO / "manifests"

Key = tuple[str, str, str, str]  # apiVersion, kind, namespace ("" when cluster-scoped), name

# A worker kubeconfig as MultiKueue accepts it (token, no exec, no files); never dialled here.
_WORKER_KUBECONFIG = yaml.safe_dump({
    "apiVersion": "v1", "kind": "Config", "current-context": "worker",
    "clusters": [{"name": "worker", "cluster": {"server": "https://worker.example:6443"}}],
    "users": [{"name": "pykueue", "user": {"token": "not-a-real-token"}}],
    "contexts": [{"name": "worker", "context": {"cluster": "worker", "user": "pykueue"}}],
})

# The value sets rendered and dry-run applied (the e2e test); ``defaults`` is also the one
# compared with manifests/. Replicas go to 3: 2 is already the default.
VALUE_SETS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "replicas-3-without-tas": {"controllerManager": {"replicas": 3}, "tasScheduler": {"enabled": False}},
    "manage-jobs-without-queue-name": {"managerConfig": {
        "manageJobsWithoutQueueName": True,
        "managedJobsNamespaceSelector": {"matchLabels": {"pykueue.dev/managed": "true"}}}},
    "multikueue": {"multiKueue": {"workers": [
        {"name": "worker-1", "kubeconfig": _WORKER_KUBECONFIG},
        {"name": "worker-2", "secretName": "worker-2-kubeconfig"}]}},
    "metrics-tls-certificate": {"metrics": {"tls": {"enabled": True, "secretName": "pykueue-metrics-cert"}}},
    "extender-3-placed-without-pdb": {"extender": {
        "replicas": 3, "nodeSelector": {"pool": "system"},
        "tolerations": [{"key": "system", "operator": "Exists"}], "resources": {"requests": {"cpu": "1"}},
        "podAnnotations": {"team": "batch"},
        "podDisruptionBudget": {"enabled": False}}},
}


def helm_binary() -> Path:
    (helm,) = (b for b in BINARIES if b.name == "helm")
    path = binary_path(helm)
    if not path.is_file():
        pytest.fail(f"helm is not built ({path} is missing); run `python -m pykueue.devcluster build` first "
                    "(`make test` does)", pytrace=False)
    return path


def run_helm(helm: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """helm with its config, cache and data directories under ``home``: nothing of the user's."""
    env = {**os.environ, "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
           "HELM_DATA_HOME": str(home / "data")}
    return subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=60, env=env,
                          check=False)


def render(helm: Path, home: Path, values: dict[str, Any], *, crds: bool = True,
           namespace: str = "default") -> str:
    """``helm template`` of the chart with ``values`` (a file, as users pass theirs). The release
    namespace is explicit: helm otherwise takes the kubeconfig context's."""
    values_file = home / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    result = run_helm(helm, home, "template", "pykueue", str(CHART), "--namespace", namespace,
                      "-f", str(values_file), *(["--include-crds"] if crds else []))
    assert result.returncode == 0, result.stderr
    return result.stdout


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def manifest_objects() -> list[dict[str, Any]]:
    """What ``kubectl apply -f manifests/`` applies: the top-level files."""
    return [d for path in sorted(MANIFESTS.glob("*.yaml")) for d in documents(path.read_text())]


def key(obj: dict[str, Any]) -> Key:
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"]


def semantic(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as the cluster and pykueue see it: a ConfigMap's embedded YAML files parsed
    (key order and comments in them mean nothing)."""
    if obj["kind"] != "ConfigMap":
        return obj
    data = {name: yaml.safe_load(text) if name.endswith((".yaml", ".yml")) else text
            for name, text in (obj.get("data") or {}).items()}
    return {**obj, "data": data}


def by_key(objects: Iterable[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    result: dict[Key, dict[str, Any]] = {}
    for obj in objects:
        assert key(obj) not in result, f"{key(obj)} twice"
        result[key(obj)] = semantic(obj)
    return result
