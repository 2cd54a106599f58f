"""The dev cluster is a real control plane: nodes, scheduling, Jobs, repair, aggregation.

Each test checks behaviour that only the real binaries produce: kube-scheduler binds the
pod, the Job controller creates pods and completes the Job, kwok's stages drive pod
phases, ``dev up`` repairs nodes, and the API server carries the aggregation-layer setup.
"""

from __future__ import annotations

import datetime
import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.client import CoreV1Api

from pykueue.devcluster import addons, cluster, nodes, processes
from tests.e2e.conftest import DevCluster, wait_until

pytestmark = pytest.mark.e2e


def _time(value: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


def _condition(obj: dict[str, Any], kind: str) -> str | None:
    for condition in obj.get("status", {}).get("conditions") or []:
        if condition["type"] == kind:
            return str(condition["status"])
    return None


async def test_eight_kwok_nodes_are_ready_with_topology_labels_and_capacity(dev_cluster: DevCluster) -> None:
    async with await dev_cluster.api_client() as api:
        node_list = await CoreV1Api(api).list_node(label_selector="type=kwok")
    by_name = {n.metadata.name: n for n in node_list.items}
    assert sorted(by_name) == [f"kwok-node-{i}" for i in range(8)]
    for index in range(8):
        node = by_name[f"kwok-node-{index}"]
        labels = node.metadata.labels
        assert labels["cloud.provider.com/topology-block"] == ("b0" if index < 4 else "b1")
        assert labels["cloud.provider.com/topology-rack"] == f"r{index // 2}"
        assert labels["kubernetes.io/hostname"] == f"kwok-node-{index}"
        assert labels["instance-type"] == "on-demand"
        assert labels["type"] == "kwok"
        assert node.status.allocatable == {"cpu": "8", "memory": "32Gi", "pods": "110"}
        assert node.status.capacity == {"cpu": "8", "memory": "32Gi", "pods": "110"}
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert [c.status for c in ready] == ["True"]
        assert not node.spec.taints


def test_pod_is_bound_by_kube_scheduler_and_becomes_running(dev_cluster: DevCluster, namespace: str) -> None:
    # The rack selector forces a choice only a label-aware scheduler makes right.
    dev_cluster.apply({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "plain", "namespace": namespace},
        "spec": {"nodeSelector": {"cloud.provider.com/topology-rack": "r3"},
                 "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]},
    })
    pod = wait_until("pod plain Running", lambda: _running(dev_cluster, namespace, "plain"), 60.0)
    assert pod["spec"]["nodeName"] in ("kwok-node-6", "kwok-node-7")
    assert _condition(pod, "PodScheduled") == "True"
    assert _condition(pod, "Ready") == "True"
    assert pod["status"]["podIP"]
    events = dev_cluster.get_json("events", "-n", namespace,
                                  "--field-selector=involvedObject.name=plain,reason=Scheduled")
    assert [e["source"].get("component") or e.get("reportingComponent") for e in events["items"]] == \
        ["default-scheduler"]

    # No kubelet confirms termination: kwok's delete stage must finish the deletion.
    dev_cluster.kubectl("delete", "pod", "plain", "-n", namespace, "--wait=true", "--timeout=30s")
    assert dev_cluster.kubectl("get", "pod", "plain", "-n", namespace, check=False).returncode != 0


def _running(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any] | None:
    pod: dict[str, Any] = dev_cluster.get_json("pod", name, "-n", namespace)
    return pod if pod.get("status", {}).get("phase") == "Running" else None


def test_job_pods_succeed_after_annotated_delay_and_job_completes(dev_cluster: DevCluster,
                                                                 namespace: str) -> None:
    delay_s = 3
    dev_cluster.apply({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "sample", "namespace": namespace},
        "spec": {"parallelism": 3, "completions": 3, "backoffLimit": 0,
                 "template": {
                     "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": f"{delay_s}s"}},
                     "spec": {"restartPolicy": "Never",
                              "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                              "resources": {"requests": {"cpu": "1"}}}]}}},
    })

    def complete() -> dict[str, Any] | None:
        job: dict[str, Any] = dev_cluster.get_json("job", "sample", "-n", namespace)
        return job if _condition(job, "Complete") == "True" else None

    job = wait_until("Job sample Complete", complete, 90.0)
    assert job["status"]["succeeded"] == 3
    pods = dev_cluster.get_json("pods", "-n", namespace, "-l", "batch.kubernetes.io/job-name=sample")["items"]
    assert len(pods) == 3
    for pod in pods:
        assert [o["kind"] for o in pod["metadata"]["ownerReferences"]] == ["Job"]
        assert pod["spec"]["nodeName"].startswith("kwok-node-")
        assert pod["status"]["phase"] == "Succeeded"
        terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        assert terminated["reason"] == "Completed"
        # kwok stamps whole seconds, so allow one second of rounding.
        ran_for = _time(terminated["finishedAt"]) - _time(pod["status"]["startTime"])
        assert ran_for >= datetime.timedelta(seconds=delay_s - 1)


def test_aggregation_layer_is_configured(dev_cluster: DevCluster) -> None:
    raw = dev_cluster.kubectl("get", "--raw", "/apis").stdout
    assert '"apiregistration.k8s.io"' in raw
    services = dev_cluster.get_json("apiservices")["items"]
    assert any(s["metadata"]["name"] == "v1.batch" for s in services)
    auth = dev_cluster.get_json("configmap", "extension-apiserver-authentication", "-n", "kube-system")
    data = auth["data"]
    assert "BEGIN CERTIFICATE" in data["requestheader-client-ca-file"]
    assert data["requestheader-allowed-names"] == '["front-proxy-client"]'
    assert data["requestheader-username-headers"] == '["X-Remote-User"]'
    assert data["requestheader-group-headers"] == '["X-Remote-Group"]'


def test_integration_crds_are_served(dev_cluster: DevCluster) -> None:
    for crd in ("pytorchjobs.kubeflow.org", "leaderworkersets.leaderworkerset.x-k8s.io"):
        assert _condition(dev_cluster.get_json("crd", crd), "Established") == "True"
    resources = dev_cluster.kubectl("api-resources", "-o", "name").stdout.split()
    assert {"pytorchjobs.kubeflow.org", "leaderworkersets.leaderworkerset.x-k8s.io"} <= set(resources)


def test_status_reports_every_component_running(dev_cluster: DevCluster) -> None:
    result = dev_cluster.dev("status")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == f"kubeconfig: {dev_cluster.kubeconfig}"
    for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "pykueue",
                 "pykueue-extender", "pykueue-tas-scheduler"):
        assert any(line.split()[:1] == [name] and "running" in line.split() for line in lines), name


def _flags(record: processes.ProcessRecord) -> dict[str, str]:
    """A process's ``--flag value`` and ``--flag=value`` arguments."""
    spaced = dict(itertools.pairwise(record.argv))
    return {**spaced, **dict(a.split("=", 1) for a in record.argv if a.startswith("--") and "=" in a)}


def _extender_ca(dev_cluster: DevCluster) -> str:
    secret = dev_cluster.get_json("secret", addons.EXTENDER_SECRET, "-n", addons.PYKUEUE_NAMESPACE)
    return str(secret["data"]["ca.crt"])


def test_the_extender_runs_apart_as_its_own_service_account(dev_cluster: DevCluster) -> None:
    """As installed: pykueue serves no extender; ``pykueue extender`` keeps its certificates in
    the install's Secrets as ServiceAccount pykueue-extender, and ``dev up`` prints its URL. A
    dead one is started again by ``dev up`` with the CA of its Secret, the TAS scheduler
    rewired to it."""
    state = cluster.current_state()
    assert state is not None
    pykueue, extender = state.record(addons.PYKUEUE), state.record(addons.EXTENDER)
    assert pykueue is not None and extender is not None
    assert "--no-extender" in pykueue.argv and "--extender-bind-address" not in pykueue.argv
    flags = _flags(extender)
    assert flags["--cert-secret"] == addons.EXTENDER_SECRET
    users = yaml.safe_load(Path(flags["--kubeconfig"]).read_text())["users"]
    assert [u["name"] for u in users] == ["system:serviceaccount:pykueue-system:pykueue-extender"]
    ca = _extender_ca(dev_cluster)

    assert processes.stop(extender)
    result = dev_cluster.dev("up")
    assert result.returncode == 0, result.stderr
    printed = dict(line.split(": ", 1) for line in result.stdout.strip().splitlines())
    after = cluster.current_state()
    assert after is not None
    restarted, scheduler = after.record(addons.EXTENDER), after.record("pykueue-tas-scheduler")
    assert restarted is not None and processes.is_running(restarted) and restarted.pid != extender.pid
    assert printed["extender"] == f"https://{_flags(restarted)['--host']}:{_flags(restarted)['--port']}"
    assert _extender_ca(dev_cluster) == ca
    assert scheduler is not None and processes.is_running(scheduler)
    config = yaml.safe_load(Path(_flags(scheduler)["--config"]).read_text())
    assert [e["urlPrefix"] for e in config["extenders"]] == [printed["extender"]]


def test_dev_up_restores_deleted_and_changed_nodes(dev_cluster: DevCluster) -> None:
    dev_cluster.kubectl("delete", "node", "kwok-node-5")
    dev_cluster.kubectl("label", "node", "kwok-node-2", "--overwrite", "instance-type=spot")
    assert dev_cluster.kubectl("get", "node", "kwok-node-5", check=False).returncode != 0

    result = dev_cluster.dev("up")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == f"kubeconfig: {dev_cluster.kubeconfig}"
    assert {line.split(":", 1)[0] for line in lines} >= {"metrics", "webhook", "extender", "kubeconfig"}

    restored = dev_cluster.get_json("node", "kwok-node-5")
    assert nodes.node_labels(5).items() <= restored["metadata"]["labels"].items()
    assert restored["status"]["allocatable"]["cpu"] == "8"
    assert _condition(restored, "Ready") == "True"
    relabelled = dev_cluster.get_json("node", "kwok-node-2")
    assert relabelled["metadata"]["labels"]["instance-type"] == "on-demand"


def test_dev_up_restarts_a_component_that_died(dev_cluster: DevCluster) -> None:
    before = cluster.status()
    scheduler = next(c for c in before.components if c.name == "kube-scheduler")
    state = cluster.current_state()
    assert state is not None
    record = state.record("kube-scheduler")
    assert record is not None and record.pid == scheduler.pid
    assert processes.stop(record)
    assert not cluster.status().up

    result = dev_cluster.dev("up")
    assert result.returncode == 0, result.stderr
    assert "kube-scheduler is not running; restarting it" in result.stderr
    after = cluster.status()
    assert after.up
    assert next(c for c in after.components if c.name == "kube-scheduler").pid != scheduler.pid
