"""A small certificate authority for the dev cluster, built on ``cryptography``.

The control plane needs three trust roots: the cluster CA (serving certs, client certs
of the admin and of each component, the root CA handed to pods), a separate front-proxy
CA (the aggregation layer's requestheader identity must not be usable as a normal client
cert), and a key pair that signs service-account tokens. Keys are ECDSA P-256 because they
are generated on every fresh ``dev up`` and RSA generation is slow on small machines.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=365)
# Clocks of freshly started processes can disagree by a little; do not start "in the future".
_BACKDATE = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class CertKey:
    cert_pem: bytes
    key_pem: bytes

    def write(self, cert_path: Path, key_path: Path) -> None:
        cert_path.write_bytes(self.cert_pem)
        _write_secret(key_path, self.key_pem)


def _write_secret(path: Path, data: bytes) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_bytes(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


class Authority:
    """A self-signed CA that issues leaf certificates."""

    def __init__(self, common_name: str) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        name = _name(common_name)
        public = self._key.public_key()
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _BACKDATE)
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .sign(self._key, hashes.SHA256())
        )

    @classmethod
    def load(cls, cert_path: Path, key_path: Path) -> Authority:
        """The CA a running cluster was started with, read back from its files, so that
        components added later (the operators) get certificates the cluster trusts."""
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{key_path} does not hold an EC private key")
        authority = cls.__new__(cls)
        authority._key = key
        authority._cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        return authority

    @property
    def cert_pem(self) -> bytes:
        return self._cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, common_name: str, *, organizations: tuple[str, ...] = (),
              dns_names: tuple[str, ...] = (), ip_addresses: tuple[str, ...] = (),
              server: bool = False, client: bool = False) -> CertKey:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usages = []
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organizations))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _BACKDATE)
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False,
                                         content_commitment=False, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=False, crl_sign=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                           critical=False)
        )
        sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
        sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return CertKey(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))

    def write(self, cert_path: Path, key_path: Path | None = None) -> None:
        cert_path.write_bytes(self.cert_pem)
        if key_path is not None:
            _write_secret(key_path, _key_pem(self._key))


def write_signing_key(private_path: Path, public_path: Path) -> None:
    """The service-account token signing pair (private for the issuer, public for checks)."""
    key = ec.generate_private_key(ec.SECP256R1())
    _write_secret(private_path, _key_pem(key))
    public_path.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
