"""``pykueue simulate --cluster`` on the dev cluster, as a user with get/list rights only.

A 2-CPU ClusterQueue runs a 2-CPU Job. A what-if of a 1-CPU Job predicts Pending
(WaitingForQuota) in that queue and Admitted in an empty one; ``--until-admitted`` names the
estimate it used; once the running Job has finished the same what-if predicts Admitted.
Nothing is created: the commands run with a ServiceAccount token bound to a ClusterRole that
can only get and list.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import keys

from .conftest import REPO, DevCluster, wait_until
from .test_queueing import _workload_of

pytestmark = pytest.mark.e2e
READ_ONLY_RULES = [
    {"apiGroups": [""], "resources": ["namespaces", "nodes", "pods", "configmaps"], "verbs": ["get", "list"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list"]},
    {"apiGroups": ["kubeflow.org"], "resources": ["pytorchjobs"], "verbs": ["get", "list"]},
    {"apiGroups": ["leaderworkerset.x-k8s.io"], "resources": ["leaderworkersets"], "verbs": ["get", "list"]},
    {"apiGroups": [keys.GROUP], "resources": [
        "resourceflavors", "cohorts", "clusterqueues", "localqueues", "workloadpriorityclasses",
        "admissionchecks", "topologies", "workloads"], "verbs": ["get", "list"]},
]


def read_only_kubeconfig(dev_cluster: DevCluster, namespace: str, path: Path) -> Path:
    """A kubeconfig whose user is a ServiceAccount that may only get and list."""
    role = f"what-if-reader-{namespace}"
    dev_cluster.apply({"apiVersion": "v1", "kind": "ServiceAccount",
                       "metadata": {"name": "reader", "namespace": namespace}})
    dev_cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": role}, "rules": READ_ONLY_RULES})
    dev_cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                       "metadata": {"name": role},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                   "name": role},
                       "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}]})
    token = dev_cluster.kubectl("create", "token", "reader", "-n", namespace).stdout.strip()
    admin = yaml.safe_load(dev_cluster.kubeconfig.read_text())
    cluster = admin["clusters"][0]["cluster"]
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "reader",
        "clusters": [{"name": "dev", "cluster": cluster}],
        "users": [{"name": "reader", "user": {"token": token}}],
        "contexts": [{"name": "reader", "context": {"cluster": "dev", "user": "reader"}}]}))
    # The role really is read-only: creating a Job is refused.
    denied = subprocess.run(["kubectl", f"--kubeconfig={path}", "auth", "can-i", "create", "jobs", "-n",
                             namespace], capture_output=True, text=True, timeout=60, check=False)
    assert denied.stdout.strip() == "no"
    return path


def pykueue(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykueue", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)


def _queue(dev_cluster: DevCluster, namespace: str, suffix: str, lq: str) -> str:
    flavor, cq = f"rf-{namespace}", f"cq-{suffix}-{namespace}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ResourceFlavor",
                       "metadata": {"name": flavor}})
    quota = {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "2"}]}
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cq},
                       "spec": {"namespaceSelector": {},
                                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [quota]}]}})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
                       "metadata": {"name": lq, "namespace": namespace}, "spec": {"clusterQueue": cq}})
    return cq


def job(namespace: str, name: str, queue: str, cpu: str, delay: str = "1s") -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "labels": {keys.QUEUE_NAME: queue}},
            "spec": {"template": {
                "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": delay}},
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}}}


def what_if(kubeconfig: Path, *args: str) -> dict[str, Any]:
    result = pykueue("simulate", "--cluster", "--json", "--kubeconfig", str(kubeconfig), *args)
    assert result.returncode == 0, result.stderr
    view: dict[str, Any] = json.loads(result.stdout)
    return view


def submitted(view: dict[str, Any], owner: str) -> dict[str, Any]:
    found = [w for w in view["workloads"].values() if w.get("submitted") and w["owner"] == owner]
    assert len(found) == 1, view["submitted"]
    return found[0]


def _names(dev_cluster: DevCluster, kind: str, namespace: str) -> list[str]:
    return sorted(i["metadata"]["name"] for i in dev_cluster.get_json(kind, "-n", namespace)["items"])


def test_what_if_predicts_and_writes_nothing(dev_cluster: DevCluster, namespace: str, tmp_path: Path) -> None:
    reader = read_only_kubeconfig(dev_cluster, namespace, tmp_path / "reader.kubeconfig")
    full = _queue(dev_cluster, namespace, "full", "lq")
    empty = _queue(dev_cluster, namespace, "empty", "lq-empty")
    dev_cluster.apply(job(namespace, "runs", "lq", "2", delay="25s"))
    wait_until("the running Job admitted", lambda: (
        (wl := _workload_of(dev_cluster, namespace, "runs")) is not None
        and (wl.get("status") or {}).get("admission")), 60.0)
    files = {}
    for name, queue in (("to-full", "lq"), ("to-empty", "lq-empty")):
        files[name] = tmp_path / f"{name}.yaml"
        files[name].write_text(yaml.safe_dump(job(namespace, name, queue, "1")))
    before = (_names(dev_cluster, "jobs", namespace),
              _names(dev_cluster, "workloads.kueue.x-k8s.io", namespace))

    view = what_if(reader, str(files["to-full"]), str(files["to-empty"]))
    waits = submitted(view, f"batch/v1/Job {namespace}/to-full")
    assert (waits["status"], waits["tier"], waits["clusterQueue"], waits["position"]) == (
        "Pending", "WaitingForQuota", full, 1)
    assert "1 more needed" in waits["reason"]
    fits = submitted(view, f"batch/v1/Job {namespace}/to-empty")
    assert (fits["status"], fits["clusterQueue"]) == ("Admitted", empty)
    assert fits["podSets"]["main"]["flavors"] == {"cpu": f"rf-{namespace}"}
    assert view["clusterQueues"][full]["usage"] == {f"rf-{namespace}": {"cpu": "2"}}

    # In simulated time: the running Job has no deadline, so the assumed runtime is used.
    later = what_if(reader, "--until-admitted", "--assume-runtime", "10m", str(files["to-full"]))
    predicted = submitted(later, f"batch/v1/Job {namespace}/to-full")["predictedAdmission"]
    assert predicted["estimates"] == ["assumedRuntime"] and 0 < predicted["inSeconds"] <= 600
    assert predicted["clusterQueue"] == full

    # Text output names the prediction too.
    table = pykueue("simulate", "--cluster", "--kubeconfig", str(reader), str(files["to-full"]))
    assert table.returncode == 0 and "WaitingForQuota" in table.stdout, table.stderr

    def finished() -> bool:
        wl = _workload_of(dev_cluster, namespace, "runs") or {}
        return any(c["type"] == "Finished" and c["status"] == "True"
                   for c in (wl.get("status") or {}).get("conditions") or ())

    wait_until("the running Job's Workload finished", finished, 90.0)
    after = what_if(reader, str(files["to-full"]))
    assert submitted(after, f"batch/v1/Job {namespace}/to-full")["status"] == "Admitted"

    # Nothing was created on the way.
    assert (_names(dev_cluster, "jobs", namespace),
            _names(dev_cluster, "workloads.kueue.x-k8s.io", namespace)) == before


def test_what_if_errors_are_one_line(dev_cluster: DevCluster, namespace: str, tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(job(namespace, "j", "lq", "1")))
    unreachable = tmp_path / "unreachable.kubeconfig"
    config = yaml.safe_load(dev_cluster.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    unreachable.write_text(yaml.safe_dump(config))
    for args in (("simulate", "--cluster", "--kubeconfig", str(unreachable), str(manifest)),
                 ("explain", "-n", namespace, "job/j", "--kubeconfig", str(unreachable)),
                 ("explain", "-n", namespace, "job/missing", "--kubeconfig", str(dev_cluster.kubeconfig))):
        result = pykueue(*args)
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "not found" in result.stderr
