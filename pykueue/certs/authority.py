"""A private CA and the servers' certificates: issue, check, renew. Pure, no I/O.

Kueue's internal cert management (and cert-controller) keeps a self-signed CA in a Secret and
issues the webhook's serving certificate from it, so the apiserver only ever needs the CA as
``caBundle``. The CA lives long (10 years) and the serving certificate one year; both are
renewed once they enter their last 90 days. Renewing the serving certificate alone keeps the
caBundle unchanged, so the apiserver never sees a window where it distrusts the server.
Renewing the CA keeps the old CA's certificate beside the new one (``ca-previous.crt``) until
it expires, and both are published as the caBundle: replicas that still serve a certificate of
the old CA stay trusted while they catch up.

The visibility API server's certificate is made here too (:func:`self_signed_serving`), so
every certificate the project issues comes from this one module.

Keys are ECDSA P-256: fast to generate and to handshake, accepted by kube-apiserver.
Time is passed in, so tests can age certificates without sleeping.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALIDITY = datetime.timedelta(days=3650)
CERT_VALIDITY = datetime.timedelta(days=365)
RENEW_BEFORE = datetime.timedelta(days=90)
CLOCK_SKEW = datetime.timedelta(minutes=5)
CA_COMMON_NAME = "pykueue-ca"

# Secret data keys, as Kueue's (and cert-manager's) serving-cert Secrets name them.
CA_CRT, CA_KEY, TLS_CRT, TLS_KEY = "ca.crt", "ca.key", "tls.crt", "tls.key"
# Ours: the CA the current one replaced, kept only while it can still verify something.
CA_PREVIOUS_CRT = "ca-previous.crt"


def now_utc() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def join_pem(*pems: bytes | None) -> bytes:
    """PEM blocks one after the other (skipping None), each ending in exactly one newline:
    the same inputs always give the same bytes, so a caBundle compares equal across replicas."""
    return b"".join(pem.strip() + b"\n" for pem in pems if pem)


@dataclass(frozen=True)
class CertBundle:
    """PEM bytes of the CA and the serving pair, as stored in the Secret.

    ``previous_ca_crt`` is the CA this one replaced, while it is unexpired: a replica that has
    not reloaded yet still serves a certificate only that CA verifies, so both are trusted.
    """

    ca_crt: bytes
    ca_key: bytes
    tls_crt: bytes
    tls_key: bytes
    previous_ca_crt: bytes | None = None

    @property
    def trusted_cas(self) -> bytes:
        """The caBundle to publish: the current CA, then the previous one while it is kept."""
        return join_pem(self.ca_crt, self.previous_ca_crt)

    def as_files(self) -> dict[str, bytes]:
        files = {CA_CRT: self.ca_crt, CA_KEY: self.ca_key, TLS_CRT: self.tls_crt, TLS_KEY: self.tls_key}
        if self.previous_ca_crt:
            files[CA_PREVIOUS_CRT] = self.previous_ca_crt
        return files

    @classmethod
    def from_files(cls, data: Mapping[str, bytes]) -> CertBundle:
        """The bundle of stored files; ``ca-previous.crt`` is optional (older Secrets lack it)."""
        missing = [k for k in (CA_CRT, CA_KEY, TLS_CRT, TLS_KEY) if not data.get(k)]
        if missing:
            raise ValueError(f"certificate bundle lacks {', '.join(missing)}")
        return cls(data[CA_CRT], data[CA_KEY], data[TLS_CRT], data[TLS_KEY],
                   data.get(CA_PREVIOUS_CRT) or None)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _alt_names(dns_names: Sequence[str], ip_addresses: Sequence[str]) -> x509.SubjectAlternativeName:
    alt: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
    alt += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    return x509.SubjectAlternativeName(alt)


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issued: datetime.datetime,
    not_after: datetime.datetime,
) -> x509.CertificateBuilder:
    """What every certificate here starts from: a random serial, valid from a little before
    ``issued`` (clients' clocks may lag) until ``not_after``."""
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(issued - CLOCK_SKEW)
        .not_valid_after(not_after)
    )


def new_ca(
    now: datetime.datetime | None = None, validity: datetime.timedelta = CA_VALIDITY
) -> tuple[bytes, bytes]:
    """(ca.crt, ca.key) of a fresh self-signed CA."""
    issued = now or now_utc()
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(f"{CA_COMMON_NAME}@{int(issued.timestamp())}")
    cert = (
        _builder(name, name, key, issued, issued + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def _issue_leaf(
    ca_crt: bytes,
    ca_key: bytes,
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    alt_names: x509.SubjectAlternativeName | None,
    now: datetime.datetime | None,
    validity: datetime.timedelta,
) -> tuple[bytes, bytes]:
    """A fresh key and its certificate for one extended key usage, signed by the CA; never
    outlives the CA."""
    issued = now or now_utc()
    ca = x509.load_pem_x509_certificate(ca_crt)
    signer = serialization.load_pem_private_key(ca_key, password=None)
    if not isinstance(signer, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key is not an ECDSA key")
    key = ec.generate_private_key(ec.SECP256R1())
    builder = _builder(subject, ca.subject, key, issued, min(issued + validity, ca.not_valid_after_utc))
    if alt_names is not None:
        builder = builder.add_extension(alt_names, critical=False)
    cert = (
        builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()), critical=False
        )
        .sign(signer, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def issue_serving(
    ca_crt: bytes,
    ca_key: bytes,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    now: datetime.datetime | None = None,
    validity: datetime.timedelta = CERT_VALIDITY,
) -> tuple[bytes, bytes]:
    """(tls.crt, tls.key) for the given names, signed by the CA; never outlives the CA."""
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    subject = _name(dns_names[0] if dns_names else ip_addresses[0])
    return _issue_leaf(ca_crt, ca_key, subject, ExtendedKeyUsageOID.SERVER_AUTH,
                       _alt_names(dns_names, ip_addresses), now, validity)


def issue_client(
    ca_crt: bytes,
    ca_key: bytes,
    common_name: str,
    now: datetime.datetime | None = None,
    validity: datetime.timedelta = CERT_VALIDITY,
) -> tuple[bytes, bytes]:
    """(tls.crt, tls.key) of a client identity ``common_name`` (clientAuth only, so it can
    never serve), signed by the CA; never outlives the CA."""
    return _issue_leaf(ca_crt, ca_key, _name(common_name), ExtendedKeyUsageOID.CLIENT_AUTH, None,
                       now, validity)


def client_renewal_reason(
    ca_crt: bytes, tls_crt: bytes, common_name: str, now: datetime.datetime | None = None,
    renew_before: datetime.timedelta = RENEW_BEFORE,
) -> str | None:
    """Why a client certificate must be reissued by this CA; None when it is fine."""
    at = now or now_utc()
    try:
        ca = x509.load_pem_x509_certificate(ca_crt)
        cert = x509.load_pem_x509_certificate(tls_crt)
    except ValueError as exc:
        return f"unreadable: {exc}"
    if not _issued_by(cert, ca):
        return "not issued by the current CA"
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not names or names[0].value != common_name:
        return f"not issued to {common_name}"
    if cert.not_valid_after_utc - at < renew_before:
        return "expires within the renewal window"
    return None


def self_signed_serving(
    common_name: str,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    now: datetime.datetime | None = None,
    validity: datetime.timedelta = CERT_VALIDITY,
) -> tuple[bytes, bytes]:
    """(tls.crt, tls.key) of a serving certificate that is its own CA, named
    ``<common_name>@<unix time>``.

    For a server whose clients are handed this very certificate as their ``caBundle`` (the
    visibility API server), so there is no separate CA to keep: Kueue's internal cert mode.
    """
    issued = now or now_utc()
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(f"{common_name}@{int(issued.timestamp())}")
    cert = (
        _builder(name, name, key, issued, issued + validity)
        .add_extension(_alt_names(dns_names, ip_addresses), critical=False)
        # Its own CA, so that it can be handed out as a caBundle.
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def _sans(cert: x509.Certificate) -> tuple[set[str], set[str]]:
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set(), set()
    return set(ext.get_values_for_type(x509.DNSName)), {
        str(ip) for ip in ext.get_values_for_type(x509.IPAddress)
    }


def _issued_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    """Signed by this CA's key. Names alone do not tell: two CAs made within the same second
    share a subject."""
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def renewal_reason(
    bundle: CertBundle,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    now: datetime.datetime | None = None,
    renew_before: datetime.timedelta = RENEW_BEFORE,
) -> tuple[str, str] | None:
    """Why the bundle must change, as (part, reason) with part "ca", "cert" or "previous";
    None when it is fine.

    A CA change implies a new serving certificate (and a new caBundle everywhere); "previous"
    means only the previous CA is to be dropped (expired or unreadable).
    """
    at = now or now_utc()
    try:
        ca = x509.load_pem_x509_certificate(bundle.ca_crt)
        cert = x509.load_pem_x509_certificate(bundle.tls_crt)
        serialization.load_pem_private_key(bundle.ca_key, password=None)
        tls_key = serialization.load_pem_private_key(bundle.tls_key, password=None)
    except ValueError as exc:
        return "ca", f"unreadable: {exc}"
    if ca.not_valid_after_utc - at < renew_before:
        return "ca", "the CA expires within the renewal window"
    if not _issued_by(cert, ca):
        return "cert", "the serving certificate was not issued by the CA"
    if cert.public_key().public_numbers() != tls_key.public_key().public_numbers():  # type: ignore[union-attr]
        return "cert", "the serving key does not match the certificate"
    if cert.not_valid_after_utc - at < renew_before:
        return "cert", "the serving certificate expires within the renewal window"
    dns, ips = _sans(cert)
    if not (set(dns_names) <= dns and set(ip_addresses) <= ips):
        return "cert", "the serving certificate does not cover every name"
    if bundle.previous_ca_crt is not None and _unexpired_ca(bundle.previous_ca_crt, at) is None:
        return "previous", "the previous CA expired or is unreadable"
    return None


def _unexpired_ca(ca_crt: bytes | None, at: datetime.datetime) -> bytes | None:
    """``ca_crt`` while it is readable and unexpired at ``at``, else None: once a CA has
    expired no certificate it signed verifies, so trusting it any longer serves nobody."""
    if not ca_crt:
        return None
    try:
        ca = x509.load_pem_x509_certificate(ca_crt)
    except ValueError:
        return None
    return ca_crt if ca.not_valid_after_utc > at else None


def ensure_bundle(
    current: CertBundle | None,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    now: datetime.datetime | None = None,
) -> tuple[CertBundle, str | None]:
    """The bundle to use from now on, and why it changed (None: ``current`` is reused as is).

    A new CA keeps the one it replaces as ``previous_ca_crt`` while that is readable and
    unexpired (only the last one: a CA replaced twice within one overlap is gone); any change
    drops a previous CA that has expired since.
    """
    at = now or now_utc()
    if current is None:
        reason: tuple[str, str] | None = ("ca", "no certificates yet")
    else:
        reason = renewal_reason(current, dns_names, ip_addresses, at)
    if reason is None and current is not None:
        return current, None
    assert reason is not None
    if current is None or reason[0] == "ca":
        ca_crt, ca_key = new_ca(at)
        previous = None if current is None else _unexpired_ca(current.ca_crt, at)
    elif reason[0] == "previous":
        return replace(current, previous_ca_crt=None), reason[1]
    else:
        ca_crt, ca_key = current.ca_crt, current.ca_key
        previous = _unexpired_ca(current.previous_ca_crt, at)
    tls_crt, tls_key = issue_serving(ca_crt, ca_key, dns_names, ip_addresses, at)
    return CertBundle(ca_crt, ca_key, tls_crt, tls_key, previous), reason[1]

