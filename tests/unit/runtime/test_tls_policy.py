"""Kueue's ``tls`` options on pykueue's servers: checked at start, then enforced in real TLS
handshakes (in memory) against a server context made as every server makes its own."""

from __future__ import annotations

import argparse
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykueue.certs.authority import self_signed_serving
from pykueue.kube import tls_policy
from pykueue.kube.tls_policy import TlsPolicy
from pykueue.manager.runtime import cli


@pytest.fixture
def pair(tmp_path: Path) -> tuple[str, str]:
    cert, key = self_signed_serving("tls-test", ["localhost"])
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    return str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")


@pytest.fixture
def policy() -> Iterator[None]:
    yield
    tls_policy.configure(TlsPolicy())


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> tuple[str, str] | None:
    """(version, cipher) the two agree on, or None when the handshake fails."""
    s_in, s_out, c_in, c_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    srv = server.wrap_bio(s_in, s_out, server_side=True)
    cli_ = client.wrap_bio(c_in, c_out, server_hostname="localhost")
    done = {"srv": False, "cli": False}
    for _ in range(10):
        for name, end, out, peer_in in (("cli", cli_, c_out, s_in), ("srv", srv, s_out, c_in)):
            if not done[name]:
                try:
                    end.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
                except ssl.SSLError:
                    return None
            peer_in.write(out.read())
        if all(done.values()):
            version, cipher = cli_.version(), cli_.cipher()
            assert version is not None and cipher is not None
            return version, cipher[0]
    return None


def _client(maximum: ssl.TLSVersion, ciphers: str | None = None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    context.maximum_version = maximum
    if ciphers:
        context.set_ciphers(ciphers)
    return context


def test_by_default_tls_1_2_and_1_3_are_served(pair: tuple[str, str], policy: None) -> None:
    server = tls_policy.server_context()
    server.load_cert_chain(*pair)
    assert _handshake(server, _client(ssl.TLSVersion.TLSv1_2)) is not None
    assert _handshake(server, _client(ssl.TLSVersion.TLSv1_3)) is not None


def test_min_version_tls13_refuses_a_tls12_client(pair: tuple[str, str], policy: None) -> None:
    tls_policy.configure(TlsPolicy.from_config({"minVersion": "VersionTLS13"}))
    server = tls_policy.server_context()
    server.load_cert_chain(*pair)
    assert _handshake(server, _client(ssl.TLSVersion.TLSv1_2)) is None
    assert _handshake(server, _client(ssl.TLSVersion.TLSv1_3)) == ("TLSv1.3", "TLS_AES_256_GCM_SHA384")


def test_cipher_suites_limit_what_a_tls12_client_gets(pair: tuple[str, str], policy: None) -> None:
    tls_policy.configure(TlsPolicy.from_config({"cipherSuites": ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]}))
    server = tls_policy.server_context()
    server.load_cert_chain(*pair)
    assert _handshake(server, _client(ssl.TLSVersion.TLSv1_2)) == ("TLSv1.2", "ECDHE-ECDSA-AES256-GCM-SHA384")
    assert _handshake(server, _client(ssl.TLSVersion.TLSv1_2, "ECDHE-ECDSA-AES128-GCM-SHA256")) is None


@pytest.mark.parametrize(("section", "message"), [
    ({"minVersion": "VersionTLS11"}, "Please use VersionTLS12 or VersionTLS13"),
    ({"minVersion": "VersionTLS13", "cipherSuites": ["TLS_RSA_WITH_AES_128_GCM_SHA256"]},
     "may not be specified when `minVersion` is 'VersionTLS13'"),
    ({"cipherSuites": ["TLS_RSA_WITH_RC4_128_SHA"]}, "invalid cipher suites TLS_RSA_WITH_RC4_128_SHA"),
])
def test_an_invalid_section_is_refused_with_the_reason(section: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TlsPolicy.from_config(section)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_manager_reads_the_section_unless_the_gate_is_off(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("tls: {minVersion: VersionTLS13}\n")
    assert cli.settings_from(_args("--config", str(path))).tls.min_version is ssl.TLSVersion.TLSv1_3
    path.write_text("tls: {minVersion: VersionTLS13}\nfeatureGates: {TLSOptions: false}\n")
    assert cli.settings_from(_args("--config", str(path))).tls == TlsPolicy()


def test_a_self_signed_pair_without_a_cert_dir_leaves_no_key_on_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: None) -> None:
    """Secure metrics (and an exposed dashboard) without a cert dir: the pair is made at start
    and served, and nothing of it stays in the temporary directory."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    server = cli.serving_context(None)
    assert _handshake(server, _client(ssl.TLSVersion.TLSv1_3)) is not None
    assert list(tmp_path.iterdir()) == []
    kept = tmp_path / "certs"
    cli.serving_context(str(kept))  # a named directory keeps the pair for the next start
    assert sorted(p.name for p in kept.iterdir()) == ["tls.crt", "tls.key"]
