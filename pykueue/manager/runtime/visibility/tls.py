"""Serving certificate and TLS context of the visibility server.

An aggregated API server must speak TLS and, to trust the aggregator's identity headers,
ask for a client certificate signed by the requestheader CA. The serving certificate is
self-signed (like Kueue's internal cert mode) for loopback and the in-cluster Service names,
so it works both behind ``insecureSkipTLSVerify`` and with its own PEM as ``caBundle``.
It is issued by :mod:`certs.authority`, the project's one place for certificates; this
module only chooses the names and builds the TLS context. ``pykueue run`` instead serves a
Secret-kept pair from :mod:`certs.rotation`, loaded into :func:`client_verifying_context`.
"""

from __future__ import annotations

import datetime
import ssl
from collections.abc import Sequence
from dataclasses import dataclass

from pykueue.certs import names
from pykueue.kube import tls_policy

SERVICE_NAMESPACE = "pykueue-system"
SERVICE_NAME = "pykueue-visibility-server"


def service_dns_names(service: str = SERVICE_NAME, namespace: str = SERVICE_NAMESPACE) -> tuple[str, ...]:
    """The names the visibility Service is dialled by, defaulting to pykueue's own Service."""
    return names.service_dns_names(service, namespace)


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
    from pykueue.certs import authority  # cryptography: only a process that issues one pays for it

    cert_pem, key_pem = authority.self_signed_serving(SERVICE_NAME, dns_names, ip_addresses, now, valid_for)
    return ServingCertificate(cert_pem=cert_pem, key_pem=key_pem)


def client_verifying_context(client_ca_pem: str | None) -> ssl.SSLContext:
    """The server's TLS settings without key material: client certificates are optional but
    verified when given.

    Optional, because probes and unauthenticated callers must still get a TLS answer (a
    401); verified, because only a certificate from the requestheader CA makes the identity
    headers trustworthy. A certificate rotator loads the serving pair into it (in place, on
    every renewal); :func:`server_ssl_context` loads a fixed one.
    """
    context = tls_policy.server_context()
    if client_ca_pem:
        context.load_verify_locations(cadata=client_ca_pem)
        context.verify_mode = ssl.CERT_OPTIONAL
    else:
        context.verify_mode = ssl.CERT_NONE
    return context


def server_ssl_context(serving: ServingCertificate, client_ca_pem: str | None) -> ssl.SSLContext:
    """TLS for the server presenting ``serving``, as :func:`client_verifying_context`."""
    context = client_verifying_context(client_ca_pem)
    tls_policy.load_pair(context, serving.cert_pem, serving.key_pem)
    return context
