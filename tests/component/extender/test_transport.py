"""The extender's listener: HTTP/2 by ALPN for kube-scheduler, HTTP/1.1 for everyone else,
with the same mutual-TLS refusals and the same replies on both."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from pykueue.certs.authority import issue_client, issue_serving, new_ca
from pykueue.certs.rotation import require_client_certificates, server_context
from pykueue.extender.app import ExtenderDeps, make_app
from pykueue.extender.server import ExtenderServer, serve
from pykueue.kube.event_loop import run_main

from .h2_client import H2Client
from .memory_cluster import MemoryCluster
from .scenario import ALL_NODES, N11, N12, N21, N22, NAMESPACE, load, names_args, node, plain_pod, pod

ALLOWED = "pykueue-tas-scheduler"
CONCURRENT_BINDS = 4


@dataclass
class Pki:
    directory: Path
    ca: bytes
    serving: tuple[Path, Path]
    pairs: dict[str, tuple[Path, Path]]

    def client(self, name: str | None) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.ca.decode())
        if name is not None:
            context.load_cert_chain(*map(str, self.pairs[name]))
        return context

    def server(self, verify: ssl.VerifyMode = ssl.CERT_REQUIRED) -> ssl.SSLContext:
        context = server_context(*self.serving)
        require_client_certificates(context, self.ca)
        context.verify_mode = verify
        return context


def _files(directory: Path, name: str, pair: tuple[bytes, bytes]) -> tuple[Path, Path]:
    crt, key = directory / f"{name}.crt", directory / f"{name}.key"
    crt.write_bytes(pair[0])
    key.write_bytes(pair[1])
    return crt, key


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("extender-pki")
    ca_crt, ca_key = new_ca()
    other_ca_crt, other_ca_key = new_ca()
    serving = _files(directory, "serving", issue_serving(ca_crt, ca_key, ["localhost"], ["127.0.0.1"]))
    pairs = {name: _files(directory, name, issue_client(ca_crt, ca_key, name))
             for name in (ALLOWED, "intruder")}
    pairs["stranger"] = _files(directory, "stranger", issue_client(other_ca_crt, other_ca_key, ALLOWED))
    return Pki(directory, ca_crt, serving, pairs)


class MeetingCluster(MemoryCluster):
    """Holds every Binding until ``parties`` of them are in flight at once, so the binds of a
    test can only all finish if the server runs them concurrently."""

    def __init__(self, parties: int) -> None:
        super().__init__()
        self.meeting = asyncio.Barrier(parties)

    async def post_binding(self, namespace: str, name: str, uid: str, node: str) -> None:
        await self.meeting.wait()
        await super().post_binding(namespace, name, uid, node)


def _cluster() -> MeetingCluster:
    cluster = MeetingCluster(CONCURRENT_BINDS)
    for name in ALL_NODES:
        cluster.add_node(node(name))
    cluster.add_workload(load("workload.json"))
    for i in range(4):
        cluster.add_pod(pod(i))
    for i in range(CONCURRENT_BINDS):
        cluster.add_pod(plain_pod(f"web-{i}"))
    return cluster


@pytest.fixture
async def cluster() -> MeetingCluster:
    return _cluster()


async def _serve(cluster: MemoryCluster, context: ssl.SSLContext) -> ExtenderServer:
    app = make_app(ExtenderDeps(port=cluster, allowed_clients=frozenset({ALLOWED})))
    return await serve(app, "127.0.0.1", 0, context)


@pytest.fixture
async def server(cluster: MeetingCluster, pki: Pki) -> AsyncIterator[ExtenderServer]:
    started = await _serve(cluster, pki.server())
    try:
        yield started
    finally:
        await started.stop()


async def _http1(port: int, context: ssl.SSLContext, verb: str, body: Any = None) -> tuple[int, bytes]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
        url = f"https://localhost:{port}/{verb}"
        headers = {"Content-Type": "application/json"}  # as kube-scheduler sends
        call = session.get(url) if body is None else session.post(url, data=json.dumps(body).encode(),
                                                                   headers=headers)
        async with call as resp:
            return resp.status, await resp.read()


def _bind(i: int) -> bytes:
    return json.dumps({"PodName": f"web-{i}", "PodNamespace": NAMESPACE, "PodUID": f"uid-web-{i}",
                       "Node": N22}).encode()


async def _scheduler_like_calls(cluster: MeetingCluster, pki: Pki) -> None:
    server = await _serve(cluster, pki.server())
    client = await H2Client.connect(server.port, pki.client(ALLOWED))
    try:
        assert client.alpn == "h2"
        filter_body = json.dumps(names_args(pod(1), [N11, N12, N21])).encode()
        calls = [client.request("POST", "/bind", _bind(i)) for i in range(CONCURRENT_BINDS)]
        calls += [client.request("POST", "/filter", filter_body), client.request("GET", "/healthz")]
        # Each bind waits for all the others: only concurrent streams get past the barrier.
        *binds, filtered, health = await asyncio.wait_for(asyncio.gather(*calls), 10)
        assert [(r.status, json.loads(r.body)) for r in binds] == [(200, {"Error": ""})] * CONCURRENT_BINDS
        assert sorted(cluster.bindings) == [(NAMESPACE, f"web-{i}", N22) for i in range(CONCURRENT_BINDS)]
        assert (filtered.status, json.loads(filtered.body)["NodeNames"]) == (200, [N11, N12, N21])
        assert filtered.headers["content-type"].startswith("application/json")
        assert (health.status, health.body) == (200, b"ok")
        assert len(server.http2) == 1  # every call above on one connection
        assert await _http1(server.port, pki.client(ALLOWED), "healthz") == (200, b"ok")
    finally:
        await client.close()
        await server.stop()


async def test_scheduler_calls_share_one_http2_connection(cluster: MeetingCluster, pki: Pki) -> None:
    await _scheduler_like_calls(cluster, pki)


def test_scheduler_calls_share_one_http2_connection_on_the_servers_loop(pki: Pki) -> None:
    # pykueue serves on uvloop, whose TLS transport is not the standard library's.
    run_main(_scheduler_like_calls(_cluster(), pki))


async def test_http1_clients_get_the_same_replies(server: ExtenderServer, pki: Pki) -> None:
    body = names_args(pod(1), [N11, N12, N21, N22])
    status, over_http1 = await _http1(server.port, pki.client(ALLOWED), "filter", body)
    client = await H2Client.connect(server.port, pki.client(ALLOWED))
    try:
        over_http2 = await client.request("POST", "/filter", json.dumps(body).encode())
        malformed = await client.request("POST", "/filter", b"{not json")
        unknown = await client.request("POST", "/nothing-here", b"{}")
        wrong_method = await client.request("GET", "/bind")
    finally:
        await client.close()
    assert (status, over_http1) == (over_http2.status, over_http2.body)
    assert json.loads(over_http1)["NodeNames"] == [N11, N12, N21]  # N22 is not assigned
    assert malformed.status == 400 and "not JSON" in json.loads(malformed.body)["Error"]
    assert unknown.status == 404
    assert wrong_method.status == 405
    assert (await _http1(server.port, pki.client(ALLOWED), "healthz")) == (200, b"ok")


@pytest.mark.parametrize("who", ["intruder", None])
async def test_caller_without_an_allowed_name_is_refused_on_both_protocols(
    who: str | None, cluster: MeetingCluster, pki: Pki
) -> None:
    # A certificate is optional here, so a caller without one reaches the 401 check.
    server = await _serve(cluster, pki.server(ssl.CERT_OPTIONAL))
    expected = 401 if who is None else 403
    try:
        status, body = await _http1(server.port, pki.client(who), "bind", json.loads(_bind(0)))
        assert status == expected and "Error" in json.loads(body)
        client = await H2Client.connect(server.port, pki.client(who))
        try:
            assert client.alpn == "h2"
            refused = await client.request("POST", "/bind", _bind(0))
            health = await client.request("GET", "/healthz")
        finally:
            await client.close()
        assert (refused.status, health.status) == (expected, expected)
        assert "Error" in json.loads(refused.body)
    finally:
        await server.stop()
    assert cluster.bindings == []


@pytest.mark.parametrize("who", ["stranger", None])
async def test_caller_without_a_certificate_of_our_ca_fails_the_handshake(
    who: str | None, server: ExtenderServer, cluster: MeetingCluster, pki: Pki
) -> None:
    refusals = (aiohttp.ClientError, ssl.SSLError, ConnectionError)
    with pytest.raises(refusals):
        await _http1(server.port, pki.client(who), "bind", json.loads(_bind(0)))

    async def over_http2() -> None:
        client = await H2Client.connect(server.port, pki.client(who))
        try:
            await asyncio.wait_for(client.request("POST", "/bind", _bind(0)), 10)
        finally:
            await client.close()

    with pytest.raises(refusals):
        await over_http2()
    assert cluster.bindings == []
    assert not server.http2


async def test_http2_request_larger_than_the_limit_is_a_413(
    server: ExtenderServer, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pykueue.extender import http2

    monkeypatch.setattr(http2, "MAX_BODY_BYTES", 1000)
    client = await H2Client.connect(server.port, pki.client(ALLOWED))
    try:
        too_large = await client.request("POST", "/filter", b" " * 2000)
    finally:
        await client.close()
    assert too_large.status == 413


async def test_large_bodies_flow_within_http2_windows(
    server: ExtenderServer, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Full Node objects (``nodeCacheCapable: false``) run to megabytes: the request crosses
    the server's receive window and the reply a small client window, frame by frame."""
    from pykueue.extender import http2

    # Windows of the protocol's default size, so this request needs the server's updates.
    monkeypatch.setattr(http2, "STREAM_WINDOW", http2.DEFAULT_WINDOW)
    monkeypatch.setattr(http2, "CONNECTION_WINDOW", http2.DEFAULT_WINDOW)
    nodes = [node(name) for name in ALL_NODES]
    for item in nodes:
        item["metadata"].setdefault("annotations", {})["padding"] = "x" * 40_000
    body = json.dumps({"Pod": pod(1), "Nodes": {"items": nodes}, "NodeNames": None}).encode()
    status, over_http1 = await _http1(server.port, pki.client(ALLOWED), "filter", json.loads(body))
    client = await H2Client.connect(server.port, pki.client(ALLOWED), receive_window=16_384)
    try:
        over_http2 = await asyncio.wait_for(client.request("POST", "/filter", body), 10)
    finally:
        await client.close()
    assert len(body) > 3 * http2.DEFAULT_WINDOW and client.windows_waited > 0  # it had to wait to send
    kept = [item["metadata"]["name"] for item in json.loads(over_http2.body)["Nodes"]["items"]]
    assert (over_http2.status, kept) == (200, [N11, N12, N21])
    assert len(over_http2.body) > 16_384  # so the server waited for window updates to send it
    assert (status, over_http1) == (over_http2.status, over_http2.body)


async def test_rotations_reach_new_http2_connections_and_spare_open_ones(
    cluster: MeetingCluster, pki: Pki, tmp_path: Path
) -> None:
    """What ``CertRotator`` does to the live context (a new serving pair, one more client CA)
    applies to the next handshake; an HTTP/2 connection already open keeps working."""
    context = pki.server()
    server = await _serve(cluster, context)
    before = await H2Client.connect(server.port, pki.client(ALLOWED))
    try:
        assert (await before.request("GET", "/healthz")).status == 200
        new_ca_crt, new_ca_key = new_ca()
        serving = issue_serving(new_ca_crt, new_ca_key, ["localhost"], ["127.0.0.1"])
        renewed = _files(tmp_path, "renewed", serving)
        context.load_cert_chain(*map(str, renewed))
        require_client_certificates(context, new_ca_crt)
        client_pair = _files(tmp_path, "new-client", issue_client(new_ca_crt, new_ca_key, ALLOWED))
        trusting_new = ssl.create_default_context(cadata=new_ca_crt.decode())  # so: the renewed pair
        trusting_new.load_cert_chain(*map(str, client_pair))
        after = await H2Client.connect(server.port, trusting_new)
        try:
            assert after.alpn == "h2"
            assert (await after.request("GET", "/healthz")).status == 200
            assert (await before.request("GET", "/healthz")).status == 200
        finally:
            await after.close()
    finally:
        await before.close()
        await server.stop()
