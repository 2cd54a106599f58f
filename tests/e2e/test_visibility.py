"""The visibility API through the real aggregation layer of the dev cluster.

The server runs in this test process on loopback, with an in-memory provider, the
requestheader CA and names read from kube-apiserver's published ConfigMap and
SubjectAccessReview authorization against the same kube-apiserver. It is registered as an
APIService behind an ExternalName Service (``devcluster.aggregation``), so every request
below travels kubectl -> kube-apiserver -> aggregator -> this process and back.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from pykueue.api.keys import VISIBILITY_GROUP
from pykueue.devcluster.aggregation import host_api_service_manifests
from pykueue.kube.client import connect
from pykueue.manager.runtime.visibility import OwnerReference, PendingWorkloadInfo
from pykueue.manager.runtime.visibility.assembly import build_visibility_server, inject_ca_bundle
from pykueue.manager.runtime.visibility.server import start
from pykueue.manager.runtime.visibility.tls import service_dns_names
from tests.e2e.conftest import DevCluster

pytestmark = pytest.mark.e2e

SERVICE = "pykueue-visibility-server"
API_SERVICE = f"v1beta2.{VISIBILITY_GROUP}"
GV = f"/apis/{VISIBILITY_GROUP}/v1beta2"


class Provider:
    def __init__(self) -> None:
        owner = OwnerReference(api_version="batch/v1", kind="Job", name="train", uid="0f0e-uid")
        self.queue = [
            PendingWorkloadInfo("job-train-1", "team-a", "lq-a", 200, "2026-01-01T00:00:00Z", (owner,)),
            PendingWorkloadInfo("job-eval-1", "team-b", "lq-b", 100, "2026-01-01T00:00:01Z"),
            PendingWorkloadInfo("job-train-2", "team-a", "lq-a", 100, "2026-01-01T00:00:02Z"),
        ]

    def cluster_queue_snapshot(self, cluster_queue: str) -> list[PendingWorkloadInfo] | None:
        return list(self.queue) if cluster_queue == "cq" else None

    def local_queue_exists(self, namespace: str, local_queue: str) -> str | None:
        return "cq" if (namespace, local_queue) in {("team-a", "lq-a"), ("team-b", "lq-b")} else None


async def poll(what: str, check: Callable[[], Any], explain: Callable[[], str] = str,
               deadline_s: float = 90.0) -> Any:
    """Like ``wait_until``, but keeps the event loop (and so the server under test) running."""
    started = time.monotonic()
    while True:
        value = await asyncio.to_thread(check)
        if value:
            return value
        if time.monotonic() - started > deadline_s:
            pytest.fail(f"timed out after {deadline_s:.0f}s waiting for {what}: {explain()}")
        await asyncio.sleep(0.5)


@dataclass(frozen=True)
class Registered:
    cluster: DevCluster

    async def raw(self, path: str) -> Any:
        result = await asyncio.to_thread(self.cluster.kubectl, "get", "--raw", path)
        return json.loads(result.stdout)

    async def raw_failure(self, path: str) -> str:
        result = await asyncio.to_thread(self.cluster.kubectl, "get", "--raw", path, check=False)
        assert result.returncode != 0, result.stdout
        return result.stderr


def _available(cluster: DevCluster) -> bool:
    result = cluster.kubectl("get", "apiservice", API_SERVICE, "-o", "json", check=False)
    if result.returncode != 0:
        return False
    conditions = json.loads(result.stdout).get("status", {}).get("conditions", [])
    return any(c["type"] == "Available" and c["status"] == "True" for c in conditions)


def _why_unavailable(cluster: DevCluster) -> str:
    conditions = cluster.get_json("apiservice", API_SERVICE).get("status", {}).get("conditions", [])
    return ("; ".join(f"{c['reason']}: {c.get('message', '')}" for c in conditions)
            # A dev cluster started before aggregator routing was turned off resolves only
            # Services with endpoints and rejects ExternalName.
            + " (a dev cluster started by an older checkout needs `pykueue dev down` and `dev up`)")


def _current_api_service(cluster: DevCluster) -> dict[str, Any] | None:
    result = cluster.kubectl("get", "apiservice", API_SERVICE, "-o", "json", check=False)
    if result.returncode != 0:
        return None
    obj = json.loads(result.stdout)
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": {"name": API_SERVICE},
            "spec": obj["spec"]}


@pytest.fixture
async def registered(dev_cluster: DevCluster) -> AsyncIterator[Registered]:
    namespace = await asyncio.to_thread(dev_cluster.namespace)
    # ``dev up`` registers pykueue's own visibility server under the same name; it is put
    # back afterwards so later tests (and the developer's cluster) keep it.
    previous = await asyncio.to_thread(_current_api_service, dev_cluster)
    if previous is not None:  # its caBundle would clash with the insecure registration below
        await asyncio.to_thread(dev_cluster.kubectl, "delete", "apiservice", API_SERVICE)
    async with await connect(dev_cluster.kubeconfig) as api:
        server = await build_visibility_server(api, Provider(),
                                               ("localhost", *service_dns_names(SERVICE, namespace)))
        runner, port = await start(server.app, server.ssl_context())
        try:
            # The namespace exists already; apply only the Service and the APIService. The
            # APIService starts without a caBundle, as the install manifests ship it, and
            # gets the serving certificate injected the way ``pykueue run`` does.
            for manifest in host_api_service_manifests(VISIBILITY_GROUP, "v1beta2", namespace, SERVICE, port,
                                                       None)[1:]:
                await asyncio.to_thread(dev_cluster.apply, manifest)
            await inject_ca_bundle(api, server.serving)
            spec = (await asyncio.to_thread(dev_cluster.get_json, "apiservice", API_SERVICE))["spec"]
            assert base64.b64decode(spec["caBundle"]) == server.serving.cert_pem
            assert not spec.get("insecureSkipTLSVerify")
            await poll(f"APIService {API_SERVICE} to become Available", lambda: _available(dev_cluster),
                       lambda: _why_unavailable(dev_cluster))
            yield Registered(dev_cluster)
        finally:
            # A dangling APIService would break discovery for every later test.
            await asyncio.to_thread(dev_cluster.kubectl, "delete", "apiservice", API_SERVICE,
                                    "--ignore-not-found", check=False)
            if previous is not None:
                await asyncio.to_thread(dev_cluster.apply, previous)
            await runner.cleanup()
            await asyncio.to_thread(dev_cluster.kubectl, "delete", "namespace", namespace, "--wait=false",
                                    check=False)


async def test_pending_workloads_through_the_aggregator(registered: Registered) -> None:
    resources = await registered.raw(GV)
    assert "clusterqueues/pendingworkloads" in {r["name"] for r in resources["resources"]}

    summary = await registered.raw(f"{GV}/clusterqueues/cq/pendingworkloads")
    assert summary["kind"] == "PendingWorkloadsSummary"
    assert [(i["metadata"]["name"], i["priority"], i["positionInClusterQueue"], i["positionInLocalQueue"])
            for i in summary["items"]] == [("job-train-1", 200, 0, 0), ("job-eval-1", 100, 1, 0),
                                           ("job-train-2", 100, 2, 1)]
    assert summary["items"][0]["metadata"]["ownerReferences"][0]["uid"] == "0f0e-uid"

    page = await registered.raw(f"{GV}/namespaces/team-a/localqueues/lq-a/pendingworkloads?offset=1&limit=5")
    assert [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"])
            for i in page["items"]] == [("job-train-2", 2, 1)]


async def test_unknown_queues_are_not_found_through_the_aggregator(registered: Registered) -> None:
    stderr = await registered.raw_failure(f"{GV}/clusterqueues/missing/pendingworkloads")
    assert "NotFound" in stderr and '"missing" not found' in stderr
    stderr = await registered.raw_failure(f"{GV}/namespaces/team-a/localqueues/missing/pendingworkloads")
    assert "NotFound" in stderr
