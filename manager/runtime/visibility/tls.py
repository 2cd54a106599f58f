"""Serving certificate and TLS context of the visibility server.

An aggregated API server must speak TLS and, to trust the aggregator's identity headers,
ask for a client certificate signed by the requestheader CA. The serving certificate is
self-signed (like Kueue's internal cert mode) for loopback and the in-cluster Service names,
so it works both behind ``insecureSkipTLSVerify`` and with its own PEM as ``caBundle``.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVICE_NAMESPACE = "pykueue-system"
SERVICE_NAME = "pykueue-visibility-server"


def service_dns_names(service: str = SERVICE_NAME, namespace: str = SERVICE_NAMESPACE) -> tuple[str, ...]:
    base = f"{service}.{namespace}"
    # The aggregator verifies the serving cert against ``<service>.<namespace>.svc``.
    return (service, base, f"{base}.svc", f"{base}.svc.cluster.local")


DEFAULT_DNS_NAMES = ("localhost", *service_dns_names())
DEFAULT_IP_ADDRESSES = ("127.0.0.1",)


@dataclass(frozen=True)
class ServingCertificate:
    cert_pem: bytes
    key_pem: bytes


def self_signed_serving_certificate(
    dns_names: Sequence[str] = DEFAULT_DNS_NAMES,
    ip_addresses: Sequence[str] = DEFAULT_IP_ADDRESSES,
    valid_for: datetime.timedelta = datetime.timedelta(days=365),
    now: datetime.datetime | None = None,
) -> ServingCertificate:
    key = ec.generate_private_key(ec.SECP256R1())
    issued = now or datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{SERVICE_NAME}@{int(issued.timestamp())}")])
    alt_names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
    alt_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        # Tolerate small clock skew between the issuing process and its clients.
        .not_valid_before(issued - datetime.timedelta(minutes=5))
        .not_valid_after(issued + valid_for)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        # Self-signed: the certificate is its own CA, so it can be handed out as a caBundle.
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return ServingCertificate(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()),
    )


def server_ssl_context(serving: ServingCertificate, client_ca_pem: str | None) -> ssl.SSLContext:
    """TLS for the server; client certificates are optional but verified when given.

    Optional, because probes and unauthenticated callers must still get a TLS answer (a
    401); verified, because only a certificate from the requestheader CA makes the identity
    headers trustworthy.
    """
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    # The ssl module loads key material only from files; keep them for the duration of the call.
    with tempfile.TemporaryDirectory() as directory:
        cert_path = os.path.join(directory, "tls.crt")
        key_path = os.path.join(directory, "tls.key")
        with open(cert_path, "wb") as cert_file:
            cert_file.write(serving.cert_pem)
        with open(os.open(key_path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as key_file:
            key_file.write(serving.key_pem)
        context.load_cert_chain(cert_path, key_path)
    if client_ca_pem:
        context.load_verify_locations(cadata=client_ca_pem)
        context.verify_mode = ssl.CERT_OPTIONAL
    else:
        context.verify_mode = ssl.CERT_NONE
    return context
