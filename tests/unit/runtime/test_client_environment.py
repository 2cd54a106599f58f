"""The API connection resolves its proxy once instead of consulting the environment per call."""

from __future__ import annotations

import pytest

from pykueue.kube.connection import Connection
from pykueue.kube.kubeconfig import ClientConfig

PROXY_VARS = (
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "all_proxy",
)


def connection(**fields: object) -> Connection:
    return Connection(ClientConfig(host="https://10.0.0.1:443", **fields))  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)


async def test_no_proxy_in_the_environment_means_a_direct_session() -> None:
    api = connection()
    try:
        assert api.proxy is None
        assert not api.session.trust_env
        assert api.session.connector is not None and api.session.connector.limit == 100
    finally:
        await api.close()


async def test_the_api_servers_proxy_is_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    api = connection()
    monkeypatch.delenv("HTTPS_PROXY")  # read once, at construction
    try:
        assert api.proxy == "http://proxy.example:3128"
        assert not api.session.trust_env
    finally:
        await api.close()


async def test_no_proxy_exempts_the_api_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "10.0.0.1")
    assert connection().proxy is None


def test_the_kubeconfigs_proxy_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert connection(proxy="http://own.example:8080").proxy == "http://own.example:8080"
