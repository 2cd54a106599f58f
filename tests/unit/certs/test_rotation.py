"""CertRotator against an in-memory apiserver: a rotated CA is published together with the one
it replaced, before any replica serves the new pair, and dropped once it has expired."""

from __future__ import annotations

import asyncio
import base64
import datetime
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from pykueue.certs.authority import CA_PREVIOUS_CRT, join_pem
from pykueue.certs.rotation import API_SERVICE_PATH, CRD_PATH, VALIDATING_PATH, CertRotator

from .memory_apiserver import MemoryApiserver, recording_context

NAMESPACE = "pykueue-system"
SECRET = "pykueue-webhook-server-cert"
SECRET_PATH = f"/api/v1/namespaces/{NAMESPACE}/secrets/{SECRET}"
VALIDATING = "pykueue-validating-webhook-configuration"
CRD = "workloads.kueue.x-k8s.io"
T0 = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)


class Clock:
    def __init__(self, now: datetime.datetime) -> None:
        self.now = now

    def __call__(self) -> datetime.datetime:
        return self.now


def _cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def _apiserver() -> MemoryApiserver:
    api = MemoryApiserver()
    api.put_object(f"{VALIDATING_PATH}/{VALIDATING}", {
        "metadata": {"name": VALIDATING}, "webhooks": [{"name": "a", "clientConfig": {}},
                                                       {"name": "b", "clientConfig": {}}]})
    api.put_object(f"{CRD_PATH}/{CRD}", {
        "metadata": {"name": CRD},
        "spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {}}}}})
    return api


def _rotator(api: MemoryApiserver, clock: Clock, tmp_path: Path, name: str, **kwargs: Any) -> CertRotator:
    return CertRotator(client=api, namespace=NAMESPACE, secret_name=SECRET,  # type: ignore[arg-type]
                       dns_names=("svc.ns.svc",), ip_addresses=("127.0.0.1",), cert_dir=tmp_path / name,
                       context=recording_context(api.log), validating=(VALIDATING,), crds=(CRD,),
                       clock=clock, **kwargs)


def _webhook_bundles(api: MemoryApiserver) -> set[bytes]:
    config = api.objects[f"{VALIDATING_PATH}/{VALIDATING}"]
    crd = api.objects[f"{CRD_PATH}/{CRD}"]
    return {base64.b64decode(h["clientConfig"]["caBundle"]) for h in config["webhooks"]} | {
        base64.b64decode(crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"])}


def _late(api: MemoryApiserver) -> datetime.datetime:
    """30 days before the Secret's CA expires: inside its renewal window."""
    return _cert(api.secret_data(SECRET_PATH)["ca.crt"]).not_valid_after_utc - datetime.timedelta(days=30)


def _index(log: list[tuple[str, str]], match: Callable[[tuple[str, str]], bool]) -> int:
    return next(i for i, entry in enumerate(log) if match(entry))


async def test_a_rotation_publishes_both_cas_before_this_replica_serves_the_new_pair(tmp_path: Path) -> None:
    api, clock = _apiserver(), Clock(T0)
    rotator = _rotator(api, clock, tmp_path, "a")
    first = await rotator.reconcile()
    assert _webhook_bundles(api) == {first.ca_crt}
    clock.now = _late(api)
    mark = len(api.log)
    rotated = await rotator.reconcile()
    assert rotated.previous_ca_crt == first.ca_crt and rotated.ca_crt != first.ca_crt
    assert _webhook_bundles(api) == {join_pem(rotated.ca_crt, first.ca_crt)}
    assert api.secret_data(SECRET_PATH)[CA_PREVIOUS_CRT] == first.ca_crt
    log = api.log[mark:]
    secret_written = _index(log, lambda e: e == ("PUT", SECRET_PATH))
    webhooks_trust = _index(log, lambda e: e == ("PUT", f"{VALIDATING_PATH}/{VALIDATING}"))
    crd_trusts = _index(log, lambda e: e == ("PUT", f"{CRD_PATH}/{CRD}"))
    served = _index(log, lambda e: e[0] == "load")
    assert secret_written < webhooks_trust < crd_trusts < served
    assert log[served][1].encode() == rotated.tls_crt
    assert (tmp_path / "a" / "ca.crt").read_bytes() == rotated.trusted_cas


async def test_without_a_cert_dir_no_key_is_left_on_disk(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The extender's and the visibility server's rotators keep the pair in memory: the files
    the ssl module needs exist only while a pair is loaded, at start and at each rotation."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    api, clock = _apiserver(), Clock(T0)
    rotator = CertRotator(client=api, namespace=NAMESPACE, secret_name=SECRET,  # type: ignore[arg-type]
                          dns_names=("svc.ns.svc",), ip_addresses=("127.0.0.1",),
                          context=recording_context(api.log), validating=(VALIDATING,), clock=clock)
    first = await rotator.reconcile()
    clock.now = _late(api)
    rotated = await rotator.reconcile()
    loads = [pem for verb, pem in api.log if verb == "load"]
    assert loads == [first.tls_crt.decode(), rotated.tls_crt.decode()]
    assert list(scratch.iterdir()) == []


async def test_other_replicas_take_the_rotated_secret_without_writing_anything(tmp_path: Path) -> None:
    api, clock = _apiserver(), Clock(T0)
    a, b = _rotator(api, clock, tmp_path, "a"), _rotator(api, clock, tmp_path, "b")
    await a.reconcile()
    mark = len(api.log)
    await b.reconcile()
    assert [v for v, _ in api.log[mark:]].count("PUT") == 0  # same Secret, same caBundles
    assert not await b.reconcile_if_changed()
    clock.now = _late(api)
    rotated = await a.reconcile()
    mark = len(api.log)
    assert await b.reconcile_if_changed()
    assert b.bundle == rotated
    assert [v for v, _ in api.log[mark:] if v in ("PUT", "POST")] == []  # the two-CA bundle is there
    assert ("load", rotated.tls_crt.decode()) in api.log[mark:]
    mark = len(api.log)
    assert not await b.reconcile_if_changed()
    assert api.log[mark:] == [("GET", SECRET_PATH)]  # a poll without change is one GET
    # A replica (re)started during the overlap publishes and serves the same, writing nothing.
    mark = len(api.log)
    c = _rotator(api, clock, tmp_path, "c")
    assert await c.reconcile() == rotated
    assert [v for v, _ in api.log[mark:]].count("PUT") == 0


async def test_the_previous_ca_leaves_every_bundle_once_it_expired(tmp_path: Path) -> None:
    api, clock = _apiserver(), Clock(T0)
    a, b = _rotator(api, clock, tmp_path, "a"), _rotator(api, clock, tmp_path, "b")
    first = await a.reconcile()
    await b.reconcile()
    clock.now = _late(api)
    rotated = await a.reconcile()
    await b.reconcile_if_changed()
    clock.now = _cert(first.ca_crt).not_valid_after_utc + datetime.timedelta(seconds=1)
    mark = len(api.log)
    pruned = await a.reconcile()
    assert pruned.previous_ca_crt is None and CA_PREVIOUS_CRT not in api.secret_data(SECRET_PATH)
    assert _webhook_bundles(api) == {rotated.ca_crt}
    assert not any(v == "load" for v, _ in api.log[mark:])  # the served pair did not change
    assert await b.reconcile_if_changed() and b.bundle == pruned


async def test_mutual_tls_trusts_both_cas_and_clients_verify_the_server_by_both(tmp_path: Path) -> None:
    api, clock = _apiserver(), Clock(T0)
    client_path = f"/api/v1/namespaces/{NAMESPACE}/secrets/scheduler-client"
    mtls = {"client_ca": True, "clients": {"scheduler-client": "scheduler"}}
    a = _rotator(api, clock, tmp_path, "a", **mtls)
    first = await a.reconcile()
    before = api.secret_data(client_path)
    assert before["ca.crt"] == first.ca_crt
    _cert(before["tls.crt"]).verify_directly_issued_by(_cert(first.ca_crt))
    clock.now = _late(api)
    rotated = await a.reconcile()
    during = api.secret_data(client_path)
    assert during["ca.crt"] == join_pem(rotated.ca_crt, first.ca_crt)
    _cert(during["tls.crt"]).verify_directly_issued_by(_cert(rotated.ca_crt))

    def trusted(rotator: CertRotator) -> set[int]:
        assert rotator.context is not None
        return {int(ca["serialNumber"], 16) for ca in rotator.context.get_ca_certs()}

    both = {_cert(first.ca_crt).serial_number, _cert(rotated.ca_crt).serial_number}
    assert trusted(a) == both
    restarted = _rotator(api, clock, tmp_path, "b", **mtls)
    await restarted.reconcile()
    assert trusted(restarted) == both  # a client still holding the old pair is let in
    clock.now = _cert(first.ca_crt).not_valid_after_utc + datetime.timedelta(seconds=1)
    await a.reconcile()
    after = api.secret_data(client_path)
    assert after["ca.crt"] == rotated.ca_crt and after["tls.crt"] == during["tls.crt"]  # no reissue


async def test_api_services_get_both_cas_and_missing_or_forbidden_ones_are_skipped(tmp_path: Path) -> None:
    api, clock = _apiserver(), Clock(T0)
    ours, missing, forbidden = "v1beta2.visibility.x", "v1beta1.visibility.x", "v1.visibility.x"
    api.put_object(f"{API_SERVICE_PATH}/{ours}", {
        "metadata": {"name": ours},
        "spec": {"insecureSkipTLSVerify": True, "service": {"name": "vis", "namespace": NAMESPACE}}})
    api.forbidden.add(f"{API_SERVICE_PATH}/{forbidden}")
    a = _rotator(api, clock, tmp_path, "a", api_services=(ours, missing, forbidden))
    first = await a.reconcile()
    spec = api.objects[f"{API_SERVICE_PATH}/{ours}"]["spec"]
    assert base64.b64decode(spec["caBundle"]) == first.ca_crt and spec["insecureSkipTLSVerify"] is False
    assert spec["service"] == {"name": "vis", "namespace": NAMESPACE}
    clock.now = _late(api)
    rotated = await a.reconcile()
    spec = api.objects[f"{API_SERVICE_PATH}/{ours}"]["spec"]
    assert base64.b64decode(spec["caBundle"]) == join_pem(rotated.ca_crt, first.ca_crt)
    assert a.ready


async def test_the_loop_polls_the_secret_and_reconciles_only_on_a_change(tmp_path: Path) -> None:
    api, clock = _apiserver(), Clock(T0)
    a = _rotator(api, clock, tmp_path, "a")
    b = _rotator(api, clock, tmp_path, "b", poll_period_s=0.01)
    await a.reconcile()
    await b.reconcile()
    mark = len(api.log)
    b.start()
    try:
        await asyncio.sleep(0.2)
        polled = api.log[mark:]
        assert polled and set(polled) == {("GET", SECRET_PATH)}
        clock.now = _late(api)
        rotated = await a.reconcile()
        async with asyncio.timeout(5):
            while b.bundle != rotated:
                await asyncio.sleep(0.01)
    finally:
        await b.stop()


async def test_the_loop_retries_a_failed_pass_at_the_next_poll(tmp_path: Path) -> None:
    api, clock = _apiserver(), Clock(T0)
    a = _rotator(api, clock, tmp_path, "a")
    b = _rotator(api, clock, tmp_path, "b", poll_period_s=0.01)
    await a.reconcile()
    await b.reconcile()
    clock.now = _late(api)
    rotated = await a.reconcile()
    webhooks = f"{VALIDATING_PATH}/{VALIDATING}"
    api.failures[webhooks] = 500  # B's first pass after the change fails at the caBundles
    mark = len(api.log)
    b.start()
    try:
        async with asyncio.timeout(5):
            while b.bundle != rotated:
                await asyncio.sleep(0.01)
    finally:
        await b.stop()
    assert not api.failures
    log = api.log[mark:]
    failed = log.index(("GET", webhooks))
    # The failed pass did not load the new pair; the retry did, once, after checking the caBundles.
    loads = [i for i, (verb, _) in enumerate(log) if verb == "load"]
    assert len(loads) == 1 and failed < log.index(("GET", webhooks), failed + 1) < loads[0]


async def test_the_loop_decides_renewals_by_time_without_a_change(tmp_path: Path) -> None:
    api, clock = _apiserver(), Clock(T0)
    a = _rotator(api, clock, tmp_path, "a", poll_period_s=0.01, check_period_s=0.05)
    first = await a.reconcile()
    clock.now = _late(api)
    a.start()
    try:
        async with asyncio.timeout(5):
            while a.bundle is None or a.bundle.previous_ca_crt != first.ca_crt:
                await asyncio.sleep(0.01)
    finally:
        await a.stop()
