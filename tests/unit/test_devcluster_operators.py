"""The dev cluster's JobSet, Trainer and MPI operators: their command lines and configuration
files, where their certificates go, their webhook registrations, their RBAC and what their
releases install with them. No process is started here (``tests/e2e/test_operators.py`` runs them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pykueue.devcluster import operators
from pykueue.devcluster.operators import OperatorFiles, OperatorPorts
from pykueue.devcluster.paths import DEV_MANIFESTS_DIR, GO_DIR
from pykueue.devcluster.versions import BINARIES, GoBinary, link_flags, module_key, pinned_versions

PORTS = OperatorPorts(metrics=41001, health=41002, webhook=41003)


def _operator(name: str) -> operators.Operator:
    return next(op for op in operators.OPERATORS if op.name == name)


def _argv(name: str, tmp_path: Path) -> tuple[list[str], OperatorFiles]:
    files = OperatorFiles(tmp_path / name)
    files.root.mkdir()
    return _operator(name).argv(Path("/bin") / name, files, PORTS), files


def test_jobset_runs_its_own_command_configured_for_loopback_without_election_or_rotation(
        tmp_path: Path) -> None:
    argv, files = _argv("jobset-controller", tmp_path)
    assert argv == ["/bin/jobset-controller", f"--kubeconfig={files.kubeconfig}",
                    f"--config={files.config}", "--zap-devel=false"]
    config = yaml.safe_load(files.config.read_text())
    assert (config["apiVersion"], config["kind"]) == ("config.jobset.x-k8s.io/v1alpha1", "Configuration")
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["internalCertManagement"] == {"enable": False}
    assert config["webhook"] == {"host": "127.0.0.1", "port": 41003, "certDir": str(files.cert_dir)}
    assert config["metrics"] == {"bindAddress": "127.0.0.1:41001", "certDir": str(files.cert_dir)}
    assert config["health"] == {"healthProbeBindAddress": "127.0.0.1:41002"}
    jobset = _operator("jobset-controller")
    assert jobset.cert_dir(files) == files.cert_dir and jobset.env(files) is None


def test_trainer_reads_its_certificates_under_the_tmpdir_it_is_given(tmp_path: Path) -> None:
    argv, files = _argv("trainer-controller", tmp_path)
    assert argv == ["/bin/trainer-controller", f"--kubeconfig={files.kubeconfig}", f"--config={files.config}"]
    config = yaml.safe_load(files.config.read_text())
    assert (config["apiVersion"], config["kind"]) == ("config.trainer.kubeflow.org/v1alpha1", "Configuration")
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["certManagement"] == {"enable": False}
    assert config["webhook"] == {"host": "127.0.0.1", "port": 41003}
    assert config["metrics"] == {"bindAddress": "127.0.0.1:41001", "secureServing": False}
    assert config["health"] == {"healthProbeBindAddress": "127.0.0.1:41002"}
    trainer = _operator("trainer-controller")
    # controller-runtime's default certificate directory, below $TMPDIR.
    assert trainer.cert_dir(files) == files.root / "tmp" / "k8s-webhook-server" / "serving-certs"
    env = trainer.env(files)
    assert env is not None and env["TMPDIR"] == str(files.root / "tmp") and "PATH" in env


def test_the_mpi_operator_listens_on_loopback_and_has_no_webhook(tmp_path: Path) -> None:
    argv, files = _argv("mpi-operator", tmp_path)
    assert argv == ["/bin/mpi-operator", f"--kubeconfig={files.kubeconfig}",
                    "--metrics-bind-address=127.0.0.1:41001", "--health-probe-bind-address=127.0.0.1:41002"]
    mpi = _operator("mpi-operator")
    assert not mpi.has_webhooks
    assert operators.webhook_configurations(mpi, "https://127.0.0.1:1", b"CA") == []
    endpoints = operators.endpoints_of(mpi, PORTS)
    assert endpoints.webhook is None
    assert endpoints.line() == ("mpi-operator: metrics http://127.0.0.1:41001/metrics, "
                                "health http://127.0.0.1:41002/readyz")
    jobset = operators.endpoints_of(_operator("jobset-controller"), PORTS)
    assert jobset.line().startswith("jobset-controller: webhook https://127.0.0.1:41003, "
                                    "metrics https://127.0.0.1:41001/metrics")


def _hooks(name: str) -> dict[str, dict[str, Any]]:
    docs = operators.webhook_configurations(_operator(name), "https://127.0.0.1:9443", b"CA")
    return {f"{d['kind']}/{h['name']}": h for d in docs for h in d["webhooks"]}


def test_jobset_webhooks_are_registered_as_its_release_does() -> None:
    hooks = _hooks("jobset-controller")
    assert set(hooks) == {f"{kind}WebhookConfiguration/{name}" for kind, name in
                          (("Mutating", "mjobset.kb.io"), ("Mutating", "mpod.kb.io"),
                           ("Validating", "vjobset.kb.io"), ("Validating", "vpod.kb.io"))}
    mutate = hooks["MutatingWebhookConfiguration/mjobset.kb.io"]
    assert mutate["clientConfig"]["url"] == "https://127.0.0.1:9443/mutate-jobset-x-k8s-io-v1alpha2-jobset"
    assert mutate["rules"] == [{"apiGroups": ["jobset.x-k8s.io"], "apiVersions": ["v1alpha2"],
                                "operations": ["CREATE"], "resources": ["jobsets"]}]
    validate = hooks["ValidatingWebhookConfiguration/vjobset.kb.io"]
    assert validate["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    # Only JobSets' pods go to JobSet: other pods are created while it is down.
    for name in ("MutatingWebhookConfiguration/mpod.kb.io", "ValidatingWebhookConfiguration/vpod.kb.io"):
        assert hooks[name]["objectSelector"] == {"matchExpressions": [
            {"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]}
        assert hooks[name]["rules"][0]["apiVersions"] == ["v1"]


def test_trainer_webhooks_are_registered_as_its_release_does() -> None:
    hooks = _hooks("trainer-controller")
    paths = {name: hook["clientConfig"]["url"].removeprefix("https://127.0.0.1:9443")
             for name, hook in hooks.items()}
    assert paths == {
        "MutatingWebhookConfiguration/defaulter.trainjob.trainer.kubeflow.org":
            "/mutate-trainer-kubeflow-org-v1alpha1-trainjob",
        "ValidatingWebhookConfiguration/validator.clustertrainingruntime.trainer.kubeflow.org":
            "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime",
        "ValidatingWebhookConfiguration/validator.trainingruntime.trainer.kubeflow.org":
            "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime",
        "ValidatingWebhookConfiguration/validator.trainjob.trainer.kubeflow.org":
            "/validate-trainer-kubeflow-org-v1alpha1-trainjob",
    }
    for hook in hooks.values():
        assert hook["rules"][0]["apiVersions"] == ["v1alpha1"]
        assert hook["rules"][0]["operations"] == ["CREATE", "UPDATE"]
        assert "objectSelector" not in hook


def test_trainer_installs_the_releases_torch_distributed_runtime() -> None:
    (objects,) = _operator("trainer-controller").installs
    (path, runtime), = objects.documents()
    assert path == "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/torch-distributed"
    assert runtime["kind"] == "ClusterTrainingRuntime"
    assert runtime["spec"]["mlPolicy"] == {"numNodes": 1, "torch": {}}
    (replicated,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    assert replicated["name"] == "node"
    labels = replicated["template"]["metadata"]["labels"]
    assert labels == {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    assert "github.com/kubeflow/trainer/v2 v2.2.1" in objects.manifest.read_text()[:600]


def _rbac() -> dict[tuple[str, str], dict[str, Any]]:
    docs = yaml.safe_load_all((DEV_MANIFESTS_DIR / "operators-rbac.yaml").read_text())
    return {(d["kind"], d["metadata"]["name"]): d for d in docs if isinstance(d, dict)}


def _granted(rules: list[dict[str, Any]], group: str, resource: str) -> set[str]:
    return {verb for rule in rules if group in rule["apiGroups"] and resource in rule["resources"]
            for verb in rule["verbs"]}


def test_every_operator_user_is_bound_to_its_own_role_and_nothing_else() -> None:
    rbac = _rbac()
    for operator in operators.OPERATORS:
        name = f"pykueue-dev-{operator.name}"
        binding = rbac[("ClusterRoleBinding", name)]
        assert binding["roleRef"]["name"] == name
        assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                        "name": operator.user}]
        rules = rbac[("ClusterRole", name)]["rules"]
        assert all("*" not in rule["verbs"] and "*" not in rule["resources"] for rule in rules)
        # No leader election, no certificate rotation: no Leases, Secrets-for-certs or webhook
        # configurations (the Trainer's and the MPI operator's Secrets are their jobs' SSH keys).
        assert not _granted(rules, "coordination.k8s.io", "leases")
        assert not _granted(rules, "admissionregistration.k8s.io", "validatingwebhookconfigurations")
        assert not _granted(rules, "admissionregistration.k8s.io", "mutatingwebhookconfigurations")


def test_the_new_operators_get_the_rights_their_controllers_use() -> None:
    rbac = _rbac()
    jobset = rbac[("ClusterRole", "pykueue-dev-jobset-controller")]["rules"]
    assert {"create", "delete", "update"} <= _granted(jobset, "batch", "jobs")
    assert "update" in _granted(jobset, "jobset.x-k8s.io", "jobsets/status")
    assert not _granted(jobset, "", "secrets")
    trainer = rbac[("ClusterRole", "pykueue-dev-trainer-controller")]["rules"]
    assert {"create", "patch"} <= _granted(trainer, "jobset.x-k8s.io", "jobsets")
    assert "update" in _granted(trainer, "trainer.kubeflow.org", "trainjobs/status")
    # Without a PodGroup CRD the gang-scheduling plugins watch nothing.
    assert not _granted(trainer, "scheduling.x-k8s.io", "podgroups")
    mpi = rbac[("ClusterRole", "pykueue-dev-mpi-operator")]["rules"]
    assert _granted(mpi, "kubeflow.org", "mpijobs") == {"get", "list", "watch"}
    assert _granted(mpi, "kubeflow.org", "mpijobs/status") == {"update"}
    assert {"create", "update"} <= _granted(mpi, "batch", "jobs")
    assert {"list", "watch"} <= _granted(mpi, "scheduling.k8s.io", "priorityclasses")


def test_the_new_operators_are_pinned_at_kueue_v0_19_2s_versions() -> None:
    pins = pinned_versions()
    assert (pins["jobset"], pins["trainer"], pins["mpi-operator"]) == ("v0.12.0", "v2.2.1", "v0.8.2")
    by_name = {b.name: b for b in BINARIES}
    assert by_name["jobset-controller"] == GoBinary("jobset-controller", "jobset", "sigs.k8s.io/jobset")
    assert by_name["trainer-controller"] == GoBinary(
        "trainer-controller", "trainer", "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager")
    assert by_name["mpi-operator"] == GoBinary("mpi-operator", "mpi-operator", ".")
    # Upstream's commands are built by import path: go.mod must declare them as tools.
    assert "\ntool sigs.k8s.io/jobset\n" in (GO_DIR / "jobset" / "go.mod").read_text()
    assert "\ntool github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager\n" in \
        (GO_DIR / "trainer" / "go.mod").read_text()
    assert (GO_DIR / "mpi-operator" / "main.go").is_file()
    # JobSet logs its version and sends it in its user agent: stamped as its release does.
    assert link_flags("jobset") == ("-X sigs.k8s.io/jobset/pkg/version.GitVersion=v0.12.0",)
    assert module_key("jobset").startswith("jobset-v0.12.0_")
    assert module_key("trainer").startswith("trainer-v2.2.1_")
    assert module_key("mpi-operator").startswith("mpi-operator-v0.8.2_")


def test_their_crds_are_the_pinned_releases() -> None:
    pins = pinned_versions()
    crds = DEV_MANIFESTS_DIR / "crds"
    trainer = f"github.com/kubeflow/trainer/v2 {pins['trainer']}"
    sources = {"jobsets.jobset.x-k8s.io": f"sigs.k8s.io/jobset {pins['jobset']}",
               "mpijobs.kubeflow.org": f"github.com/kubeflow/mpi-operator {pins['mpi-operator']}",
               "trainjobs.trainer.kubeflow.org": trainer,
               "trainingruntimes.trainer.kubeflow.org": trainer,
               "clustertrainingruntimes.trainer.kubeflow.org": trainer}
    for name, source in sources.items():
        text = (crds / f"{name}.yaml").read_text()
        assert source in text[:600], name
        (crd,) = [d for d in yaml.safe_load_all(text) if d]
        assert crd["metadata"]["name"] == name
        # Single-version CRDs: no conversion webhook to point anywhere.
        assert len(crd["spec"]["versions"]) == 1 and "conversion" not in crd["spec"]
