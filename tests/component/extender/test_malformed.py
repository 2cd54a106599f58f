"""Malformed requests get HTTP 400 with a reason; no input yields a 5xx."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.extender.app import ExtenderDeps, make_app

from .conftest import Extender
from .scenario import build_cluster, load

VERBS = ("filter", "prioritize", "bind")


@pytest.mark.parametrize(
    ("verb", "body", "reason"),
    [
        ("filter", b"{not json", "not JSON"),
        ("filter", b"[1, 2]", "JSON object"),
        ("filter", b'{"NodeNames": ["n1"]}', "Pod is required"),
        ("filter", b'{"Pod": "p", "NodeNames": []}', "must be an object"),
        ("filter", b'{"Pod": {"metadata": {}}, "NodeNames": []}', "metadata.name"),
        ("filter", b'{"Pod": {"metadata": {"name": "p", "labels": {"a": 1}}}}', "labels"),
        ("prioritize", b'{"Pod": {"metadata": {"name": "p"}}, "NodeNames": "n1"}', "NodeNames"),
        ("filter", b'{"Pod": {"metadata": {"name": "p"}}, "NodeNames": [1]}', "NodeNames"),
        ("filter", b'{"Pod": {"metadata": {"name": "p"}}, "Nodes": {"items": {}}}', "items"),
        ("filter", b'{"Pod": {"metadata": {"name": "p"}}, "Nodes": {"items": [{}]}}', "Nodes.items[0]"),
        ("bind", b'{"PodNamespace": "ns", "PodUID": "u", "Node": "n"}', "PodName"),
        ("bind", b'{"PodName": "p", "PodNamespace": "ns", "PodUID": "u", "Node": 3}', "Node"),
        ("bind", b"\xff\xfe", "not JSON"),
    ],
)
async def test_malformed_request_is_a_400_with_a_reason(
    extender: Extender, verb: str, body: bytes, reason: str
) -> None:
    status, text = await extender.post_raw(verb, body)
    assert status == 400
    assert reason in json.loads(text)["Error"]


class ThreadedServer:
    """The extender on a loopback port, driven from a plain thread for hypothesis."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.port = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        runner = web.AppRunner(make_app(ExtenderDeps(port=build_cluster())))
        self.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = runner.addresses[0][1]
        self.runner = runner
        self.ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(runner.cleanup())

    def __enter__(self) -> ThreadedServer:
        self.thread.start()
        assert self.ready.wait(10)
        return self

    def __exit__(self, *_: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def post(self, verb: str, data: bytes) -> tuple[int, str]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/{verb}", data=data, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                text = resp.read().decode()
                json.loads(text)  # a 200 must carry a JSON reply
                return int(resp.status), text
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read().decode()


@pytest.fixture(scope="module")
def threaded_server() -> Iterator[ThreadedServer]:
    with ThreadedServer() as server:
        yield server


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20,
)
_pod = load("args_node_names.json")["Pod"]
_node = load("node_template.json")
# Bodies close to real ones: the right keys with arbitrary values, and real pods with damaged parts.
near_args = st.fixed_dictionaries(
    {},
    optional={
        "Pod": st.one_of(
            json_values,
            st.just(_pod),
            st.builds(lambda m: {**_pod, "metadata": m}, json_values),
            st.builds(lambda sp: {**_pod, "spec": sp}, json_values),
            st.builds(lambda t: {**_pod, "spec": {"tolerations": t}}, json_values),
        ),
        "Nodes": st.one_of(
            json_values,
            st.builds(lambda items: {"items": items}, st.lists(json_values)),
            st.builds(lambda s: {"items": [{**_node, "status": s}]}, json_values),
            st.builds(lambda t: {"items": [{**_node, "spec": {"taints": t}}]}, json_values),
        ),
        "NodeNames": st.one_of(json_values, st.lists(st.text(max_size=30))),
        "PodName": json_values,
        "PodNamespace": json_values,
        "PodUID": json_values,
        "Node": json_values,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(verb=st.sampled_from(VERBS), body=st.one_of(json_values, near_args))
def test_fuzzed_json_never_yields_a_5xx(threaded_server: ThreadedServer, verb: str, body: Any) -> None:
    status, text = threaded_server.post(verb, json.dumps(body).encode())
    assert status in (200, 400)
    assert "internal error" not in text  # the last-resort handler must never be reached


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(verb=st.sampled_from(VERBS), data=st.binary(max_size=64))
def test_fuzzed_bytes_never_yield_a_5xx(threaded_server: ThreadedServer, verb: str, data: bytes) -> None:
    status, text = threaded_server.post(verb, data)
    assert status in (200, 400)
    assert "internal error" not in text
