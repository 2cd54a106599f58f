"""``pykueue extender``: certificates from files or kept in Secrets, and ``pykueue run`` without
its in-process extender.

With ``--cert-secret`` two replicas against one (in-memory) apiserver share the CA the first
one created: the TAS scheduler's client pair from the Secret is accepted by both, a caller
without it is refused at the handshake, and the probes answer over plain HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from pykueue import run
from pykueue.cli import main
from pykueue.devcluster.ports import free_ports
from pykueue.extender import certificates
from pykueue.extender import cli as extender_cli
from tests.unit.certs.memory_apiserver import MemoryApiserver

NAMESPACE = certificates.NAMESPACE


def _parse(*argv: str, add: Callable[[argparse.ArgumentParser], None] = extender_cli.add_arguments,
           ) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add(parser)
    return parser.parse_args(list(argv))


FILES = ("--tls-cert-file", "c", "--tls-private-key-file", "k", "--client-ca-file", "ca")


@pytest.mark.parametrize(("argv", "problem"), [
    ((), "either --cert-secret or all of the TLS files are needed (missing --tls-cert-file, "
         "--tls-private-key-file, --client-ca-file)"),
    (("--tls-cert-file", "c", "--tls-private-key-file", "k"),
     "either --cert-secret or all of the TLS files are needed (missing --client-ca-file)"),
    (("--cert-secret", "s", "--client-ca-file", "ca"),
     "--cert-secret and --client-ca-file exclude each other"),
    (("--cert-secret", "s"), None),
    (FILES, None),
], ids=["nothing", "a-file-missing", "both", "secret", "files"])
def test_one_source_of_certificates(argv: tuple[str, ...], problem: str | None) -> None:
    assert extender_cli.check_tls_source(_parse(*argv)) == problem


def test_no_source_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extender", "--cert-secret", "s", *FILES]) == 2
    assert "--cert-secret and --tls-cert-file, --tls-private-key-file, --client-ca-file exclude each other" \
        in capsys.readouterr().err


def test_secret_mode_defaults_are_the_installs_names() -> None:
    args = _parse("--cert-secret", certificates.SERVER_SECRET)
    assert (args.namespace, args.client_secret, args.service_name, args.scheduler_name) == (
        "pykueue-system", "pykueue-tas-scheduler-client-cert", "pykueue-extender-service",
        "pykueue-tas-scheduler")


def test_run_without_its_extender() -> None:
    args = _parse("--no-extender", add=run.add_arguments)
    assert run._extender(args, settings=None) is None  # type: ignore[arg-type]  # off before settings are read
    assert _parse(add=run.add_arguments).no_extender is False  # on by default, on loopback
    with pytest.raises(SystemExit):
        _parse("--no-extender", "--extender-bind-address", ":8090", add=run.add_arguments)


class MemoryKube(MemoryApiserver):
    """The apiserver as ``kube.client.connect`` hands it over: a closable client."""

    closed = False

    async def __aenter__(self) -> MemoryKube:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.closed = True


@contextlib.asynccontextmanager
async def _replica(api: MemoryKube, kubeconfig: Path) -> AsyncIterator[tuple[int, int]]:
    """One ``pykueue extender --cert-secret`` on loopback: its HTTPS and probe ports."""
    port, probes = free_ports(2)
    args = _parse("--kubeconfig", str(kubeconfig), "--host", "127.0.0.1", "--port", str(port),
                  "--cert-secret", certificates.SERVER_SECRET, "--health-probe-bind-address",
                  f"127.0.0.1:{probes}")
    task = asyncio.create_task(extender_cli._serve(args))
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(200):
                if task.done():
                    task.result()
                with contextlib.suppress(aiohttp.ClientError):
                    async with session.get(f"http://127.0.0.1:{probes}/readyz") as resp:
                        if resp.status == 200:
                            break
                await asyncio.sleep(0.05)
            else:
                pytest.fail("the extender never became ready")
        yield port, probes
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _secret(api: MemoryApiserver, name: str) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in api.objects[f"/api/v1/namespaces/{NAMESPACE}/secrets/{name}"]
            ["data"].items()}


def _client(pair: dict[str, bytes] | None, ca: bytes, tmp_path: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=ca.decode())
    if pair is not None:
        (tmp_path / "c.crt").write_bytes(pair["tls.crt"])
        (tmp_path / "c.key").write_bytes(pair["tls.key"])
        context.load_cert_chain(str(tmp_path / "c.crt"), str(tmp_path / "c.key"))
    return context


async def _healthz(port: int, context: ssl.SSLContext) -> Any:
    async with aiohttp.ClientSession() as session, \
            session.get(f"https://127.0.0.1:{port}/healthz", ssl=context) as resp:
        return resp.status, await resp.text()


async def test_replicas_keep_one_ca_in_the_secret_and_serve_the_schedulers_pair(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    api = MemoryKube()

    async def connect(kubeconfig: str | None, **_: Any) -> MemoryKube:
        return api

    monkeypatch.setattr(extender_cli, "connect", connect)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("")  # only checked to exist: the client is the in-memory one
    async with _replica(api, kubeconfig) as (first, _), _replica(api, kubeconfig) as (second, probes):
        server = _secret(api, certificates.SERVER_SECRET)
        client = _secret(api, certificates.TAS_SCHEDULER_CLIENT_SECRET)
        assert api.count("POST") == 2 and api.count("PUT") == 0  # the second replica took them as they were
        assert client["ca.crt"] == server["ca.crt"]
        scheduler = _client(client, client["ca.crt"], tmp_path)
        assert await _healthz(first, scheduler) == (200, "ok")
        assert await _healthz(second, scheduler) == (200, "ok")
        with pytest.raises(aiohttp.ClientError):
            await _healthz(second, _client(None, client["ca.crt"], tmp_path))
        async with aiohttp.ClientSession() as session, \
                session.get(f"http://127.0.0.1:{probes}/readyz?verbose") as resp:
            assert "[+]certificates ok" in await resp.text()
    assert api.closed
