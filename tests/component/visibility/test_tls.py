"""The self-signed serving certificate names every address the server is reached by."""

from __future__ import annotations

import ipaddress

from cryptography import x509

from pykueue.manager.runtime.visibility.tls import self_signed_serving_certificate, service_dns_names


def test_serving_certificate_names_loopback_and_the_service() -> None:
    serving = self_signed_serving_certificate()
    cert = x509.load_pem_x509_certificate(serving.cert_pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) >= {
        "localhost", "pykueue-visibility-server.pykueue-system.svc",
        "pykueue-visibility-server.pykueue-system.svc.cluster.local"}
    assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
    # Usable as its own caBundle.
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_service_names_follow_the_namespace() -> None:
    assert "vis.team-x.svc" in service_dns_names("vis", "team-x")
