"""The visibility server as ``pykueue run`` wires it: served from a CertRotator's live context.

A rotation elsewhere (another replica) reaches this server on its next poll: the APIServices'
caBundle names both CAs meanwhile, the new pair is loaded in place (same listener), and the
aggregator's front-proxy client certificate is still verified afterwards.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ssl
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from pykueue.certs.authority import join_pem, now_utc
from pykueue.certs.rotation import API_SERVICE_PATH, CertRotator
from pykueue.manager.runtime.visibility import assembly
from pykueue.manager.runtime.visibility.assembly import API_SERVICE_NAMES, build_rotating_visibility_server
from pykueue.manager.runtime.visibility.auth import RequestHeaderConfig, allowed_by_groups
from pykueue.manager.runtime.visibility.server import start
from tests.component.certs.loopback import der, old_bundle, served_leaf
from tests.component.visibility.conftest import (
    FRONT_PROXY_CLIENT,
    VIEWER_HEADERS,
    VIEWERS,
    Identities,
    InMemoryProvider,
    KeyPair,
)
from tests.unit.certs.memory_apiserver import MemoryApiserver

NAMESPACE = "pykueue-system"
SECRET = "pykueue-visibility-server-cert"
SECRET_PATH = f"/api/v1/namespaces/{NAMESPACE}/secrets/{SECRET}"
PATH = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"


def _published(api: MemoryApiserver) -> set[bytes]:
    return {base64.b64decode(api.objects[f"{API_SERVICE_PATH}/{name}"]["spec"]["caBundle"])
            for name in API_SERVICE_NAMES}


def _client(cadata: bytes, pair: KeyPair | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=cadata.decode())
    if pair is not None:
        with tempfile.TemporaryDirectory() as directory:
            crt, key = Path(directory, "c.crt"), Path(directory, "c.key")
            crt.write_bytes(pair.cert_pem)
            key.write_bytes(pair.key_pem)
            context.load_cert_chain(str(crt), str(key))
    return context


async def _get(port: int, context: ssl.SSLContext) -> int:
    async with aiohttp.ClientSession() as session, session.get(
            f"https://127.0.0.1:{port}{PATH}", ssl=context, headers=VIEWER_HEADERS) as response:
        return response.status


async def test_a_rotation_reaches_the_visibility_server_in_place(
        tmp_path: Path, identities: Identities, monkeypatch: pytest.MonkeyPatch) -> None:
    config = RequestHeaderConfig(client_ca_pem=identities.front_proxy_ca.cert_pem.decode(),
                                 allowed_names=(FRONT_PROXY_CLIENT,))

    async def request_header(_: Any) -> RequestHeaderConfig:
        return config

    # No kube-apiserver: the requestheader configuration and the authorizer are given.
    monkeypatch.setattr(assembly, "load_request_header_config", request_header)
    monkeypatch.setattr(assembly, "SubjectAccessReviewAuthorizer", lambda _: allowed_by_groups([VIEWERS]))
    now = now_utc()
    api = MemoryApiserver()
    for name in API_SERVICE_NAMES:
        api.put_object(f"{API_SERVICE_PATH}/{name}", {"metadata": {"name": name},
                                                      "spec": {"insecureSkipTLSVerify": True}})
    old = old_bundle(now)
    data = {k: base64.b64encode(v).decode() for k, v in old.as_files().items()}
    api.put_object(SECRET_PATH, {"metadata": {"name": SECRET, "namespace": NAMESPACE}, "data": data})

    def rotator(name: str, lag: datetime.timedelta) -> CertRotator:
        return CertRotator(client=api, namespace=NAMESPACE, secret_name=SECRET,  # type: ignore[arg-type]
                           dns_names=("localhost",), ip_addresses=("127.0.0.1",), cert_dir=tmp_path / name,
                           api_services=API_SERVICE_NAMES, clock=lambda: now_utc() - lag, poll_period_s=0.02)

    provider = InMemoryProvider(cluster_queues={"cq": []})
    # This replica took the Secret before its CA entered the renewal window.
    ours = rotator("ours", datetime.timedelta(days=100))
    app, context = await build_rotating_visibility_server(None, provider, ours)  # type: ignore[arg-type]
    assert context is ours.context and ours.bundle == old
    assert _published(api) == {old.ca_crt}
    assert all(api.objects[f"{API_SERVICE_PATH}/{n}"]["spec"]["insecureSkipTLSVerify"] is False
               for n in API_SERVICE_NAMES)
    runner, port = await start(app, context)
    try:
        assert await _get(port, _client(old.ca_crt, identities.front_proxy_client)) == 200
        rotated = await rotator("other", datetime.timedelta()).reconcile()  # another replica rotates
        (published,) = _published(api)
        assert published == join_pem(rotated.ca_crt, old.ca_crt)
        assert await served_leaf(port, _client(published, None)) == der(old.tls_crt)  # still trusted
        ours.start()
        async with asyncio.timeout(5):
            while await served_leaf(port, _client(published, None)) != der(rotated.tls_crt):
                await asyncio.sleep(0.02)  # the next poll reloads the pair into the same context
        assert await _get(port, _client(published, identities.front_proxy_client)) == 200
        assert await _get(port, _client(published, None)) == 401  # no client certificate: no identity
        with pytest.raises((aiohttp.ClientError, ssl.SSLError)):
            await _get(port, _client(published, identities.foreign_client))
    finally:
        await ours.stop()
        await runner.cleanup()
