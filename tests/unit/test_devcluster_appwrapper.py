"""The dev cluster's AppWrapper controller: pinned at the version Kueue v0.19.2 requires, run
behind our own main on loopback with the release's configuration (node monitor off), its two
webhooks registered as its release registers them, its RBAC and its CRD. No process is started
here (``tests/e2e/test_appwrapper.py`` runs it)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from pykueue.devcluster import operators
from pykueue.devcluster.operators import OperatorFiles, OperatorPorts
from pykueue.devcluster.paths import DEV_MANIFESTS_DIR, GO_DIR
from pykueue.devcluster.versions import BINARIES, GoBinary, module_key, pinned_versions

PORTS = OperatorPorts(metrics=41001, health=41002, webhook=41003)
NAME = "appwrapper-controller"


def _operator() -> operators.Operator:
    return next(op for op in operators.OPERATORS if op.name == NAME)


def test_it_is_pinned_where_kueue_v0_19_2_pins_it() -> None:
    version = pinned_versions()["appwrapper"]
    assert version == "v1.2.2"
    kueue = (GO_DIR / "kueue" / "go.mod").read_text()
    assert re.search(rf"github.com/project-codeflare/appwrapper {re.escape(version)}\b", kueue)
    assert {b.name: b for b in BINARIES}[NAME] == GoBinary(NAME, "appwrapper", ".")
    assert (GO_DIR / "appwrapper" / "main.go").is_file()
    assert module_key("appwrapper").startswith("appwrapper-v1.2.2_")


def test_it_runs_on_loopback_with_the_releases_configuration(tmp_path: Path) -> None:
    files = OperatorFiles(tmp_path / NAME)
    files.root.mkdir()
    argv = _operator().argv(Path("/bin") / NAME, files, PORTS)
    assert argv == [f"/bin/{NAME}", f"--kubeconfig={files.kubeconfig}", f"--config={files.config}",
                    "--metrics-bind-address=127.0.0.1:41001", "--health-probe-bind-address=127.0.0.1:41002",
                    "--webhook-bind-address=127.0.0.1:41003", f"--cert-dir={files.cert_dir}",
                    "--zap-devel=false"]
    # Only the node health monitor differs from the release's defaults.
    assert yaml.safe_load(files.config.read_text()) == {"autopilot": {"monitorNodes": False}}


def test_its_webhooks_are_registered_as_its_release_registers_them() -> None:
    # The release's config/webhook/manifests.yaml: one mutating hook (CREATE), one validating.
    docs = operators.webhook_configurations(_operator(), "https://127.0.0.1:41003", b"CA")
    hooks = {d["kind"]: d["webhooks"] for d in docs}
    [mutating] = hooks["MutatingWebhookConfiguration"]
    [validating] = hooks["ValidatingWebhookConfiguration"]
    assert mutating["name"] == "mappwrapper.kb.io"
    assert mutating["clientConfig"]["url"] == \
        "https://127.0.0.1:41003/mutate-workload-codeflare-dev-v1beta2-appwrapper"
    assert mutating["rules"] == [{"apiGroups": ["workload.codeflare.dev"], "apiVersions": ["v1beta2"],
                                  "operations": ["CREATE"], "resources": ["appwrappers"]}]
    assert validating["name"] == "vappwrapper.kb.io"
    assert validating["clientConfig"]["url"].endswith("/validate-workload-codeflare-dev-v1beta2-appwrapper")
    assert validating["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert operators.endpoints_of(_operator(), PORTS).metrics == "http://127.0.0.1:41001/metrics"


def _rules() -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all((DEV_MANIFESTS_DIR / "operators-rbac.yaml").read_text()) if d]
    (role,) = [d for d in docs
               if d["kind"] == "ClusterRole" and d["metadata"]["name"] == f"pykueue-dev-{NAME}"]
    rules: list[dict[str, Any]] = role["rules"]
    return rules


def _granted(group: str, resource: str) -> set[str]:
    return {v for r in _rules() if group in r["apiGroups"] and resource in r["resources"] for v in r["verbs"]}


def test_it_may_create_and_delete_what_the_samples_wrap_and_nothing_for_certificates() -> None:
    for group, resource in (("batch", "jobs"), ("kubeflow.org", "pytorchjobs"),
                            ("leaderworkerset.x-k8s.io", "leaderworkersets"), ("apps", "deployments")):
        assert {"get", "create", "delete"} <= _granted(group, resource), resource
    assert {"update", "patch"} <= _granted("workload.codeflare.dev", "appwrappers/status")
    assert _granted("workload.codeflare.dev", "appwrappers/finalizers") == {"update"}
    assert _granted("authorization.k8s.io", "subjectaccessreviews") == {"create"}
    assert not _granted("", "secrets") and not _granted("", "nodes")


def test_its_crd_is_the_pinned_releases() -> None:
    text = (DEV_MANIFESTS_DIR / "crds" / "appwrappers.workload.codeflare.dev.yaml").read_text()
    assert "github.com/project-codeflare/appwrapper v1.2.2" in text[:600]
    (crd,) = [d for d in yaml.safe_load_all(text) if d]
    assert crd["metadata"]["name"] == "appwrappers.workload.codeflare.dev"
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1beta2"] and "conversion" not in crd["spec"]
