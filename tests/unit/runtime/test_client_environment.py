"""The API client resolves its proxy once instead of consulting the environment per call."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client

from pykueue.kube.client import resolve_environment_once

PROXY_VARS = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
              "all_proxy")


def api_client() -> client.ApiClient:
    configuration = client.Configuration()
    configuration.host = "https://10.0.0.1:443"
    return client.ApiClient(configuration)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)


async def test_no_proxy_in_the_environment_means_a_direct_session() -> None:
    async with api_client() as api:
        assert api.rest_client.pool_manager.trust_env
        resolve_environment_once(api)
        assert not api.rest_client.pool_manager.trust_env
        assert api.rest_client.proxy is None


async def test_the_api_servers_proxy_is_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    async with api_client() as api:
        resolve_environment_once(api)
        assert api.rest_client.proxy == "http://proxy.example:3128"
        assert not api.rest_client.pool_manager.trust_env


async def test_no_proxy_exempts_the_api_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "10.0.0.1")
    async with api_client() as api:
        resolve_environment_once(api)
        assert api.rest_client.proxy is None
