"""The CA and serving certificate: validity, names, reuse and renewal windows."""

from __future__ import annotations

import datetime
import ipaddress
import subprocess
import sys
from pathlib import Path

from cryptography import x509

from pykueue.certs.authority import (
    CA_VALIDITY,
    CERT_VALIDITY,
    ensure_bundle,
    new_ca,
    renewal_reason,
)
from pykueue.certs.names import service_dns_names

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

    from pykueue.certs.authority import client_renewal_reason, issue_client, new_ca

    ca_crt, ca_key = new_ca()
    crt, _ = issue_client(ca_crt, ca_key, "pykueue-tas-scheduler")
    cert = _x509.load_pem_x509_certificate(crt)
    usage = cert.extensions.get_extension_for_class(_x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert client_renewal_reason(ca_crt, crt, "pykueue-tas-scheduler") is None
    assert client_renewal_reason(ca_crt, crt, "someone-else") == "not issued to someone-else"
    other_crt, _ = new_ca()
    assert client_renewal_reason(other_crt, crt, "pykueue-tas-scheduler") == "not issued by the current CA"


# --- CA rotation with overlap: the replaced CA stays published until it expires ---------------

def _late(bundle_ca: bytes) -> datetime.datetime:
    """Inside the CA's renewal window, 30 days before it expires."""
    return _cert(bundle_ca).not_valid_after_utc - datetime.timedelta(days=30)


def test_a_new_ca_keeps_the_one_it_replaces_and_both_are_published() -> None:
    bundle, _ = ensure_bundle(None, NAMES, now=T0)
    assert bundle.previous_ca_crt is None and bundle.trusted_cas == bundle.ca_crt
    rotated, reason = ensure_bundle(bundle, NAMES, now=_late(bundle.ca_crt))
    assert reason == "the CA expires within the renewal window"
    assert rotated.ca_crt != bundle.ca_crt and rotated.previous_ca_crt == bundle.ca_crt
    published = x509.load_pem_x509_certificates(rotated.trusted_cas)
    assert [c.subject for c in published] == [_cert(rotated.ca_crt).subject, _cert(bundle.ca_crt).subject]
    # Each leaf verifies against the published bundle: the new one by the first CA, the old one
    # (still served by a replica that has not reloaded) by the second.
    _cert(rotated.tls_crt).verify_directly_issued_by(published[0])
    _cert(bundle.tls_crt).verify_directly_issued_by(published[1])


def test_the_previous_ca_survives_a_serving_renewal_and_reuse_until_it_expires() -> None:
    bundle, _ = ensure_bundle(None, NAMES, now=T0)
    rotated, _ = ensure_bundle(bundle, NAMES, now=_late(bundle.ca_crt))
    before_expiry = _cert(bundle.ca_crt).not_valid_after_utc - datetime.timedelta(seconds=1)
    assert renewal_reason(rotated, NAMES, now=before_expiry) is None
    renamed, reason = ensure_bundle(rotated, (*NAMES, "extra.example"), now=before_expiry)
    assert reason == "the serving certificate does not cover every name"
    assert renamed.ca_crt == rotated.ca_crt and renamed.previous_ca_crt == bundle.ca_crt


def test_the_previous_ca_is_dropped_once_expired_keeping_the_rest() -> None:
    bundle, _ = ensure_bundle(None, NAMES, now=T0)
    rotated, _ = ensure_bundle(bundle, NAMES, now=_late(bundle.ca_crt))
    expired = _cert(bundle.ca_crt).not_valid_after_utc + datetime.timedelta(seconds=1)
    assert renewal_reason(rotated, NAMES, now=expired) == (
        "previous", "the previous CA expired or is unreadable")
    pruned, reason = ensure_bundle(rotated, NAMES, now=expired)
    assert reason is not None and pruned.previous_ca_crt is None
    assert (pruned.ca_crt, pruned.ca_key, pruned.tls_crt, pruned.tls_key) == (
        rotated.ca_crt, rotated.ca_key, rotated.tls_crt, rotated.tls_key)
    assert pruned.trusted_cas == rotated.ca_crt
    assert ensure_bundle(pruned, NAMES, now=expired) == (pruned, None)


def test_an_unreadable_previous_ca_is_dropped() -> None:
    bundle, _ = ensure_bundle(None, NAMES, now=T0)
    damaged = type(bundle)(bundle.ca_crt, bundle.ca_key, bundle.tls_crt, bundle.tls_key, b"junk")
    assert renewal_reason(damaged, NAMES, now=T0) == ("previous", "the previous CA expired or is unreadable")
    fixed, _ = ensure_bundle(damaged, NAMES, now=T0)
    assert fixed.previous_ca_crt is None and fixed.tls_crt == bundle.tls_crt


def test_an_unreadable_or_expired_ca_is_not_kept_as_previous() -> None:
    bundle, _ = ensure_bundle(None, NAMES, now=T0)
    broken = type(bundle)(b"junk", bundle.ca_key, bundle.tls_crt, bundle.tls_key)
    assert ensure_bundle(broken, NAMES, now=T0)[0].previous_ca_crt is None
    long_dead = _cert(bundle.ca_crt).not_valid_after_utc + datetime.timedelta(days=1)
    restarted, reason = ensure_bundle(bundle, NAMES, now=long_dead)
    assert reason and restarted.previous_ca_crt is None and restarted.ca_crt != bundle.ca_crt


def test_a_ca_replaced_because_its_pair_broke_stays_trusted() -> None:
    """A new CA for any reason keeps a still-valid old one: replicas serve the old leaf meanwhile."""
    bundle, _ = ensure_bundle(None, NAMES, now=T0)
    broken = type(bundle)(bundle.ca_crt, bundle.ca_key, b"junk", bundle.tls_key)
    fixed, reason = ensure_bundle(broken, NAMES, now=T0)
    assert reason and reason.startswith("unreadable")
    assert fixed.ca_crt != bundle.ca_crt and fixed.previous_ca_crt == bundle.ca_crt


def test_files_round_trip_with_and_without_a_previous_ca() -> None:
    from pykueue.certs.authority import CA_PREVIOUS_CRT, CertBundle

    bundle, _ = ensure_bundle(None, NAMES, now=T0)
    old_secret = {"ca.crt": bundle.ca_crt, "ca.key": bundle.ca_key, "tls.crt": bundle.tls_crt,
                  "tls.key": bundle.tls_key}
    assert bundle.as_files() == old_secret  # no new key while nothing overlaps
    assert CertBundle.from_files(old_secret) == bundle
    rotated, _ = ensure_bundle(bundle, NAMES, now=_late(bundle.ca_crt))
    files = rotated.as_files()
    assert files[CA_PREVIOUS_CRT] == bundle.ca_crt
    assert CertBundle.from_files(files) == rotated
    assert CertBundle.from_files({**old_secret, CA_PREVIOUS_CRT: b""}).previous_ca_crt is None


def test_join_pem_normalises_line_ends() -> None:
    from pykueue.certs.authority import join_pem

    assert join_pem(b"A\n", None, b"B") == join_pem(b"A", b"B\n\n") == b"A\nB\n"
    assert join_pem() == b""


def test_cli_generate_removes_a_previous_ca_that_expired(tmp_path: Path) -> None:
    """A kept CA that has expired leaves the directory with the bundle: the next run is a no-op."""
    cmd = [sys.executable, "-m", "pykueue", "certs", "generate", "--dir", str(tmp_path),
           "--dns", "svc.ns.svc"]
    assert subprocess.run(cmd, capture_output=True, text=True, check=False).returncode == 0
    expired_ca, _ = new_ca(datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=4000))
    (tmp_path / "ca-previous.crt").write_bytes(expired_ca)
    again = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert again.returncode == 0 and "wrote" in again.stdout, again.stdout + again.stderr
    assert not (tmp_path / "ca-previous.crt").exists()
    last = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert "nothing written" in last.stdout
