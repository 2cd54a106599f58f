"""The admission webhook on the live control plane: kube-apiserver calls it over TLS.

``kubectl create --dry-run=server`` runs the whole admission chain without storing
anything, so these tests show exactly what a user would get: the mutations, the denials,
and that a malformed AdmissionReview posted straight at the webhook gets a 400 while the
server keeps serving.
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
import urllib.error
import urllib.request
from typing import Any

import pytest

from pykueue.api import keys

from .conftest import DevCluster

pytestmark = pytest.mark.e2e


def dry_run(dev: DevCluster, obj: dict[str, Any]) -> tuple[bool, Any]:
    result = dev.kubectl(
        "create", "--dry-run=server", "-o", "json", "-f", "-", stdin=json.dumps(obj), check=False
    )
    return result.returncode == 0, json.loads(result.stdout) if result.returncode == 0 else result.stderr


def job(namespace: str, queue: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "wh-job", "namespace": namespace, "labels": {keys.QUEUE_NAME: queue}},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
            }
        },
    }


def test_job_is_suspended_by_the_webhook(dev_cluster: DevCluster, namespace: str) -> None:
    ok, out = dry_run(dev_cluster, job(namespace, "user-queue"))
    assert ok, out
    assert out["spec"]["suspend"] is True


def test_bad_queue_name_is_denied(dev_cluster: DevCluster, namespace: str) -> None:
    ok, err = dry_run(dev_cluster, job(namespace, "Bad_Queue"))
    assert not ok
    assert "vjob.pykueue.x-k8s.io" in err and "metadata.labels[kueue.x-k8s.io/queue-name]" in err


def test_pytorchjob_is_suspended(dev_cluster: DevCluster, namespace: str) -> None:
    template = {"spec": {"containers": [{"name": "pytorch", "image": "pytorch"}]}}
    ok, out = dry_run(
        dev_cluster,
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "pt", "namespace": namespace, "labels": {keys.QUEUE_NAME: "user-queue"}},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": template}}},
        },
    )
    assert ok, out
    assert out["spec"]["runPolicy"]["suspend"] is True


def test_lws_templates_are_stamped(dev_cluster: DevCluster, namespace: str) -> None:
    template = {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    ok, out = dry_run(
        dev_cluster,
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": "lws", "namespace": namespace, "labels": {keys.QUEUE_NAME: "user-queue"}},
            "spec": {
                "replicas": 1,
                "leaderWorkerTemplate": {"size": 2, "leaderTemplate": template, "workerTemplate": template},
            },
        },
    )
    assert ok, out
    worker = out["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]
    assert worker["labels"][keys.QUEUE_NAME] == "user-queue"
    assert worker["annotations"][keys.POD_SUSPENDING_PARENT] == "leaderworkerset.x-k8s.io/leaderworkerset"


def test_bad_cluster_queue_is_denied(dev_cluster: DevCluster) -> None:
    ok, err = dry_run(
        dev_cluster,
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "wh-bad-cq"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {
                                "name": "default",
                                "resources": [{"name": "cpu", "nominalQuota": "1", "lendingLimit": "1"}],
                            }
                        ],
                    }
                ]
            },
        },
    )
    assert not ok
    assert "lendingLimit" in err and "must be nil when cohort is empty" in err


def test_malformed_review_gets_400_and_server_keeps_serving(dev_cluster: DevCluster, namespace: str) -> None:
    name = "pykueue-mutating-webhook-configuration-dev"
    config = dev_cluster.get_json("mutatingwebhookconfiguration", name)
    hook = next(h for h in config["webhooks"] if h["name"] == "mjob.pykueue.x-k8s.io")
    url, ca = hook["clientConfig"]["url"], base64.b64decode(hook["clientConfig"]["caBundle"]).decode()
    with tempfile.NamedTemporaryFile("w", suffix=".crt") as ca_file:
        ca_file.write(ca)
        ca_file.flush()
        context = ssl.create_default_context(cafile=ca_file.name)
        request = urllib.request.Request(
            url, data=b"{not json", method="POST", headers={"Content-Type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as failure:
            urllib.request.urlopen(request, context=context, timeout=10)
    assert failure.value.code == 400 and b"not JSON" in failure.value.read()
    ok, out = dry_run(dev_cluster, job(namespace, "user-queue"))
    assert ok and out["spec"]["suspend"] is True
