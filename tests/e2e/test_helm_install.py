"""Each value set of the chart renders objects a real kube-apiserver accepts (server-side
dry run against the dev cluster, as ``test_install_manifests.py`` does for ``manifests/``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pykueue.devcluster.cluster import FIELD_MANAGER
from tests.e2e.conftest import DevCluster

from .helm_chart import CHART, VALUE_SETS, documents, helm_binary, render

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _dry_run(dev_cluster: DevCluster, manifest: str, field_manager: str) -> tuple[int, str]:
    """Objects the API server accepted, and kubectl's complaints."""
    result = dev_cluster.kubectl("apply", "--server-side", "--dry-run=server",
                                 f"--field-manager={field_manager}", "--force-conflicts", "-f", "-",
                                 stdin=manifest, check=False, timeout_s=90)
    accepted = [line for line in result.stdout.splitlines() if line.endswith("(server dry run)")]
    return len(accepted), result.stderr if result.returncode else ""


def test_every_value_set_passes_server_side_dry_run(dev_cluster: DevCluster, tmp_path: Path) -> None:
    helm = helm_binary()
    # Namespaced objects are dry-run into pykueue-system, which the dev cluster runs in.
    dev_cluster.kubectl("get", "namespace", "pykueue-system")
    renders = {}
    for name, values in VALUE_SETS.items():
        home = tmp_path / name
        home.mkdir()
        renders[name] = render(helm, home, values, crds=False)
    # The dev cluster's own objects of the same names (visibility APIServices, CRD conversion
    # URLs) are owned by other field managers: forcing them in a dry run changes nothing and
    # still validates every object. The CRDs go as the dev cluster's manager, as in
    # test_install_manifests.py (another one would leave its URL beside the Service).
    crds = "\n---\n".join(path.read_text() for path in sorted((CHART / "crds").glob("*.yaml")))
    jobs = {name: (text, "pykueue-e2e") for name, text in renders.items()} | {"crds": (crds, FIELD_MANAGER)}
    with ThreadPoolExecutor(max_workers=3) as pool:
        outcomes = pool.map(lambda job: _dry_run(dev_cluster, *job), jobs.values())
        results = dict(zip(jobs, outcomes, strict=True))
    for name, (accepted, errors) in results.items():
        expected = len(documents(jobs[name][0]))
        assert (accepted, errors) == (expected, ""), f"{name}: {accepted} of {expected} accepted\n{errors}"
    assert results["crds"][0] == 11
    assert results["multikueue"][0] == results["defaults"][0] + 5  # Secret, 2 clusters, config, check
