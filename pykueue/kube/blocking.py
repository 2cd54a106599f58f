"""The API client for synchronous code: ``KubeClient``'s calls on a private event loop.

``pykueue dev up`` and its helpers make a handful of calls (readiness, server-side apply of
nodes and CRDs, reads) before any asyncio program exists. Rather than a second HTTP client
with its own errors, they drive the one asynchronous client here, one call at a time, so
requests, errors (``ApiError``) and credentials behave exactly as in every process.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from pykueue.api.wire import JSON
from pykueue.kube.client import APPLY_PATCH, ApiError, KubeClient, connect_with_certificate

T = TypeVar("T")

# Set-up calls are small; a stuck API server should fail the step, not hang it.
DEFAULT_TIMEOUT_S = 10.0


class BlockingClient:
    """Synchronous ``get`` / ``apply`` / ``request`` over a ``KubeClient``."""

    def __init__(self, connect: Coroutine[Any, Any, KubeClient], *, field_manager: str,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self._loop = asyncio.new_event_loop()
        self._client = self._loop.run_until_complete(connect)
        self._field_manager = field_manager
        self._timeout_s = timeout_s
        # Close the session and the loop with the object, whether or not close() is called.
        self._finalizer = weakref.finalize(self, _shut, self._loop, self._client)

    @classmethod
    def with_certificate(cls, server: str, *, ca_file: str | os.PathLike[str],
                         cert_file: str | os.PathLike[str], key_file: str | os.PathLike[str],
                         field_manager: str) -> BlockingClient:
        return cls(connect_with_certificate(server, ca_file=ca_file, cert_file=cert_file, key_file=key_file),
                   field_manager=field_manager)

    @property
    def server(self) -> str:
        """The API server's URL."""
        return self._client.host

    def _run(self, call: Awaitable[T]) -> T:
        return self._loop.run_until_complete(call)

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json") -> JSON:
        return self._run(self._client.request(method, path, body=body, content_type=content_type,
                                              timeout_s=self._timeout_s))

    def get(self, path: str) -> JSON:
        return self.request("GET", path)

    def get_or_none(self, path: str) -> JSON | None:
        try:
            return self.get(path)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    def apply(self, path: str, obj: JSON) -> JSON:
        """Server-side apply (JSON is valid apply YAML); creates the object if absent."""
        return self._run(self._client.request(
            "PATCH", path, query={"fieldManager": self._field_manager, "force": True}, body=obj,
            content_type=APPLY_PATCH, timeout_s=self._timeout_s))

    def close(self) -> None:
        self._finalizer()


def _shut(loop: asyncio.AbstractEventLoop, client: KubeClient) -> None:
    if not loop.is_closed():
        loop.run_until_complete(client.close())
        loop.close()
