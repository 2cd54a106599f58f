"""A visibility server on loopback over TLS, an in-memory provider, and aggregator-like clients.

The front-proxy CA and client certificates are made here the way kube-apiserver's are
configured: one CA whose ``front-proxy-client`` certificate may assert identity headers.
"""

from __future__ import annotations

import datetime
import ssl
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykueue.manager.runtime.visibility import PendingWorkloadInfo, RequestHeaderAuthenticator, make_app
from pykueue.manager.runtime.visibility.auth import RequestHeaderConfig, allowed_by_groups
from pykueue.manager.runtime.visibility.server import start
from pykueue.manager.runtime.visibility.tls import (
    ServingCertificate,
    self_signed_serving_certificate,
    server_ssl_context,
)

FRONT_PROXY_CLIENT = "front-proxy-client"
VIEWERS = "pending-workload-viewers"


@dataclass
class InMemoryProvider:
    """Queues held in dicts: the port the queue manager implements in production."""

    cluster_queues: dict[str, list[PendingWorkloadInfo]] = field(default_factory=dict)
    local_queues: dict[tuple[str, str], str] = field(default_factory=dict)

    def cluster_queue_snapshot(self, cluster_queue: str) -> Sequence[PendingWorkloadInfo] | None:
        queue = self.cluster_queues.get(cluster_queue)
        return None if queue is None else tuple(queue)

    def local_queue_exists(self, namespace: str, local_queue: str) -> str | None:
        return self.local_queues.get((namespace, local_queue))


@dataclass(frozen=True)
class KeyPair:
    cert_pem: bytes
    key_pem: bytes


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_ca(common_name: str) -> tuple[KeyPair, ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(_name(common_name))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return _pair(cert, key), key, cert


def issue_client(ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, common_name: str) -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return _pair(cert, key)


def _pair(cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> KeyPair:
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM),
                   key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))


@dataclass(frozen=True)
class Identities:
    front_proxy_ca: KeyPair
    front_proxy_client: KeyPair
    # Signed by the front-proxy CA, but not a name allowed to assert identities.
    other_client_same_ca: KeyPair
    # A client certificate from an unrelated CA.
    foreign_client: KeyPair


@pytest.fixture(scope="session")
def identities() -> Identities:
    ca_pair, ca_key, ca_cert = make_ca("test-front-proxy-ca")
    _, foreign_key, foreign_cert = make_ca("someone-else-ca")
    return Identities(
        front_proxy_ca=ca_pair,
        front_proxy_client=issue_client(ca_key, ca_cert, FRONT_PROXY_CLIENT),
        other_client_same_ca=issue_client(ca_key, ca_cert, "system:kube-controller-manager"),
        foreign_client=issue_client(foreign_key, foreign_cert, FRONT_PROXY_CLIENT),
    )


@pytest.fixture(scope="session")
def serving() -> ServingCertificate:
    return self_signed_serving_certificate()


@dataclass
class Server:
    base_url: str
    serving: ServingCertificate
    provider: InMemoryProvider

    def client_ssl(self, client: KeyPair | None) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.serving.cert_pem.decode())
        if client is not None:
            with tempfile.TemporaryDirectory() as directory:
                cert, key = Path(directory, "c.crt"), Path(directory, "c.key")
                cert.write_bytes(client.cert_pem)
                key.write_bytes(client.key_pem)
                context.load_cert_chain(str(cert), str(key))
        return context

    async def get(self, path: str, client: KeyPair | None, headers: Mapping[str, str] | None = None,
                  params: Mapping[str, str] | None = None, method: str = "GET") -> tuple[int, object]:
        async with aiohttp.ClientSession() as session, session.request(
                method, self.base_url + path, ssl=self.client_ssl(client), headers=dict(headers or {}),
                params=dict(params or {})) as response:
            body = await response.json(content_type=None) if response.content_type == "application/json" \
                else await response.text()
            return response.status, body


@pytest.fixture
async def server(identities: Identities, serving: ServingCertificate) -> AsyncIterator[Server]:
    provider = InMemoryProvider()
    config = RequestHeaderConfig(client_ca_pem=identities.front_proxy_ca.cert_pem.decode(),
                                 allowed_names=(FRONT_PROXY_CLIENT,))
    app = make_app(provider, RequestHeaderAuthenticator(config), allowed_by_groups([VIEWERS]))
    runner, port = await start(app, server_ssl_context(serving, config.client_ca_pem))
    try:
        yield Server(f"https://127.0.0.1:{port}", serving, provider)
    finally:
        await runner.cleanup()


VIEWER_HEADERS = {"X-Remote-User": "alice", "X-Remote-Group": VIEWERS}


def workload(name: str, local_queue: str, priority: int = 0, namespace: str = "team-a",
             created: str = "2026-01-01T00:00:00Z") -> PendingWorkloadInfo:
    return PendingWorkloadInfo(name=name, namespace=namespace, local_queue=local_queue,
                               priority=priority, creation_timestamp=created)
