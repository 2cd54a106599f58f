"""Per-module cache keys: a change in one Go module rebuilds that module's binaries only."""

from __future__ import annotations

from pathlib import Path

from pykueue.devcluster.operators import (
    BINARY_NAMES,
    OPERATORS,
    OperatorFiles,
    OperatorPorts,
    webhook_configurations,
)
from pykueue.devcluster.paths import DEV_MANIFESTS_DIR, GO_DIR
from pykueue.devcluster.versions import BINARIES, GoBinary, link_flags, module_key, pinned_versions


def _module(root: Path, name: str, require: str) -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "go.mod").write_text(f"module example.com/{name}\n\ngo 1.26.0\n\nrequire {require}\n")
    (directory / "main.go").write_text("package main\n\nfunc main() {}\n")
    return directory


def test_key_names_the_pin_and_changes_only_with_its_own_module(tmp_path: Path) -> None:
    kube = _module(tmp_path, "kube", "k8s.io/kubernetes v1.36.3")
    _module(tmp_path, "kwok", "sigs.k8s.io/kwok v0.8.0")
    before = {m: module_key(m, tmp_path) for m in ("kube", "kwok")}
    assert before["kube"].startswith("k8s-v1.36.3_")
    assert before["kwok"].startswith("kwok-v0.8.0_")

    _module(tmp_path, "newcomer", "example.com/other v1.0.0")  # a module added beside them
    (kube / "main.go").write_text("package main\n\nfunc main() { println() }\n")
    after = {m: module_key(m, tmp_path) for m in ("kube", "kwok")}
    assert after["kwok"] == before["kwok"]
    assert after["kube"] != before["kube"]
    assert module_key("newcomer", tmp_path).startswith("newcomer_")


def test_operators_are_pinned_and_built_with_the_others() -> None:
    """The dev cluster runs the training operator and LWS at the versions pykueue targets;
    ``dev build`` builds them with the control plane, each from its own module."""
    pins = pinned_versions()
    assert pins["training-operator"] == "v1.9.3"
    assert pins["lws"] == "v0.7.0"
    by_name = {b.name: b for b in BINARIES}
    assert by_name["training-operator"].module == "training-operator"
    assert by_name["lws-controller"] == GoBinary("lws-controller", "lws", "sigs.k8s.io/lws/cmd")
    # LWS's own command is built by import path: go.mod must declare it as a tool.
    lws_mod = (GO_DIR / "lws" / "go.mod").read_text()
    assert "\ntool sigs.k8s.io/lws/cmd\n" in lws_mod
    assert module_key("training-operator").startswith("training-operator-v1.9.3_")
    assert module_key("lws").startswith("lws-v0.7.0_")


def test_every_operator_the_dev_cluster_runs_has_a_binary() -> None:
    assert set(BINARY_NAMES) <= {b.name for b in BINARIES}


def test_operator_crds_are_the_pinned_releases() -> None:
    """The vendored CRDs name the module version they were taken from, and it is the pin."""
    pins = pinned_versions()
    headers = {path.name: path.read_text()[:400] for path in (DEV_MANIFESTS_DIR / "crds").glob("*.yaml")}
    for plural in ("pytorchjobs", "tfjobs", "xgboostjobs", "paddlejobs", "jaxjobs"):
        assert f"github.com/kubeflow/training-operator {pins['training-operator']}" in \
            headers[f"{plural}.kubeflow.org.yaml"], plural
    # Not the training operator's MPIJob (v1): the MPI operator's v2beta1 one is installed.
    assert f"github.com/kubeflow/mpi-operator {pins['mpi-operator']}" in headers["mpijobs.kubeflow.org.yaml"]
    assert f"sigs.k8s.io/lws {pins['lws']}" in headers["leaderworkersets.leaderworkerset.x-k8s.io.yaml"]


def test_operator_webhooks_point_at_loopback_with_the_cluster_ca() -> None:
    lws = next(op for op in OPERATORS if op.name == "lws-controller")
    docs = webhook_configurations(lws, "https://127.0.0.1:9443", b"CA")
    assert [d["kind"] for d in docs] == ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
    hooks = {h["name"]: h for d in docs for h in d["webhooks"]}
    pod = hooks["mpod.kb.io"]
    assert pod["clientConfig"] == {"url": "https://127.0.0.1:9443/mutate--v1-pod", "caBundle": "Q0E="}
    # Only LWS's own pods go to LWS: every other pod in the cluster keeps being created
    # when the LWS controller is down.
    assert pod["objectSelector"]["matchExpressions"][0]["key"] == "leaderworkerset.sigs.k8s.io/name"
    training = next(op for op in OPERATORS if op.name == "training-operator")
    (validating,) = webhook_configurations(training, "https://127.0.0.1:1", b"CA")
    assert validating["kind"] == "ValidatingWebhookConfiguration"
    kinds = ("pytorchjob", "tfjob", "xgboostjob", "paddlejob", "jaxjob")
    assert [h["rules"][0]["resources"] for h in validating["webhooks"]] == [[f"{k}s"] for k in kinds]
    assert [h["clientConfig"]["url"] for h in validating["webhooks"]] == [
        f"https://127.0.0.1:1/validate-kubeflow-org-v1-{k}" for k in kinds]
    # Each kind's controller and webhook run, the training operator's MPIJob (v1) not.
    argv = training.argv(Path("/bin/op"), OperatorFiles(Path("/state")), OperatorPorts(1, 2, 3))
    assert [a for a in argv if a.startswith("--enable-scheme=")] == [f"--enable-scheme={k}" for k in kinds]


def test_kubernetes_binaries_carry_their_release_version_and_it_is_part_of_their_key() -> None:
    """Kueue parses the API server's version; an unstamped build says v0.0.0-master."""
    flags = link_flags("kube")
    version = pinned_versions()["k8s"]
    assert f"-X k8s.io/component-base/version.gitVersion={version}" in flags
    assert link_flags("kwok") == ()
    assert GoBinary("kueue", "kueue", "sigs.k8s.io/kueue/cmd/kueue", dev_cluster=False) in BINARIES


def test_users_tools_are_pinned_stamped_and_not_needed_by_dev_up() -> None:
    """kueuectl and helm, the references of ``kubectl kueue`` and the chart: built by ``dev
    build`` at the versions the issue names, printing them, never started by ``dev up``."""
    pins = pinned_versions()
    assert (pins["kueuectl"], pins["helm"]) == ("v0.19.2", "v4.3.2")
    by_name = {b.name: b for b in BINARIES}
    kueuectl = GoBinary("kubectl-kueue", "kueuectl", "sigs.k8s.io/kueue/cmd/kueuectl", dev_cluster=False)
    assert by_name["kubectl-kueue"] == kueuectl
    assert by_name["helm"] == GoBinary("helm", "helm", "helm.sh/helm/v4/cmd/helm", dev_cluster=False)
    assert link_flags("kueuectl") == ("-X sigs.k8s.io/kueue/pkg/version.GitVersion=v0.19.2",)
    assert link_flags("helm") == ("-X helm.sh/helm/v4/internal/version.version=v4.3.2",)
    tools = (("kueuectl", "sigs.k8s.io/kueue/cmd/kueuectl"), ("helm", "helm.sh/helm/v4/cmd/helm"))
    for module, tool in tools:
        assert f"\ntool {tool}\n" in (GO_DIR / module / "go.mod").read_text()
