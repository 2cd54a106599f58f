"""The dev cluster's extender (``pykueue extender`` as the install runs it: its own process and
ServiceAccount, certificates kept in Secrets) trusts only the TAS scheduler.

Callers are refused at the TLS handshake without a client certificate of pykueue's
extender CA, and with 403 when the certificate names another client; even the scheduler's
own identity cannot bind a pod of another scheduler or onto a node the pod excludes. In
no case is a Binding created.
"""

from __future__ import annotations

import base64
import http.client
import itertools
import json
import ssl
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pykueue.certs.authority import issue_client, new_ca
from pykueue.devcluster import addons, cluster

from .conftest import DevCluster, wait_until

pytestmark = pytest.mark.e2e

NAMESPACE = "pykueue-system"
CLIENT_SECRET = "pykueue-tas-scheduler-client-cert"
SERVER_SECRET = "pykueue-extender-server-cert"


def _secret(dev_cluster: DevCluster, name: str) -> dict[str, bytes]:
    data = dev_cluster.get_json("secret", name, "-n", NAMESPACE)["data"]
    return {k: base64.b64decode(v) for k, v in data.items()}


def _extender_address() -> tuple[str, int]:
    state = cluster.current_state()
    record = state.record(addons.EXTENDER) if state is not None else None
    assert record is not None, "the dev cluster runs no extender"
    flags = dict(itertools.pairwise(record.argv))
    return flags["--host"], int(flags["--port"])


def _context(ca: bytes, pair: tuple[bytes, bytes] | None, work: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=ca.decode())
    if pair is not None:
        (work / "c.crt").write_bytes(pair[0])
        (work / "c.key").write_bytes(pair[1])
        context.load_cert_chain(str(work / "c.crt"), str(work / "c.key"))
    return context


def _post(context: ssl.SSLContext, verb: str, body: dict[str, Any]) -> tuple[int, Any]:
    host, port = _extender_address()
    conn = http.client.HTTPSConnection(host, port, context=context, timeout=10)
    try:
        conn.request("POST", f"/{verb}", body=json.dumps(body), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


def _pending_pod(dev_cluster: DevCluster, namespace: str, name: str, scheduler: str,
                 selector: dict[str, str] | None = None) -> dict[str, Any]:
    dev_cluster.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
                       "spec": {"schedulerName": scheduler, "nodeSelector": selector or {},
                                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
    pod: dict[str, Any] = dev_cluster.get_json("pod", name, "-n", namespace)
    return pod


def _binding(pod: dict[str, Any], node: str) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"PodName": meta["name"], "PodNamespace": meta["namespace"], "PodUID": meta["uid"], "Node": node}


def _node_of(dev_cluster: DevCluster, namespace: str, name: str) -> str:
    return str(dev_cluster.get_json("pod", name, "-n", namespace)["spec"].get("nodeName") or "")


def test_callers_without_the_schedulers_certificate_are_refused(
        dev_cluster: DevCluster, namespace: str) -> None:
    pod = _pending_pod(dev_cluster, namespace, "stray", "nobodys-scheduler", {"no-such": "label"})
    client = _secret(dev_cluster, CLIENT_SECRET)
    filter_args = {"Pod": pod, "NodeNames": ["kwok-node-3"]}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # No client certificate: the handshake fails before any verb runs.
        for verb, body in (("filter", filter_args), ("bind", _binding(pod, "kwok-node-3"))):
            with pytest.raises((ssl.SSLError, ConnectionError)):
                _post(_context(client["ca.crt"], None, work), verb, body)
        # A certificate with the right name from another CA: refused at the handshake too.
        other_ca, other_key = new_ca()
        forged = issue_client(other_ca, other_key, "pykueue-tas-scheduler")
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _post(_context(client["ca.crt"], forged, work), "bind", _binding(pod, "kwok-node-3"))
        # Our CA, another client's name: 403.
        server = _secret(dev_cluster, SERVER_SECRET)
        intruder = issue_client(server["ca.crt"], server["ca.key"], "someone-else")
        status, reply = _post(_context(client["ca.crt"], intruder, work), "bind",
                              _binding(pod, "kwok-node-3"))
        assert status == 403 and "someone-else" in reply["Error"]
    assert _node_of(dev_cluster, namespace, "stray") == ""


def test_the_scheduler_itself_cannot_bind_another_schedulers_pod_or_onto_an_excluded_node(
        dev_cluster: DevCluster, namespace: str) -> None:
    client = _secret(dev_cluster, CLIENT_SECRET)
    other = _pending_pod(dev_cluster, namespace, "other", "nobodys-scheduler")
    # A pod of the TAS scheduler that no node matches: it stays pending.
    excluded = _pending_pod(dev_cluster, namespace, "excluded", "pykueue-tas-scheduler", {"no-such": "label"})
    with tempfile.TemporaryDirectory() as tmp:
        scheduler = _context(client["ca.crt"], (client["tls.crt"], client["tls.key"]), Path(tmp))
        status, reply = _post(scheduler, "bind", _binding(other, "kwok-node-3"))
        assert status == 200 and "is for scheduler 'nobodys-scheduler'" in reply["Error"]
        status, reply = _post(scheduler, "bind", _binding(excluded, "kwok-node-3"))
        assert status == 200 and "does not match the pod's nodeSelector no-such=label" in reply["Error"]
        # The verbs do serve the scheduler: its filter answers.
        status, reply = _post(scheduler, "filter", {"Pod": excluded, "NodeNames": ["kwok-node-3"]})
        assert status == 200 and reply["NodeNames"] == ["kwok-node-3"]

    def still_pending() -> bool:
        pods = dev_cluster.get_json("pods", "-n", namespace)["items"]
        return all(not p["spec"].get("nodeName") for p in pods)

    assert still_pending()
    # The TAS scheduler saw the excluded pod too and could not place it (no Binding either).
    def unschedulable() -> bool:
        events = dev_cluster.get_json("events.v1.events.k8s.io", "-n", namespace,
                                      "--field-selector", "regarding.name=excluded")["items"]
        return any(e.get("reason") == "FailedScheduling" for e in events)

    wait_until("the TAS scheduler to report the excluded pod unschedulable", unschedulable, 60.0)
    assert still_pending()
