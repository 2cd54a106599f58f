"""A webhook server over real TLS on loopback, with certificates from ``certs``, in a thread.

The server is served as ``pykueue webhook`` serves it (its limits included), in its own event
loop thread for the whole module so that hundreds of requests cost only their round trips;
tests are plain functions that speak HTTPS with ``http.client`` and verify the server against
the generated CA, as kube-apiserver does. Each test sets the policy and the cluster facts it
needs on the shared ``WebhookDeps``; ``mutate``/``deny``/``allow`` are the assertions the case
modules share.
"""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import ssl
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from pykueue.certs.authority import ensure_bundle
from pykueue.certs.rotation import server_context, write_pair
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.webhook.app import WebhookDeps, make_app
from pykueue.webhook.facts import StaticLookup
from pykueue.webhook.server import serve_webhook


@dataclass
class WebhookServer:
    port: int
    ca_file: Path
    deps: WebhookDeps
    context: ssl.SSLContext
    cert_dir: Path

    def connection(self) -> http.client.HTTPSConnection:
        client = ssl.create_default_context(cafile=str(self.ca_file))
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=client, timeout=10)

    def post_raw(self, path: str, body: bytes, content_type: str = "application/json") -> tuple[int, Any]:
        conn = self.connection()
        try:
            conn.request("POST", path, body=body, headers={"Content-Type": content_type})
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        try:
            return resp.status, json.loads(data)
        except ValueError:
            return resp.status, data.decode(errors="replace")

    def admit(
        self,
        path: str,
        obj: dict[str, Any],
        *,
        old: dict[str, Any] | None = None,
        operation: str | None = None,
        gvk: tuple[str, str, str] | None = None,
    ) -> dict[str, Any]:
        """Send an AdmissionReview for ``obj``; return the response with the patch applied as ``object``."""
        api_version = str(obj.get("apiVersion", "v1"))
        group, _, version = api_version.rpartition("/")
        group_, version_, kind_ = gvk or (group, version, str(obj.get("kind")))
        uid = str(uuid.uuid4())
        review = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": uid,
                "kind": {"group": group_, "version": version_, "kind": kind_},
                "resource": {"group": group_, "version": version_, "resource": kind_.lower() + "s"},
                "operation": operation or ("UPDATE" if old is not None else "CREATE"),
                "namespace": (obj.get("metadata") or {}).get("namespace", ""),
                "name": (obj.get("metadata") or {}).get("name", ""),
                "object": obj,
                "oldObject": old,
            },
        }
        status, body = self.post_raw(path, json.dumps(review).encode())
        assert status == 200, body
        response = body["response"]
        assert response["uid"] == uid
        patched = obj
        if "patch" in response:
            assert response["patchType"] == "JSONPatch"
            patch = json.loads(base64.b64decode(response["patch"]))
            patched = jsonpatch.apply_patch(obj, patch)
        response["object"] = patched
        return response

    def reset(
        self, policy: AdmissionPolicy | None = None, lookup: StaticLookup | None = None
    ) -> StaticLookup:
        self.deps.policy = policy or AdmissionPolicy()
        self.deps.lookup = lookup or StaticLookup()
        assert isinstance(self.deps.lookup, StaticLookup)
        return self.deps.lookup


def mutate(
    w: WebhookServer, path: str, obj: dict[str, Any], old: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The object as the allowed mutation left it."""
    response = w.admit(path, obj, old=old)
    assert response["allowed"], response
    result: dict[str, Any] = response["object"]
    return result


def deny(w: WebhookServer, path: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> str:
    """The message of the expected denial."""
    response = w.admit(path, obj, old=old)
    assert not response["allowed"], "expected a denial"
    message: str = response["status"]["message"]
    return message


def allow(w: WebhookServer, path: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
    response = w.admit(path, obj, old=old)
    assert response["allowed"], response.get("status")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookServer]:
    cert_dir = tmp_path_factory.mktemp("webhook-certs")
    bundle, _ = ensure_bundle(None, ["localhost"], ["127.0.0.1"])
    cert_file, key_file = write_pair(cert_dir, bundle)
    context = server_context(cert_file, key_file)
    deps = WebhookDeps()
    loop = asyncio.new_event_loop()
    started = threading.Event()
    holder: dict[str, Any] = {}

    async def start() -> None:
        # As the webhook process serves it: its limits, its TLS.
        listener = await serve_webhook(make_app(deps), "127.0.0.1", 0, context)
        holder["runner"] = listener
        holder["port"] = listener.port

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=run, name="webhook-server", daemon=True)
    thread.start()
    assert started.wait(10), "webhook server did not start"
    yield WebhookServer(int(holder["port"]), cert_dir / "ca.crt", deps, context, cert_dir)
    asyncio.run_coroutine_threadsafe(holder["runner"].cleanup(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


@pytest.fixture
def webhook(server: WebhookServer) -> WebhookServer:
    server.reset()
    return server
