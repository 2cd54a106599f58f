"""TLS on loopback for the rotation tests: a CA about to rotate, and what a server presents."""

from __future__ import annotations

import asyncio
import datetime
import ssl

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pykueue.certs.authority import CA_VALIDITY, CertBundle, issue_serving, new_ca


def der(pem: bytes) -> bytes:
    """The certificate of ``pem`` as a TLS peer reports it."""
    return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)


async def served_leaf(port: int, context: ssl.SSLContext) -> bytes:
    """One HTTPS request; the DER certificate the server presented (raises on a failed handshake,
    or, under TLS 1.3, on a client certificate the server refused)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context,
                                                   server_hostname="localhost")
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        await writer.drain()
        response = await asyncio.wait_for(reader.read(), 10)
        assert response.startswith(b"HTTP/1.1 200"), response[:80]
        presented: bytes = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        return presented
    finally:
        writer.close()


def old_bundle(now: datetime.datetime) -> CertBundle:
    """A CA with 60 days left (inside the 90-day renewal window) and its pair, valid now."""
    ca_crt, ca_key = new_ca(now - CA_VALIDITY + datetime.timedelta(days=60))
    tls_crt, tls_key = issue_serving(ca_crt, ca_key, ["localhost"], ["127.0.0.1"], now)
    return CertBundle(ca_crt, ca_key, tls_crt, tls_key)
