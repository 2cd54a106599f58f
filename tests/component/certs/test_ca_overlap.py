"""CA rotation on loopback: while the old and the new CA overlap, a client that trusts only the
published caBundle completes TLS handshakes with a replica still serving the old pair and with
one serving the new pair; with mutual TLS, client pairs of either CA are let in.

Two real :class:`CertRotator`s share one in-memory apiserver; replica B decided on the old
pair before the CA entered its renewal window (its clock lags), replica A rotates it now.
Servers are aiohttp on 127.0.0.1 with the rotators' live contexts.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from pykueue.certs.authority import CertBundle, issue_client, join_pem, now_utc
from pykueue.certs.rotation import VALIDATING_PATH, CertRotator
from tests.component.certs.loopback import der, old_bundle, served_leaf
from tests.unit.certs.memory_apiserver import MemoryApiserver

NAMESPACE = "pykueue-system"
SECRET = "pykueue-webhook-server-cert"
SECRET_PATH = f"/api/v1/namespaces/{NAMESPACE}/secrets/{SECRET}"
CLIENT_SECRET = "scheduler-client-cert"
CLIENT_SECRET_PATH = f"/api/v1/namespaces/{NAMESPACE}/secrets/{CLIENT_SECRET}"
VALIDATING = "pykueue-validating-webhook-configuration"


@dataclass
class Replica:
    rotator: CertRotator
    runner: web.AppRunner
    port: int


@dataclass
class Overlap:
    api: MemoryApiserver
    old: CertBundle  # what the Secret held before the rotation
    a: Replica  # rotated the CA
    b: Replica  # still serves the old pair
    tmp: Path

    def published(self) -> bytes:
        config = self.api.objects[f"{VALIDATING_PATH}/{VALIDATING}"]
        return base64.b64decode(config["webhooks"][0]["clientConfig"]["caBundle"])

    def client(self, cadata: bytes, pair: tuple[bytes, bytes] | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=cadata.decode())
        if pair is not None:
            crt, key = self.tmp / "client.crt", self.tmp / "client.key"
            crt.write_bytes(pair[0])
            key.write_bytes(pair[1])
            context.load_cert_chain(str(crt), str(key))
        return context


async def _healthz(_: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _serve(rotator: CertRotator) -> Replica:
    app = web.Application()
    app.router.add_get("/healthz", _healthz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=rotator.context)
    await site.start()
    return Replica(rotator, runner, int(runner.addresses[0][1]))


@contextlib.asynccontextmanager
async def rotated_overlap(tmp_path: Path, mutual_tls: bool) -> AsyncIterator[Overlap]:
    now = now_utc()
    api = MemoryApiserver()
    api.put_object(f"{VALIDATING_PATH}/{VALIDATING}", {
        "metadata": {"name": VALIDATING}, "webhooks": [{"name": "a", "clientConfig": {}}]})
    old = old_bundle(now)
    data = {k: base64.b64encode(v).decode() for k, v in old.as_files().items()}
    api.put_object(SECRET_PATH, {"metadata": {"name": SECRET, "namespace": NAMESPACE}, "data": data})
    mtls: dict[str, Any] = {"client_ca": True, "clients": {CLIENT_SECRET: "scheduler"}} if mutual_tls else {}

    def rotator(name: str, clock: Callable[[], datetime.datetime]) -> CertRotator:
        return CertRotator(client=api, namespace=NAMESPACE, secret_name=SECRET,  # type: ignore[arg-type]
                           dns_names=("localhost",), ip_addresses=("127.0.0.1",), cert_dir=tmp_path / name,
                           validating=(VALIDATING,), clock=clock, poll_period_s=0.02, **mtls)

    # B checked 100 days ago, when the CA was still outside its renewal window: it keeps it.
    b_rotator = rotator("b", lambda: now - datetime.timedelta(days=100))
    assert await b_rotator.reconcile() == old
    b = await _serve(b_rotator)
    a_rotator = rotator("a", now_utc)
    rotated = await a_rotator.reconcile()
    assert rotated.previous_ca_crt == old.ca_crt
    a = await _serve(a_rotator)
    try:
        yield Overlap(api, old, a, b, tmp_path)
    finally:
        for replica in (a, b):
            await replica.rotator.stop()
            await replica.runner.cleanup()


async def test_a_client_trusting_the_published_bundle_reaches_old_and_new_pairs(tmp_path: Path) -> None:
    async with rotated_overlap(tmp_path, mutual_tls=False) as overlap:
        new = overlap.a.rotator.bundle
        assert new is not None
        published = overlap.published()
        assert published == join_pem(new.ca_crt, overlap.old.ca_crt)
        trusting = overlap.client(published)
        assert await served_leaf(overlap.a.port, trusting) == der(new.tls_crt)
        assert await served_leaf(overlap.b.port, trusting) == der(overlap.old.tls_crt)
        # Without the overlap, the replica that has not reloaded yet would be refused.
        with pytest.raises(ssl.SSLCertVerificationError):
            await served_leaf(overlap.b.port, overlap.client(new.ca_crt))
        # B notices the rotated Secret on its next poll and reloads in place, writing nothing.
        writes = overlap.api.count("PUT") + overlap.api.count("POST")
        overlap.b.rotator.start()
        async with asyncio.timeout(5):
            while await served_leaf(overlap.b.port, trusting) != der(new.tls_crt):
                await asyncio.sleep(0.02)
        assert overlap.api.count("PUT") + overlap.api.count("POST") == writes


async def test_mutual_tls_lets_in_client_pairs_of_either_ca(tmp_path: Path) -> None:
    async with rotated_overlap(tmp_path, mutual_tls=True) as overlap:
        new = overlap.a.rotator.bundle
        assert new is not None
        issued = overlap.api.secret_data(CLIENT_SECRET_PATH)
        # The client's ca.crt, what it verifies the servers by, names both CAs too.
        trusted = issued["ca.crt"]
        assert trusted == join_pem(new.ca_crt, overlap.old.ca_crt)
        new_pair = (issued["tls.crt"], issued["tls.key"])
        old_pair = issue_client(overlap.old.ca_crt, overlap.old.ca_key, "scheduler")  # held before
        for pair in (old_pair, new_pair):  # the rotated replica lets in callers of both CAs
            assert await served_leaf(overlap.a.port, overlap.client(trusted, pair)) == der(new.tls_crt)
        old_leaf = der(overlap.old.tls_crt)
        assert await served_leaf(overlap.b.port, overlap.client(trusted, old_pair)) == old_leaf
        assert await overlap.b.rotator.reconcile_if_changed()
        for pair in (old_pair, new_pair):  # and so does the other once it has taken the new Secret
            assert await served_leaf(overlap.b.port, overlap.client(trusted, pair)) == der(new.tls_crt)
