"""The event recorder through the real client against a tiny events.k8s.io endpoint on loopback.

The server keeps Events as kube-apiserver does for what the recorder relies on: POST to the
namespace's collection creates (201), PATCH with a merge patch updates one (404 when it is
unknown), and it refuses everything when told to (403), which the recorder must take as a
lost event and nothing more.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from pykueue.api.events import EventRecord, ObjectReference
from pykueue.kube.client import KubeClient
from pykueue.kube.connection import Connection
from pykueue.kube.events import EventRecorder, client_transport
from pykueue.kube.kubeconfig import ClientConfig
from pykueue.manager.jobs.events import created_workload
from pykueue.manager.jobs.integrations import Integration


@dataclass
class EventsEndpoint:
    events: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    seen: list[tuple[str, str, str]] = field(default_factory=list)  # method, path, content type
    forbid: bool = False

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/apis/events.k8s.io/v1/namespaces/{ns}/events", self.create)
        app.router.add_patch("/apis/events.k8s.io/v1/namespaces/{ns}/events/{name}", self.patch)
        return app

    def _refuse(self) -> web.Response:
        return web.json_response({"kind": "Status", "code": 403, "reason": "Forbidden",
                                  "message": "events.events.k8s.io is forbidden"}, status=403)

    async def create(self, request: web.Request) -> web.Response:
        self.seen.append((request.method, request.path, request.content_type))
        if self.forbid:
            return self._refuse()
        body = await request.json()
        key = (request.match_info["ns"], body["metadata"]["name"])
        if body["metadata"]["namespace"] != key[0] or key in self.events:
            return web.json_response({"code": 409, "reason": "AlreadyExists"}, status=409)
        self.events[key] = body
        return web.json_response(body, status=201)

    async def patch(self, request: web.Request) -> web.Response:
        self.seen.append((request.method, request.path, request.content_type))
        if self.forbid:
            return self._refuse()
        key = (request.match_info["ns"], request.match_info["name"])
        if key not in self.events:
            return web.json_response({"code": 404, "reason": "NotFound"}, status=404)
        self.events[key] = {**self.events[key], **(await request.json())}
        return web.json_response(self.events[key])


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[EventsEndpoint, KubeClient]]:
    server = EventsEndpoint()
    runner = web.AppRunner(server.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    async with KubeClient(Connection(ClientConfig(host=f"http://127.0.0.1:{port}"))) as client:
        yield server, client
    await runner.cleanup()


async def test_events_are_created_and_their_series_patched_over_http(
        endpoint: tuple[EventsEndpoint, KubeClient]) -> None:
    server, client = endpoint
    recorder = EventRecorder(client_transport(client), instance="pod-1")
    recorder.start()
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "team", "uid": "u1"}}
    workload = {"metadata": {"name": "job-j-1a2b3", "namespace": "team"}}
    event = created_workload(Integration("batch/job", "batch", "v1", "Job", "jobs"), job, workload)
    recorder.record(event)
    await recorder.queue.join(5)
    recorder.record(event)  # its series update waits for the interval: stopping sends it
    await recorder.stop()

    [(key, stored)] = server.events.items()
    assert key[0] == "team"
    assert stored["reason"] == "CreatedWorkload" and stored["note"] == "Created Workload: team/job-j-1a2b3"
    assert stored["reportingController"] == "batch/job-kueue-controller"
    assert stored["reportingInstance"] == "batch/job-kueue-controller-pod-1"
    assert stored["regarding"] == {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "namespace": "team",
                                   "uid": "u1"}
    assert stored["series"]["count"] == 2
    assert [m for m, _, _ in server.seen] == ["POST", "PATCH"]
    assert server.seen[1][2] == "application/merge-patch+json"
    assert recorder.stats.posted == 1 and recorder.stats.patched == 1


async def test_a_refusing_api_loses_the_event_and_nothing_else(
        endpoint: tuple[EventsEndpoint, KubeClient]) -> None:
    server, client = endpoint
    server.forbid = True
    recorder = EventRecorder(client_transport(client), instance="pod-1")
    recorder.start()
    regarding = ObjectReference("kueue.x-k8s.io/v1beta2", "Workload", "w", "ns", "uid-w")
    recorder.record(EventRecord(regarding, "Pending", "waiting", "kueue-admission", "Warning"))
    await recorder.queue.join(5)
    await recorder.stop()
    assert server.events == {} and recorder.stats.failed == 1
    assert len(server.seen) == 1, "a refused event is not retried"
