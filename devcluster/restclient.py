"""A minimal synchronous client for the dev cluster's API server.

``dev up`` needs a handful of calls (readiness, server-side apply of nodes and CRDs,
reads) before any asyncio program exists, and must work without kubectl. It speaks
HTTPS to the loopback API server with the admin client certificate; nothing else.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIELD_MANAGER = "pykueue-dev"


class ApiError(RuntimeError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


@dataclass(frozen=True)
class TLSFiles:
    ca: Path
    cert: Path
    key: Path

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.cert), str(self.key))
        return context


class AdminClient:
    def __init__(self, server: str, tls: TLSFiles, timeout_s: float = 10.0) -> None:
        self.server = server.rstrip("/")
        self._context = tls.context()
        self._timeout = timeout_s

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self._context, timeout=self._timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise ApiError(exc.code, exc.read().decode(errors="replace")[:500]) from exc
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def get_or_none(self, path: str) -> Any:
        try:
            return self.get(path)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def apply(self, path: str, obj: dict[str, Any]) -> Any:
        """Server-side apply (JSON is valid apply YAML); creates the object if absent."""
        return self.request("PATCH", f"{path}?fieldManager={FIELD_MANAGER}&force=true", obj,
                            content_type="application/apply-patch+yaml")
