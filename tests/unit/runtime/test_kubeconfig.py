"""pykueue's own kubeconfig and service-account reading, and the connection built from it.

TLS is checked against a real HTTPS server on loopback (mutual TLS, certificates issued by
a throw-away CA); credentials by the headers that server receives.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import ssl
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web

from pykueue.certs.authority import issue_client, issue_serving, new_ca
from pykueue.cli import main
from pykueue.kube import kubeconfig as kc
from pykueue.kube.client import KubeClient, connect, connect_from_dict
from pykueue.kube.connection import Connection, ssl_context
from pykueue.kube.kubeconfig import KubeconfigError, TokenFile


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig(
    cluster: dict[str, Any],
    user: dict[str, Any],
    *,
    current: str | None = "main",
    extra_contexts: tuple[tuple[str, str, str], ...] = (),
) -> dict[str, Any]:
    """One cluster and user in context ``main``, plus (name, cluster, user) contexts given."""
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [
            {"name": "main", "context": {"cluster": "c", "user": "u"}},
            *({"name": n, "context": {"cluster": c, "user": u}} for n, c, u in extra_contexts),
        ],
    }
    if current is not None:
        config["current-context"] = current
    return config


@dataclass
class Pki:
    ca_crt: bytes
    ca_key: bytes
    client_crt: bytes
    client_key: bytes
    directory: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    ca_crt, ca_key = new_ca()
    client_crt, client_key = issue_client(ca_crt, ca_key, "admin")
    directory = tmp_path_factory.mktemp("pki")
    for name, data in (("ca.crt", ca_crt), ("client.crt", client_crt), ("client.key", client_key)):
        (directory / name).write_bytes(data)
    return Pki(ca_crt, ca_key, client_crt, client_key, directory)


@dataclass
class Seen:
    authorization: list[str | None] = field(default_factory=list)
    client_cn: list[str] = field(default_factory=list)


async def _serve(app: web.Application, context: ssl.SSLContext | None) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    return runner, int(runner.addresses[0][1])


def _app(seen: Seen) -> web.Application:
    async def version(request: web.Request) -> web.Response:
        seen.authorization.append(request.headers.get("Authorization"))
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        if peer:
            seen.client_cn.extend(
                value for rdn in peer["subject"] for key, value in rdn if key == "commonName"
            )
        return web.json_response({"gitVersion": "v1.0.0"})

    app = web.Application()
    app.router.add_get("/version", version)
    return app


@pytest.fixture
async def https(pki: Pki, tmp_path: Path) -> AsyncIterator[tuple[int, Seen]]:
    """An API server at https://127.0.0.1:PORT whose certificate names only api.internal,
    which requires a client certificate of the CA."""
    crt, key = issue_serving(pki.ca_crt, pki.ca_key, ["api.internal"])
    (tmp_path / "s.crt").write_bytes(crt)
    (tmp_path / "s.key").write_bytes(key)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "s.crt", tmp_path / "s.key")
    context.load_verify_locations(cadata=pki.ca_crt.decode())
    context.verify_mode = ssl.CERT_REQUIRED
    seen = Seen()
    runner, port = await _serve(_app(seen), context)
    yield port, seen
    await runner.cleanup()


@pytest.fixture
async def plain() -> AsyncIterator[tuple[int, Seen]]:
    seen = Seen()
    runner, port = await _serve(_app(seen), None)
    yield port, seen
    await runner.cleanup()


# --- contexts -----------------------------------------------------------------------------


def test_the_current_context_or_the_one_asked_for() -> None:
    config = kubeconfig(
        {"server": "https://a.example:6443/"}, {"token": "a"}, extra_contexts=(("other", "c2", "u2"),)
    )
    config["clusters"].append({"name": "c2", "cluster": {"server": "https://b.example"}})
    config["users"].append({"name": "u2", "user": {"token": "b"}})
    current = kc.from_mapping(config)
    assert (current.host, current.token) == ("https://a.example:6443", "a")
    other = kc.from_mapping(config, "other")
    assert (other.host, other.token) == ("https://b.example", "b")


def test_a_missing_context_or_cluster_is_named() -> None:
    config = kubeconfig({"server": "https://a.example"}, {}, current="gone")
    with pytest.raises(KubeconfigError, match=r"^kubeconfig has no context named 'gone'$"):
        kc.from_mapping(config)
    with pytest.raises(KubeconfigError, match="no current-context"):
        kc.from_mapping(kubeconfig({"server": "https://a.example"}, {}, current=None))
    config["contexts"][0]["context"]["cluster"] = "nowhere"
    with pytest.raises(KubeconfigError, match=r"^kubeconfig has no cluster named 'nowhere'$"):
        kc.from_mapping(config, "main")
    with pytest.raises(KubeconfigError, match="has no server"):
        kc.from_mapping(kubeconfig({}, {}))


def test_the_cli_reports_an_unusable_kubeconfig_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(kubeconfig({"server": "https://127.0.0.1:1"}, {"token": "t"}, current="gone"))
    )
    with caplog.at_level(logging.ERROR):
        assert (
            main(
                [
                    "manager",
                    "--kubeconfig",
                    str(path),
                    "--metrics-bind-address",
                    "127.0.0.1:0",
                    "--health-probe-bind-address",
                    "127.0.0.1:0",
                    "--no-leader-elect",
                ]
            )
            == 1
        )
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [
        "cannot start: loading the kubeconfig: kubeconfig has no context named 'gone'"
    ]


async def test_a_worker_kubeconfig_that_cannot_be_used_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"^unusable kubeconfig: kubeconfig has no context named 'x'$"):
        await connect_from_dict(kubeconfig({"server": "https://a.example"}, {}, current="x"))
    with pytest.raises(ValueError, match=r"^unusable kubeconfig: client-key-data is not base64$"):
        await connect_from_dict(
            kubeconfig(
                {"server": "https://a.example"},
                {"client-certificate-data": b64(b"x"), "client-key-data": "%%"},
            )
        )


def test_kubeconfig_env_lists_files_merged_first_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.write_text(yaml.safe_dump({"clusters": [{"name": "c", "cluster": {"server": "https://first"}}]}))
    second.write_text(yaml.safe_dump(kubeconfig({"server": "https://second"}, {"token": "t"})))
    environ = {"KUBECONFIG": f"{first}{os.pathsep}{tmp_path / 'absent'}{os.pathsep}{second}"}
    merged = kc.read_kubeconfig(None, environ)
    config = kc.from_mapping(merged)
    assert (config.host, config.token) == ("https://first", "t")
    with pytest.raises(KubeconfigError, match="not found"):
        kc.read_kubeconfig(None, {"KUBECONFIG": str(tmp_path / "absent")})


# --- files and data -----------------------------------------------------------------------


def test_relative_paths_resolve_against_the_kubeconfigs_directory(tmp_path: Path) -> None:
    (tmp_path / "conf" / "certs").mkdir(parents=True)
    path = tmp_path / "conf" / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            kubeconfig(
                {"server": "https://a.example", "certificate-authority": "certs/ca.crt"},
                {"client-certificate": "certs/c.crt", "client-key": "/abs/c.key", "tokenFile": "token"},
            )
        )
    )
    config = kc.from_mapping(kc.read_kubeconfig(path))
    assert config.ca_file == str(tmp_path / "conf" / "certs" / "ca.crt")
    assert config.cert_file == str(tmp_path / "conf" / "certs" / "c.crt")
    assert config.key_file == "/abs/c.key"
    assert config.token_file == str(tmp_path / "conf" / "token")


def test_data_wins_over_the_file_beside_it() -> None:
    config = kc.from_mapping(
        kubeconfig(
            {
                "server": "https://a.example",
                "certificate-authority": "ca.crt",
                "certificate-authority-data": b64(b"CA"),
            },
            {
                "client-certificate": "c.crt",
                "client-certificate-data": b64(b"CRT"),
                "client-key": "c.key",
                "client-key-data": b64(b"KEY"),
            },
        )
    )
    assert (config.ca_file, config.ca_data) == (None, "CA")
    assert (config.cert_file, config.cert_data, config.key_file, config.key_data) == (
        None,
        b"CRT",
        None,
        b"KEY",
    )


async def test_embedded_certificates_authenticate_and_leave_no_files(
    https: tuple[int, Seen], pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port, seen = https
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    config = kubeconfig(
        {
            "server": f"https://127.0.0.1:{port}",
            "certificate-authority-data": b64(pki.ca_crt),
            "tls-server-name": "api.internal",
        },
        {"client-certificate-data": b64(pki.client_crt), "client-key-data": b64(pki.client_key)},
    )
    async with await connect_from_dict(config) as client:
        assert (await client.get("/version"))["gitVersion"] == "v1.0.0"
    assert seen.client_cn == ["admin"]
    assert list(scratch.iterdir()) == []  # the key written for load_cert_chain is gone


async def test_certificate_files_and_tls_server_name(
    https: tuple[int, Seen], pki: Pki, tmp_path: Path
) -> None:
    port, seen = https
    path = tmp_path / "kubeconfig"
    cluster = {
        "server": f"https://127.0.0.1:{port}",
        "certificate-authority": str(pki.directory / "ca.crt"),
        "tls-server-name": "api.internal",
    }
    user = {
        "client-certificate": str(pki.directory / "client.crt"),
        "client-key": str(pki.directory / "client.key"),
    }
    path.write_text(yaml.safe_dump(kubeconfig(cluster, user)))
    async with await connect(path) as client:
        await client.get("/version")
    assert seen.client_cn == ["admin"]
    # Without the server name the certificate (api.internal only) does not match 127.0.0.1.
    del cluster["tls-server-name"]
    path.write_text(yaml.safe_dump(kubeconfig(cluster, user)))
    async with await connect(path) as client:
        with pytest.raises(aiohttp.ClientConnectorCertificateError, match="IP address mismatch"):
            await client.get("/version")
    assert len(seen.client_cn) == 1


async def test_insecure_skip_tls_verify_accepts_any_server_certificate(
    https: tuple[int, Seen], pki: Pki
) -> None:
    port, seen = https
    config = kubeconfig(
        {"server": f"https://127.0.0.1:{port}", "insecure-skip-tls-verify": True},
        {"client-certificate-data": b64(pki.client_crt), "client-key-data": b64(pki.client_key)},
    )
    context = ssl_context(kc.from_mapping(config))
    assert context.verify_mode == ssl.CERT_NONE and not context.check_hostname
    async with await connect_from_dict(config) as client:
        await client.get("/version")
    assert seen.client_cn == ["admin"]


def test_a_client_certificate_needs_its_key() -> None:
    with pytest.raises(KubeconfigError, match="no client key"):
        kc.from_mapping(kubeconfig({"server": "https://a"}, {"client-certificate-data": b64(b"x")}))


# --- credentials --------------------------------------------------------------------------


async def test_token_basic_auth_and_token_file(plain: tuple[int, Seen], tmp_path: Path) -> None:
    port, seen = plain
    server = {"server": f"http://127.0.0.1:{port}", "proxy-url": ""}
    token_file = tmp_path / "token"
    token_file.write_text("from-file\n")
    for user in (
        {"token": "static"},
        {"username": "ann", "password": "pw"},
        {"token": "static", "tokenFile": str(token_file)},
        {},
    ):
        async with await connect_from_dict(kubeconfig(server, user)) as client:
            await client.get("/version")
    assert seen.authorization == ["Bearer static", "Basic " + b64(b"ann:pw"), "Bearer from-file", None]


def test_proxy_url_and_server_name_reach_the_connection() -> None:
    config = kc.from_mapping(
        kubeconfig(
            {
                "server": "https://a.example",
                "proxy-url": "http://p.example:3128",
                "tls-server-name": "api.internal",
            },
            {},
        )
    )
    connection = Connection(config)
    assert (connection.proxy, connection.server_hostname) == ("http://p.example:3128", "api.internal")


async def test_in_cluster_token_rotation_reaches_the_next_request(
    plain: tuple[int, Seen], tmp_path: Path
) -> None:
    port, seen = plain
    (tmp_path / "token").write_text("first")
    (tmp_path / "ca.crt").write_text("unused here")
    config = kc.in_cluster(
        {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}, tmp_path
    )
    assert config.host == "https://10.96.0.1:443"
    assert (config.token_file, config.ca_file) == (str(tmp_path / "token"), str(tmp_path / "ca.crt"))
    # Aimed at the loopback server instead (plain HTTP: the CA above is not a certificate).
    async with KubeClient(Connection(replace(config, host=f"http://127.0.0.1:{port}"))) as client:
        await client.get("/version")
        # kubelet swaps the projected token atomically: a new file renamed over the old one
        (tmp_path / "token.new").write_text("second-token")
        os.replace(tmp_path / "token.new", tmp_path / "token")
        await client.get("/version")
    assert seen.authorization == ["Bearer first", "Bearer second-token"]


def test_in_cluster_needs_its_environment_and_files(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match=r"KUBERNETES_SERVICE_HOST/PORT not set"):
        kc.in_cluster({}, tmp_path)
    with pytest.raises(KubeconfigError, match="token not found"):
        kc.in_cluster({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}, tmp_path)
    (tmp_path / "token").write_text("t")
    (tmp_path / "ca.crt").write_text("c")
    config = kc.in_cluster({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}, tmp_path)
    assert config.host == "https://[fd00::1]:443"


def test_an_unchanged_looking_token_file_is_still_reread_every_minute(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("aaaa")
    stamp = os.stat(path).st_mtime_ns
    now = [0.0]
    token = TokenFile(str(path), clock=lambda: now[0])
    path.write_text("bbbb")  # same size, same inode, mtime put back: no visible change
    os.utime(path, ns=(stamp, stamp))
    now[0] = 59.0
    assert token.headers() == {"Authorization": "Bearer aaaa"}
    now[0] = 60.0
    assert token.headers() == {"Authorization": "Bearer bbbb"}
    path.write_text("")  # emptied while being rewritten: the last token stays
    assert token.headers() == {"Authorization": "Bearer bbbb"}


def test_an_empty_token_file_is_refused_at_start(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("")
    with pytest.raises(KubeconfigError, match="unreadable or empty"):
        TokenFile(str(tmp_path / "token"))


# --- what goes to kubernetes-asyncio ------------------------------------------------------


def _exec_user(token: str) -> dict[str, Any]:
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {"token": token},
    }
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": ["-c", f"print({json.dumps(json.dumps(credential))})"],
        }
    }


async def test_an_exec_user_goes_to_the_librarys_loader(plain: tuple[int, Seen]) -> None:
    port, seen = plain
    config = kubeconfig({"server": f"http://127.0.0.1:{port}"}, _exec_user("from-plugin"))
    assert kc.from_mapping(config).via_library
    loaded = await kc.load_mapping(config)
    assert loaded.via_library and loaded.auth_headers is not None
    async with KubeClient(Connection(loaded)) as client:
        await client.get("/version")
    assert seen.authorization == ["Bearer from-plugin"]


def test_an_auth_provider_user_goes_to_the_librarys_loader() -> None:
    config = kubeconfig({"server": "https://a"}, {"auth-provider": {"name": "oidc", "config": {}}})
    assert kc.from_mapping(config).via_library


def test_the_manager_and_a_token_kubeconfig_never_import_kubernetes_asyncio(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig({"server": "https://a.example"}, {"token": "t"})))
    script = (
        "import asyncio, sys\n"
        "import pykueue.manager.runtime.cli\n"
        "from pykueue.kube.client import connect\n"
        f"asyncio.run(connect({str(path)!r}))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith('kubernetes_asyncio')}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    assert result.stdout.strip() == "[]"
