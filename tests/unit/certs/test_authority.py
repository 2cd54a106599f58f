"""The CA and serving certificate: validity, names, reuse and renewal windows."""

from __future__ import annotations

import datetime
import ipaddress
import subprocess
import sys
from pathlib import Path

from cryptography import x509

from certs.authority import (
    CA_VALIDITY,
    CERT_VALIDITY,
    ensure_bundle,
    renewal_reason,
    service_dns_names,
)

NAMES = service_dns_names("pykueue-webhook-service", "pykueue-system")
T0 = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)


def _cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def test_fresh_bundle_has_lifetimes_and_names() -> None:
    bundle, reason = ensure_bundle(None, NAMES, ["127.0.0.1"], now=T0)
    assert reason == "no certificates yet"
    ca, cert = _cert(bundle.ca_crt), _cert(bundle.tls_crt)
    assert ca.not_valid_after_utc - T0 == CA_VALIDITY
    assert cert.not_valid_after_utc - T0 == CERT_VALIDITY
    assert cert.issuer == ca.subject
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "pykueue-webhook-service.pykueue-system.svc" in sans.get_values_for_type(x509.DNSName)
    assert ipaddress.ip_address("127.0.0.1") in sans.get_values_for_type(x509.IPAddress)
    cert.verify_directly_issued_by(ca)  # raises when the signature does not check out


def test_bundle_reused_until_renewal_window() -> None:
    bundle, _ = ensure_bundle(None, NAMES, now=T0)
    same, reason = ensure_bundle(bundle, NAMES, now=T0 + datetime.timedelta(days=274))
    assert reason is None and same is bundle


def test_serving_cert_renewed_within_90_days_keeping_ca() -> None:
    bundle, _ = ensure_bundle(None, NAMES, now=T0)
    later = T0 + datetime.timedelta(days=276)
    renewed, reason = ensure_bundle(bundle, NAMES, now=later)
    assert reason is not None and "serving certificate expires" in reason
    assert renewed.ca_crt == bundle.ca_crt and renewed.tls_crt != bundle.tls_crt
    assert _cert(renewed.tls_crt).not_valid_after_utc - later == CERT_VALIDITY


def test_ca_renewed_near_its_expiry() -> None:
    bundle, _ = ensure_bundle(None, NAMES, now=T0)
    late = T0 + CA_VALIDITY - datetime.timedelta(days=30)
    assert renewal_reason(bundle, NAMES, now=late) == ("ca", "the CA expires within the renewal window")
    renewed, _ = ensure_bundle(bundle, NAMES, now=late)
    assert renewed.ca_crt != bundle.ca_crt


def test_new_name_reissues_cert() -> None:
    bundle, _ = ensure_bundle(None, NAMES, now=T0)
    assert renewal_reason(bundle, NAMES, ["127.0.0.1"], now=T0) == (
        "cert",
        "the serving certificate does not cover every name",
    )


def test_garbage_bundle_starts_over() -> None:
    bundle, _ = ensure_bundle(None, NAMES, now=T0)
    broken = type(bundle)(b"junk", bundle.ca_key, bundle.tls_crt, bundle.tls_key)
    assert renewal_reason(broken, NAMES, now=T0) is not None
    fixed, reason = ensure_bundle(broken, NAMES, now=T0)
    assert reason and fixed.ca_crt != b"junk"


def test_cli_generate_writes_and_reuses(tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "pykueue",
        "certs",
        "generate",
        "--dir",
        str(tmp_path),
        "--dns",
        "svc.ns.svc",
        "--ip",
        "127.0.0.1",
    ]
    first = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    assert {"ca.crt", "tls.crt", "tls.key"} <= {p.name for p in tmp_path.iterdir()}
    assert oct((tmp_path / "tls.key").stat().st_mode & 0o777) == "0o600"
    ca = (tmp_path / "ca.crt").read_bytes()
    second = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert second.returncode == 0 and "nothing written" in second.stdout
    assert (tmp_path / "ca.crt").read_bytes() == ca


def test_cli_generate_without_names_exits_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pykueue", "certs", "generate", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "--dns" in done.stderr


def test_a_client_certificate_is_for_clients_only_and_checked_against_its_ca_and_name() -> None:
    from cryptography import x509 as _x509
    from cryptography.x509.oid import ExtendedKeyUsageOID

    from certs.authority import client_renewal_reason, issue_client, new_ca

    ca_crt, ca_key = new_ca()
    crt, _ = issue_client(ca_crt, ca_key, "pykueue-tas-scheduler")
    cert = _x509.load_pem_x509_certificate(crt)
    usage = cert.extensions.get_extension_for_class(_x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert client_renewal_reason(ca_crt, crt, "pykueue-tas-scheduler") is None
    assert client_renewal_reason(ca_crt, crt, "someone-else") == "not issued to someone-else"
    other_crt, _ = new_ca()
    assert client_renewal_reason(other_crt, crt, "pykueue-tas-scheduler") == "not issued by the current CA"
