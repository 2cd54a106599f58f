"""The dev cluster's cluster autoscaler: its kwok provider's configuration and command line."""

from __future__ import annotations

from pathlib import Path

import yaml

from pykueue.devcluster import autoscaler
from pykueue.devcluster.nodes import KWOK_SELECTOR_LABEL


def test_one_gpu_node_group_the_kwok_controller_runs_and_other_pods_avoid() -> None:
    config, templates = autoscaler.config_maps()
    assert config["metadata"] == {"name": "kwok-provider-config", "namespace": "kube-system"}
    parsed = yaml.safe_load(config["data"]["config"])
    assert parsed["readNodesFrom"] == "configmap"
    assert parsed["configmap"]["name"] == templates["metadata"]["name"] == "kwok-provider-templates"
    assert parsed["nodegroups"]["fromNodeLabelKey"] == autoscaler.NODE_GROUP_LABEL
    (node,) = yaml.safe_load(templates["data"]["templates"])["items"]
    labels = node["metadata"]["labels"]
    assert labels[KWOK_SELECTOR_LABEL] == "kwok", "the dev cluster's kwok controller makes them Ready"
    assert labels[autoscaler.NODE_GROUP_LABEL] == autoscaler.NODE_GROUP
    assert "kubernetes.io/hostname" not in labels, "every added node would share it"
    assert node["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    assert node["metadata"]["annotations"]["cluster-autoscaler.kwok.nodegroup/max-count"] == \
        str(autoscaler.MAX_NODES)


def test_it_serves_provisioning_requests_over_json_without_leader_election() -> None:
    argv = autoscaler.argv(Path("/bin/ca"), Path("/k/kubeconfig"), 8085)
    assert argv[0] == "/bin/ca"
    for flag in ("--cloud-provider=kwok", "--enable-provisioning-requests=true", "--leader-elect=false",
                 "--kube-api-content-type=application/json", "--kubeconfig=/k/kubeconfig",
                 "--address=127.0.0.1:8085"):
        assert flag in argv
