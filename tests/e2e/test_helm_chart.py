"""``charts/pykueue`` under the real helm: it lints, its defaults are ``manifests/``, and each
value does what values.yaml says. No cluster: only the helm binary (``python -m pykueue.devcluster
build``); ``test_helm_install.py`` applies the renders to the dev cluster.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import pytest
import yaml

from .helm_chart import (
    CHART,
    VALUE_SETS,
    by_key,
    documents,
    helm_binary,
    manifest_objects,
    render,
    run_helm,
)


@pytest.fixture(scope="module")
def helm() -> Path:
    return helm_binary()


def _objects(helm: Path, home: Path, values: dict[str, Any], **kwargs: Any) -> dict[tuple[str, str], Any]:
    """Rendered objects by (kind, name)."""
    return {(o["kind"], o["metadata"]["name"]): o for o in documents(render(helm, home, values, **kwargs))}


def _config(objects: dict[tuple[str, str], Any]) -> dict[str, Any]:
    data = objects["ConfigMap", "pykueue-manager-config"]["data"]["controller_manager_config.yaml"]
    config: dict[str, Any] = yaml.safe_load(data)
    return config


def _manager(objects: dict[tuple[str, str], Any]) -> dict[str, Any]:
    pod: dict[str, Any] = objects["Deployment", "pykueue-controller-manager"]["spec"]["template"]["spec"]
    return pod


def test_chart_lints_strictly_with_every_value_set(helm: Path, tmp_path: Path) -> None:
    for name, values in VALUE_SETS.items():
        values_file = tmp_path / f"{name}.yaml"
        values_file.write_text(yaml.safe_dump(values))
        result = run_helm(helm, tmp_path, "lint", "--strict", str(CHART), "-f", str(values_file))
        assert result.returncode == 0, f"{name}:\n{result.stdout}{result.stderr}"


def test_default_render_is_the_install_manifests(helm: Path, tmp_path: Path) -> None:
    chart = by_key(documents(render(helm, tmp_path, {})))
    manifests = by_key(manifest_objects())
    assert sorted(chart.keys() - manifests.keys()) == [], "the chart renders objects manifests/ lacks"
    assert sorted(manifests.keys() - chart.keys()) == [], "manifests/ has objects the chart does not render"
    differing = [k for k in manifests if chart[k] != manifests[k]]
    diffs = "\n".join("".join(difflib.unified_diff(
        yaml.safe_dump(manifests[k]).splitlines(True), yaml.safe_dump(chart[k]).splitlines(True),
        f"manifests {k}", f"chart {k}")) for k in differing)
    assert not differing, f"the default render differs from manifests/:\n{diffs}"


def test_a_release_in_pykueue_system_leaves_the_namespace_to_helm(helm: Path, tmp_path: Path) -> None:
    # `helm install -n pykueue-system --create-namespace` has made it; the chart must not claim it.
    assert ("Namespace", "pykueue-system") not in _objects(helm, tmp_path, {}, namespace="pykueue-system")
    assert ("Namespace", "pykueue-system") in _objects(helm, tmp_path, {}, namespace="queueing")


def test_replicas_and_the_tas_scheduler(helm: Path, tmp_path: Path) -> None:
    objects = _objects(helm, tmp_path, VALUE_SETS["replicas-3-without-tas"])
    assert objects["Deployment", "pykueue-controller-manager"]["spec"]["replicas"] == 3
    assert not [k for k in objects if "tas-scheduler" in k[1]]
    # pykueue still serves the extender, for a kube-scheduler the cluster admin runs.
    assert ("Service", "pykueue-extender-service") in objects
    assert objects["Deployment", "pykueue-extender"]["spec"]["replicas"] == 2


def test_the_extender_runs_apart_with_values_of_its_own(helm: Path, tmp_path: Path) -> None:
    objects = _objects(helm, tmp_path, {**VALUE_SETS["extender-3-placed-without-pdb"], "controllerManager": {
        "manager": {"image": {"repository": "registry.example/pykueue", "tag": "dev"}},
        "imagePullSecrets": [{"name": "registry"}], "nodeSelector": {"pool": "manager"}}})
    deployment = objects["Deployment", "pykueue-extender"]
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["template"]["metadata"]["annotations"] == {"team": "batch"}
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    # The manager's image and pull secrets; placement and resources of its own.
    assert container["image"] == "registry.example/pykueue:dev" and container["args"][0] == "extender"
    assert pod["imagePullSecrets"] == [{"name": "registry"}]
    assert pod["serviceAccountName"] == "pykueue-extender"
    assert pod["nodeSelector"] == {"pool": "system"}
    assert pod["tolerations"] == [{"key": "system", "operator": "Exists"}]
    assert container["resources"] == {"requests": {"cpu": "1", "memory": "256Mi"},
                                      "limits": {"cpu": "1", "memory": "1Gi"}}
    assert ("PodDisruptionBudget", "pykueue-extender") not in objects
    assert ("PodDisruptionBudget", "pykueue-controller-manager") in objects
    assert _manager(objects)["nodeSelector"] == {"pool": "manager"}


def test_manage_jobs_without_queue_name_with_a_namespace_selector(helm: Path, tmp_path: Path) -> None:
    config = _config(_objects(helm, tmp_path, VALUE_SETS["manage-jobs-without-queue-name"]))
    assert config["manageJobsWithoutQueueName"] is True
    # The user's selector replaces the default one, it is not merged into it.
    assert config["managedJobsNamespaceSelector"] == {"matchLabels": {"pykueue.dev/managed": "true"}}
    everything = _config(_objects(helm, tmp_path, {"managerConfig": {"managedJobsNamespaceSelector": {}}}))
    assert everything["managedJobsNamespaceSelector"] == {}


def test_multikueue_workers(helm: Path, tmp_path: Path) -> None:
    objects = _objects(helm, tmp_path, VALUE_SETS["multikueue"])
    clusters = {name: o["spec"]["clusterSource"]["kubeConfig"] for (kind, name), o in objects.items()
                if kind == "MultiKueueCluster"}
    assert clusters == {"worker-1": {"locationType": "Secret", "location": "pykueue-multikueue-worker-1"},
                        "worker-2": {"locationType": "Secret", "location": "worker-2-kubeconfig"}}
    secret = objects["Secret", "pykueue-multikueue-worker-1"]
    assert secret["metadata"]["namespace"] == "pykueue-system" and set(secret["data"]) == {"kubeconfig"}
    assert objects["MultiKueueConfig", "multikueue"]["spec"] == {"clusters": ["worker-1", "worker-2"]}
    check = objects["AdmissionCheck", "multikueue"]["spec"]
    assert check["controllerName"] == "kueue.x-k8s.io/multikueue"
    assert check["parameters"] == {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                   "name": "multikueue"}
    gated = _config(_objects(helm, tmp_path, {"controllerManager": {
        "featureGates": [{"name": "MultiKueue", "enabled": False}]}}))
    assert gated["featureGates"] == {"MultiKueue": False}


def test_metrics_tls(helm: Path, tmp_path: Path) -> None:
    pod = _manager(_objects(helm, tmp_path, VALUE_SETS["metrics-tls-certificate"]))
    (container,) = pod["containers"]
    assert {"--metrics-secure", "--metrics-cert-dir=/etc/pykueue-metrics"} <= set(container["args"])
    assert {"name": "metrics-cert", "secret": {"secretName": "pykueue-metrics-cert"}} in pod["volumes"]
    plain = _objects(helm, tmp_path, {"metrics": {"tls": {"enabled": False}}})
    assert not [a for a in _manager(plain)["containers"][0]["args"] if a.startswith("--metrics")]
    (port,) = plain["Service", "pykueue-controller-manager-metrics-service"]["spec"]["ports"]
    assert port["name"] == "http"


def test_dashboard_off_and_on_another_port(helm: Path, tmp_path: Path) -> None:
    off = _objects(helm, tmp_path, {"dashboard": {"enabled": False}})
    assert "dashboard" not in _config(off) and ("Service", "pykueue-dashboard") not in off
    assert "dashboard" not in {p["name"] for p in _manager(off)["containers"][0]["ports"]}
    moved = _objects(helm, tmp_path, {"dashboard": {"port": 9000}})
    assert _config(moved)["dashboard"] == {"bindAddress": ":9000"}
    (port,) = moved["Service", "pykueue-dashboard"]["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (9000, 9000)


def test_kueue_style_config_string_replaces_the_fields_but_not_the_wiring(helm: Path, tmp_path: Path) -> None:
    pasted = yaml.safe_dump({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                             "namespace": "kueue-system", "manageJobsWithoutQueueName": True,
                             "internalCertManagement": {"webhookServiceName": "kueue-webhook-service"},
                             "integrations": {"frameworks": ["batch/job"]}})
    config = _config(_objects(helm, tmp_path, {"managerConfig": {"controllerManagerConfigYaml": pasted}}))
    assert config["manageJobsWithoutQueueName"] is True
    assert config["integrations"] == {"frameworks": ["batch/job"]}
    assert "waitForPodsReady" not in config  # the whole file, not merged into the defaults
    assert config["namespace"] == "pykueue-system"
    assert config["internalCertManagement"]["webhookServiceName"] == "pykueue-webhook-service"


def test_placement_image_and_resources(helm: Path, tmp_path: Path) -> None:
    objects = _objects(helm, tmp_path, {"controllerManager": {
        "manager": {"image": {"repository": "registry.example/pykueue", "tag": "dev", "pullPolicy": "Always"},
                    "resources": {"requests": {"cpu": "1"}}, "podAnnotations": {"team": "batch"}},
        "nodeSelector": {"pool": "system"}, "tolerations": [{"key": "system", "operator": "Exists"}],
        "affinity": {"podAntiAffinity": {}}, "imagePullSecrets": [{"name": "registry"}]},
        "tasScheduler": {"nodeSelector": {"pool": "system"}}})
    deployment = objects["Deployment", "pykueue-controller-manager"]["spec"]["template"]
    pod = deployment["spec"]
    (container,) = pod["containers"]
    assert (container["image"], container["imagePullPolicy"]) == ("registry.example/pykueue:dev", "Always")
    # Helm merges maps: the default memory request and the limits stay.
    assert container["resources"] == {"requests": {"cpu": "1", "memory": "512Mi"},
                                      "limits": {"cpu": "2", "memory": "2Gi"}}
    assert deployment["metadata"]["annotations"] == {"team": "batch"}
    assert pod["nodeSelector"] == {"pool": "system"} and pod["affinity"] == {"podAntiAffinity": {}}
    assert pod["tolerations"] == [{"key": "system", "operator": "Exists"}]
    assert pod["imagePullSecrets"] == [{"name": "registry"}]
    tas = objects["Deployment", "pykueue-tas-scheduler"]["spec"]["template"]["spec"]
    assert tas["nodeSelector"] == {"pool": "system"} and tas["imagePullSecrets"] == [{"name": "registry"}]


@pytest.mark.parametrize(("values", "where"), [
    ({"controllerManager": {"replica": 2}}, "'/controllerManager'"),  # a typo is refused, not ignored
    ({"controllerManager": {"replicas": 0}}, "'/controllerManager/replicas'"),
    ({"multiKueue": {"workers": [{"name": "w"}]}}, "'/multiKueue/workers/0'"),  # no kubeconfig
    ({"multiKueue": {"workers": [{"name": "w", "kubeconfig": "x", "secretName": "y"}]}},
     "'/multiKueue/workers/0'"),
    ({"dashboard": {"port": "8084"}}, "'/dashboard/port'"),
    ({"extender": {"replica": 2}}, "'/extender'"),
], ids=["typo", "no-replicas", "worker-without-kubeconfig", "worker-with-both", "port-as-string",
        "extender-typo"])
def test_the_schema_refuses_bad_values(helm: Path, tmp_path: Path, values: dict[str, Any],
                                       where: str) -> None:
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    result = run_helm(helm, tmp_path, "template", "pykueue", str(CHART), "-f", str(values_file))
    assert result.returncode != 0 and "schema" in result.stderr and where in result.stderr, result.stderr
