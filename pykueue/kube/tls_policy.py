"""The TLS settings every pykueue server uses: Kueue's ``tls`` options (gate TLSOptions).

``minVersion`` (``VersionTLS12``, the default, or ``VersionTLS13``) and ``cipherSuites``
(IANA names, as Go's crypto/tls and Kubernetes' ``--tls-cipher-suites`` spell them) apply to
the webhook, metrics, visibility, dashboard and extender servers alike. The process sets
the policy once at start (:func:`configure`); every server context comes from
:func:`server_context`, so no server can be started with other settings.

``curvePreferences`` cannot be honoured: Python's ssl module selects one curve, not an
ordered list. It is accepted and ignored with a warning rather than failing a Configuration
Kueue accepts.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

VERSIONS = {"VersionTLS12": ssl.TLSVersion.TLSv1_2, "VersionTLS13": ssl.TLSVersion.TLSv1_3}
# TLS 1.2 suites by their IANA names (Go's) -> OpenSSL's names. TLS 1.3 suites are not
# configurable (Go ignores them too); the insecure ones Go still names are refused.
CIPHERS = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
}
TLS13_SUITES = frozenset({"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"})


@dataclass(frozen=True)
class TlsPolicy:
    min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    ciphers: str | None = None  # an OpenSSL cipher list; None: OpenSSL's defaults

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None) -> TlsPolicy:
        """From a Configuration's ``tls``; an invalid one raises ValueError saying what to use."""
        if not section:
            return cls()
        version_name = str(section.get("minVersion") or "VersionTLS12")
        if version_name not in VERSIONS:
            raise ValueError(f"tls.minVersion: invalid minVersion {version_name!r}. "
                             "Please use VersionTLS12 or VersionTLS13")
        names = [str(n) for n in section.get("cipherSuites") or ()]
        if names and version_name == "VersionTLS13":
            raise ValueError("tls.cipherSuites: may not be specified when `minVersion` is 'VersionTLS13'")
        unknown = [n for n in names if n not in CIPHERS and n not in TLS13_SUITES]
        if unknown:
            raise ValueError(f"tls.cipherSuites: invalid cipher suites {', '.join(unknown)}. "
                             f"Please use the secure cipher names: {', '.join(CIPHERS)}")
        if section.get("curvePreferences"):
            log.warning("tls.curvePreferences is ignored: Python's ssl module cannot order curves")
        ciphers = ":".join(dict.fromkeys(CIPHERS[n] for n in names if n in CIPHERS)) or None
        return cls(VERSIONS[version_name], ciphers)

    def apply(self, context: ssl.SSLContext) -> None:
        context.minimum_version = self.min_version
        if self.ciphers is not None:
            context.set_ciphers(self.ciphers)


_policy = TlsPolicy()


def configure(policy: TlsPolicy) -> None:
    """Set the process's policy (once, at start, before any server starts)."""
    global _policy
    _policy = policy


def current() -> TlsPolicy:
    return _policy


def server_context() -> ssl.SSLContext:
    """A server context without key material, under the process's policy."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    _policy.apply(context)
    return context


def load_pair(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """Load a certificate and key held in memory into ``context``. The ssl module reads key
    material only from files: they live in a private directory for the call alone, so no
    key is left on disk after the process (or a rotation) is done with it."""
    with tempfile.TemporaryDirectory(prefix="pykueue-tls-") as directory:  # mode 0700
        cert, key = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
        with open(cert, "wb") as out:
            out.write(cert_pem)
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
            out.write(key_pem)
        context.load_cert_chain(cert, key)
