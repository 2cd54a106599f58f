"""The /metrics, /healthz and /readyz endpoints over loopback, in HTTP and HTTPS."""

from __future__ import annotations

import datetime
import gzip
import ipaddress
import ssl
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from prometheus_client.parser import text_string_to_metric_families

from pykueue.kube.endpoints import HealthChecks, accepts_gzip, build_app, start_site
from pykueue.manager.runtime.metrics import KueueMetrics


async def test_metrics_are_served_and_parse() -> None:
    metrics = KueueMetrics()
    metrics.report_pending("cq", 5, 1)
    runner, port = await start_site(build_app(metrics=metrics), "127.0.0.1", 0)
    try:
        async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/metrics") as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            body = await resp.text()
    finally:
        await runner.cleanup()
    families = {f.name: f for f in text_string_to_metric_families(body)}
    pending = {s.labels["status"]: s.value for s in families["kueue_pending_workloads"].samples}
    assert pending == {"active": 5, "inadmissible": 1}


async def test_readyz_fails_naming_the_failing_check_until_it_passes() -> None:
    health = HealthChecks()
    synced = False

    async def informers_synced() -> bool:
        return synced

    health.add_readiness("informers", informers_synced)
    runner, port = await start_site(build_app(health=health), "127.0.0.1", 0)
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/readyz") as resp:
                assert resp.status == 500
                assert "[-]informers failed" in await resp.text()
            async with http.get(f"http://127.0.0.1:{port}/healthz") as resp:
                assert resp.status == 200
            synced = True
            async with http.get(f"http://127.0.0.1:{port}/readyz") as resp:
                assert resp.status == 200 and await resp.text() == "ok"
            async with http.get(f"http://127.0.0.1:{port}/metrics") as resp:
                assert resp.status == 404  # probes app only
    finally:
        await runner.cleanup()


def self_signed(tmp: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp / "tls.crt", tmp / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


async def test_metrics_over_https_when_given_a_certificate(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    runner, port = await start_site(build_app(metrics=KueueMetrics()), "127.0.0.1", 0,
                                    cert_file=str(cert), key_file=str(key))
    client_ctx = ssl.create_default_context(cafile=str(cert))
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"https://127.0.0.1:{port}/metrics", ssl=client_ctx) as resp:
                assert resp.status == 200
                assert "kueue_pending_workloads" in await resp.text()
            try:
                async with http.get(f"http://127.0.0.1:{port}/metrics") as resp:
                    plain_status = resp.status
            except aiohttp.ClientError:
                plain_status = None
            assert plain_status != 200, "plain HTTP must not be served on the TLS port"
    finally:
        await runner.cleanup()


async def test_metrics_are_gzipped_only_for_a_scraper_that_asks() -> None:
    metrics = KueueMetrics()
    metrics.report_pending("cq", 5, 1)
    runner, port = await start_site(build_app(metrics=metrics), "127.0.0.1", 0)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        async with aiohttp.ClientSession(auto_decompress=False) as http:
            async with http.get(url, headers={"Accept-Encoding": "gzip"}) as resp:
                assert resp.headers["Content-Encoding"] == "gzip"
                zipped = await resp.read()
            async with http.get(url, headers={"Accept-Encoding": "gzip;q=0, identity"}) as resp:
                assert "Content-Encoding" not in resp.headers
                plain = await resp.read()
            async with http.get(url, skip_auto_headers=["Accept-Encoding"]) as resp:
                assert "Content-Encoding" not in resp.headers
                assert b"kueue_pending_workloads{" in await resp.read()
    finally:
        await runner.cleanup()
    assert gzip.decompress(zipped) == plain
    assert len(zipped) < len(plain)


@pytest.mark.parametrize(("header", "gzipped"), [
    ("gzip", True), ("deflate, gzip;q=0.5", True), ("*", True), ("GZIP", True),
    ("", False), ("deflate", False), ("gzip;q=0", False), ("gzip;q=0.0, *;q=0", False), ("gzip;q=x", False),
])
def test_accept_encoding_is_read_as_http_says(header: str, gzipped: bool) -> None:
    assert accepts_gzip(header) is gzipped
