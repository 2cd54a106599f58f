"""Bound beyond loopback the dashboard speaks HTTPS: sessions and sign-in tokens cross a network."""

from __future__ import annotations

import ssl
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from pykueue.manager.runtime.dashboard.server import start
from pykueue.run import LOOPBACK_HOSTS, dashboard_listen, dashboard_tls


async def _ok(_: web.Request) -> web.Response:
    return web.Response(text="ok")


def _app() -> web.Application:
    app = web.Application()
    app.router.add_get("/", _ok)
    return app


async def test_an_exposed_dashboard_serves_https_with_the_pair_it_made(tmp_path: Path) -> None:
    host, _ = dashboard_listen("0.0.0.0:8084")
    assert host not in LOOPBACK_HOSTS
    listener, port = await start(_app(), "127.0.0.1", 0, dashboard_tls(str(tmp_path)))
    try:
        trust = ssl.create_default_context(cafile=str(tmp_path / "tls.crt"))
        async with aiohttp.ClientSession() as session:
            async with session.get(f"https://localhost:{port}/", ssl=trust) as response:
                assert (response.status, await response.text()) == (200, "ok")
            with pytest.raises(aiohttp.ClientError):  # plain HTTP is not answered
                async with session.get(f"http://127.0.0.1:{port}/") as response:
                    await response.read()
    finally:
        await listener.cleanup()
    assert (tmp_path / "tls.key").stat().st_mode & 0o077 == 0


async def test_a_given_pair_is_served_as_it_is(tmp_path: Path) -> None:
    dashboard_tls(str(tmp_path))
    before = (tmp_path / "tls.crt").read_bytes()
    dashboard_tls(str(tmp_path))  # a second start keeps the pair it finds
    assert (tmp_path / "tls.crt").read_bytes() == before
