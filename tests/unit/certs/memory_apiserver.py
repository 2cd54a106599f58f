"""An in-memory stand-in for the few apiserver calls :class:`certs.rotation.CertRotator` makes
(GET, POST, compare-and-swap PUT), logging each, and an SSL context that logs its reloads
into the same log, so tests can tell what happened in which order."""

from __future__ import annotations

import base64
import copy
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykueue.kube.client import ApiError

Log = list[tuple[str, str]]


@dataclass
class MemoryApiserver:
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    log: Log = field(default_factory=list)
    forbidden: set[str] = field(default_factory=set)
    failures: dict[str, int] = field(default_factory=dict)  # path -> next status to answer once
    revision: int = 0

    def _check(self, verb: str, path: str) -> None:
        self.log.append((verb, path))
        if path in self.forbidden:
            raise ApiError(403, "Forbidden", f"{verb} {path}")
        status = self.failures.pop(path, None)
        if status is not None:
            raise ApiError(status, "InternalError", f"{verb} {path}")

    def put_object(self, path: str, obj: dict[str, Any]) -> None:
        self.revision += 1
        stored = copy.deepcopy(obj)
        stored.setdefault("metadata", {})["resourceVersion"] = str(self.revision)
        self.objects[path] = stored

    async def get(self, path: str, query: Any = None) -> dict[str, Any]:
        self._check("GET", path)
        if path not in self.objects:
            raise ApiError(404, "NotFound", path)
        return copy.deepcopy(self.objects[path])

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        target = f"{path}/{body['metadata']['name']}"
        self._check("POST", target)
        if target in self.objects:
            raise ApiError(409, "AlreadyExists", target)
        self.put_object(target, body)
        return copy.deepcopy(self.objects[target])

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self._check("PUT", path)
        if path not in self.objects:
            raise ApiError(404, "NotFound", path)
        sent = (body.get("metadata") or {}).get("resourceVersion")
        if sent is not None and sent != self.objects[path]["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", path)
        self.put_object(path, body)
        return copy.deepcopy(self.objects[path])

    def count(self, verb: str, path: str | None = None) -> int:
        return sum(1 for v, p in self.log if v == verb and (path is None or p == path))

    def secret_data(self, path: str) -> dict[str, bytes]:
        return {k: base64.b64decode(v) for k, v in self.objects[path]["data"].items()}


class RecordingContext(ssl.SSLContext):
    """A server context whose pair loads land in ``log`` as ("load", <tls.crt PEM>)."""

    log: Log

    def load_cert_chain(self, certfile: Any, keyfile: Any = None, password: Any = None) -> None:
        self.log.append(("load", Path(certfile).read_text()))
        super().load_cert_chain(certfile, keyfile, password)


def recording_context(log: Log) -> RecordingContext:
    context = RecordingContext(ssl.PROTOCOL_TLS_SERVER)
    context.log = log
    return context
