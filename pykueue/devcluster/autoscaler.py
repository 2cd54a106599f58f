"""The dev cluster's cluster autoscaler: Kubernetes' own, with its kwok cloud provider.

``pykueue dev up --autoscaler`` runs it beside the control plane (later ``dev up`` runs keep
it running, and restart it when it died). It serves ProvisioningRequests as in a real
cluster: ``check-capacity.autoscaling.x-k8s.io`` answers from the nodes that exist,
``best-effort-atomic-scale-up.autoscaling.x-k8s.io`` adds nodes of its node group, which the
kwok controller then runs like the others.

The node group is one rack of GPU nodes, the shape of Kueue's ProvisioningRequest example:
nodes carry ``nvidia.com/gpu`` and a matching NoSchedule taint, so only pods that ask for
GPUs (and tolerate it) make it scale up, and the dev cluster's other tests never see them;
they sit in their own block and rack for topology-aware scheduling. Nodes it added and no
longer needs go away again after ``SCALE_DOWN_AFTER``.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pykueue.devcluster import processes
from pykueue.devcluster.components import Layout
from pykueue.devcluster.health import wait_for
from pykueue.devcluster.nodes import BLOCK_LABEL, KWOK_SELECTOR_LABEL, RACK_LABEL
from pykueue.devcluster.operators import load_records, save_record
from pykueue.devcluster.ports import LOOPBACK, free_ports
from pykueue.kube.blocking import BlockingClient

Report = Callable[[str], None]

NAME = "cluster-autoscaler"
NAMESPACE = "kube-system"  # where the kwok provider reads its ConfigMaps (POD_NAMESPACE)
CONFIG_MAP = "kwok-provider-config"
TEMPLATES_CONFIG_MAP = "kwok-provider-templates"
NODE_GROUP_LABEL = "autoscaling.pykueue.dev/node-group"
NODE_GROUP = "gpu-rack"
GPU = "nvidia.com/gpu"
GPU_NODE_LABELS = {"instance-type": "gpu", BLOCK_LABEL: "b-gpu", RACK_LABEL: "r-gpu"}
GPU_TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}
GPU_NODE_CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110", GPU: "4"}
MAX_NODES = 4
SCAN_INTERVAL = "2s"  # the default 10 s: a provisioning test would mostly wait
SCALE_DOWN_AFTER = "1m"
READY_DEADLINE_S = 60.0


def node_template() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE_GROUP,
                     "labels": {**GPU_NODE_LABELS, KWOK_SELECTOR_LABEL: "kwok", NODE_GROUP_LABEL: NODE_GROUP,
                                "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
                     "annotations": {"cluster-autoscaler.kwok.nodegroup/min-count": "0",
                                     "cluster-autoscaler.kwok.nodegroup/max-count": str(MAX_NODES)}},
        "spec": {"taints": [GPU_TAINT]},
        "status": {"capacity": dict(GPU_NODE_CAPACITY), "allocatable": dict(GPU_NODE_CAPACITY),
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]},
    }


def config_maps() -> list[dict[str, Any]]:
    """The kwok provider's configuration: node groups from the templates ConfigMap, grouped by
    ``NODE_GROUP_LABEL``; no taint of its own (the template brings the GPU taint)."""
    config = {"apiVersion": "v1alpha1", "readNodesFrom": "configmap",
              "nodegroups": {"fromNodeLabelKey": NODE_GROUP_LABEL},
              "nodes": {"skipTaint": True},
              "configmap": {"name": TEMPLATES_CONFIG_MAP}}
    templates = {"apiVersion": "v1", "kind": "List", "items": [node_template()]}
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NAMESPACE},
             "data": {key: yaml.safe_dump(value, sort_keys=False)}}
            for name, key, value in ((CONFIG_MAP, "config", config),
                                     (TEMPLATES_CONFIG_MAP, "templates", templates))]


def argv(binary: Path, kubeconfig: Path, port: int) -> list[str]:
    return [str(binary), "--cloud-provider=kwok", f"--kubeconfig={kubeconfig}",
            "--enable-provisioning-requests=true", "--leader-elect=false",
            # JSON: its ProvisioningRequest client (the apis module Kueue pins) has no protobuf codec.
            "--kube-api-content-type=application/json",
            f"--address={LOOPBACK}:{port}", f"--scan-interval={SCAN_INTERVAL}",
            "--scale-down-enabled=true", f"--scale-down-delay-after-add={SCALE_DOWN_AFTER}",
            f"--scale-down-unneeded-time={SCALE_DOWN_AFTER}", "--v=1"]


def _port_file(layout: Layout) -> Path:
    return layout.root / f"{NAME}.port"


def record(layout: Layout) -> processes.ProcessRecord | None:
    """The autoscaler's process, once asked for (kept in the cluster's state, so ``down``
    stops it and ``status`` lists it)."""
    return load_records(layout).get(NAME)


def ensure(client: BlockingClient, layout: Layout, binary: Path, report: Report = print) -> str:
    """Run the autoscaler unless it runs already; returns its health URL."""
    for cm in config_maps():
        client.apply(f"/api/v1/namespaces/{NAMESPACE}/configmaps/{cm['metadata']['name']}", cm)
    old = record(layout)
    if old is not None and processes.is_running(old):
        return _health(int(_port_file(layout).read_text()))
    if old is not None:
        report(f"  {NAME} is not running; restarting it")
    (port,) = free_ports(1)
    # The kwok provider's own client reads $KUBECONFIG in "local" mode (else it wants to run in a pod).
    env = {**os.environ, "POD_NAMESPACE": NAMESPACE, "KWOK_PROVIDER_MODE": "local",
           "KUBECONFIG": str(layout.admin_kubeconfig)}
    proc = processes.spawn(NAME, argv(binary, layout.admin_kubeconfig, port), layout.logs / f"{NAME}.log",
                           env=env)
    _port_file(layout).write_text(str(port))
    save_record(layout, proc)
    # Its health endpoint answers before the cloud provider is built; a finished main loop
    # (reported in its metrics) means it reads the cluster and its node group.
    took = wait_for(f"{NAME}'s first loop", lambda: _looped(port), READY_DEADLINE_S, proc)
    report(f"  {NAME} ready in {took:.1f}s (pid {proc.pid}; node group {NODE_GROUP} of up to {MAX_NODES})")
    return _health(port)


def _looped(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{port}/metrics", timeout=2.0) as resp:
            return b'cluster_autoscaler_last_activity{activity="main"}' in resp.read()
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _health(port: int) -> str:
    return f"http://{LOOPBACK}:{port}/health-check"
