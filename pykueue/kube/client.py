"""The manager's only door to kube-apiserver: typed, rate-limited JSON requests over aiohttp.

Everything above this module speaks raw JSON dicts and REST paths (see
``resources.ResourceRef``); no generated model classes are involved. The connection (TLS,
session, credentials) comes from :mod:`pykueue.kube.connection`, configured by
:mod:`pykueue.kube.kubeconfig`. Every request, watches included, first waits on the shared token
bucket and is counted, so benchmarks can report how many calls a run cost.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import AsyncGenerator, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson

from pykueue.api.wire import JSON
from pykueue.kube import kubeconfig as kubeconfig_module
from pykueue.kube.connection import DEFAULT_MAX_CONNECTIONS, Connection
from pykueue.kube.kubeconfig import ClientConfig
from pykueue.kube.ratelimit import DEFAULT_BURST, DEFAULT_QPS, TokenBucket

Query = Mapping[str, str | int | bool]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# What a request raises when kube-apiserver could not be reached or did not answer in
# time (an answer with an error status raises ``ApiError`` instead).
TRANSPORT_ERRORS: tuple[type[Exception], ...] = (aiohttp.ClientError, OSError, TimeoutError)

USER_AGENT = "pykueue"

# orjson: decoding watch events and responses was about 8 % of the manager's CPU at large
# scale with the standard library's decoder, which orjson does in about 40 % of the time.
_dumps = orjson.dumps


class ApiError(Exception):
    """A non-2xx answer from kube-apiserver, carrying its ``Status`` reason."""

    def __init__(self, status: int, reason: str = "", message: str = "", body: JSON | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}".strip())
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def conflict(self) -> bool:
        """A stale ``resourceVersion`` (optimistic-concurrency failure), not a name clash."""
        return self.status == 409 and self.reason != "AlreadyExists"

    @property
    def gone(self) -> bool:
        """410: the requested resourceVersion (or continue token) has been compacted away."""
        return self.status == 410

    @classmethod
    def from_status(cls, status: int, payload: bytes | str | JSON | None) -> ApiError:
        body: JSON | None = None
        if isinstance(payload, dict):
            body = payload
        elif payload:
            try:
                decoded = orjson.loads(payload)
            except ValueError:  # orjson.JSONDecodeError is one
                decoded = None
            if isinstance(decoded, dict):
                body = decoded
        if body is not None:
            return cls(int(body.get("code") or status), str(body.get("reason", "")),
                       str(body.get("message", "")), body)
        text = payload.decode(errors="replace") if isinstance(payload, bytes) else str(payload or "")
        return cls(status, "", text[:500])


class WritesFenced(ApiError):
    """This process may no longer change the cluster (its replica lost the Lease)."""

    def __init__(self, reason: str) -> None:
        super().__init__(503, "WritesFenced", reason)


# Everything a request can raise about the API rather than about the caller.
REQUEST_ERRORS: tuple[type[Exception], ...] = (ApiError, *TRANSPORT_ERRORS)

# Reviews (TokenReview, SubjectAccessReview) are POSTs that store nothing: a fenced replica
# still authenticates the callers of its metrics and visibility endpoints until it exits.
_REVIEW_PREFIXES = ("/apis/authentication.k8s.io/", "/apis/authorization.k8s.io/")


class WriteFence:
    """Shared by a client and every client sharing its pool: once closed, requests that
    change stored state raise :class:`WritesFenced` before they are sent."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def close(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    def check(self, method: str, path: str) -> None:
        if self.reason is not None and method != "GET" and not path.startswith(_REVIEW_PREFIXES):
            raise WritesFenced(f"{method} {path} refused: {self.reason}")


class KubeClient:
    """Rate-limited JSON requests and watch streams against one cluster."""

    def __init__(self, connection: Connection, limiter: TokenBucket | None = None,
                 fence: WriteFence | None = None) -> None:
        self._api = connection
        self.limiter = limiter if limiter is not None else TokenBucket(DEFAULT_QPS, DEFAULT_BURST)
        self.fence = fence if fence is not None else WriteFence()
        self.requests_issued = 0
        self.requests_by_verb: Counter[str] = Counter()

    @property
    def host(self) -> str:
        return self._api.host

    def request_summary(self) -> str:
        """What this client cost kube-apiserver so far, in one line a benchmark parses."""
        return (f"{self.requests_issued} API requests {dict(sorted(self.requests_by_verb.items()))}, "
                f"{self.limiter.throttled_seconds:.1f}s throttled by the client rate limiter")

    def sharing_pool(self, limiter: TokenBucket | None = None) -> KubeClient:
        """A client on this one's connections and credentials with a rate limit of its own.

        Closing it is the owner's business: only the original client closes the pool. It
        shares the write fence too: a replica that lost its Lease writes through neither."""
        return _PoolSharer(self._api, limiter, self.fence)

    def fence_writes(self, reason: str) -> None:
        """From now on no request of this client (or its pool sharers) changes stored state."""
        self.fence.close(reason)

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._api.close()

    async def _send(self, method: str, path: str, query: Query | None, body: Any, content_type: str,
                    timeout: tuple[float, float | None] | float | None, verb: str) -> aiohttp.ClientResponse:
        """One request on the connection's session; credentials are asked for on each call,
        so a rotated token is used as soon as it is read."""
        self.fence.check(method, path)
        await self.limiter.acquire()
        self.fence.check(method, path)  # closed while this request waited for budget
        self.requests_issued += 1
        self.requests_by_verb[verb] += 1
        connection = self._api
        headers = {"Accept": "application/json", "Content-Type": content_type, "User-Agent": USER_AGENT}
        headers.update(await connection.auth_headers())
        url = connection.host + path
        if query:
            url += "?" + urlencode([(k, _query_value(v)) for k, v in query.items()])
        data = None if body is None else body if isinstance(body, (bytes, str)) else _dumps(body)
        extra: dict[str, Any] = {}
        if connection.proxy:
            extra["proxy"] = connection.proxy
        if connection.server_hostname:
            extra["server_hostname"] = connection.server_hostname
        return await connection.session.request(method, url, data=data, headers=headers,
                                                timeout=_timeout(timeout), **extra)

    async def request(self, method: str, path: str, *, query: Query | None = None, body: Any = None,
                      content_type: str = "application/json", timeout_s: float | None = 60.0) -> JSON:
        """Send one request and return the decoded JSON body; raise ``ApiError`` on non-2xx."""
        resp = await self._send(method.upper(), path, query, body, content_type, timeout_s, method.lower())
        try:
            raw = await resp.read()
            status = int(resp.status)
        finally:
            resp.release()
        if not 200 <= status <= 299:
            raise ApiError.from_status(status, raw)
        if not raw:
            return {}
        decoded = orjson.loads(raw)
        return decoded if isinstance(decoded, dict) else {"items": decoded}

    async def get(self, path: str, query: Query | None = None) -> JSON:
        return await self.request("GET", path, query=query)

    async def get_or_none(self, path: str) -> JSON | None:
        """GET, with None for an object that does not exist (404)."""
        try:
            return await self.get(path)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    async def create(self, path: str, body: JSON) -> JSON:
        return await self.request("POST", path, body=body)

    async def replace(self, path: str, body: JSON) -> JSON:
        """PUT; the body's ``metadata.resourceVersion`` makes it a compare-and-swap (409 if stale)."""
        return await self.request("PUT", path, body=body)

    async def patch(self, path: str, body: Any, content_type: str = MERGE_PATCH,
                    query: Query | None = None) -> JSON:
        return await self.request("PATCH", path, body=body, content_type=content_type, query=query)

    async def delete(self, path: str, body: JSON | None = None) -> JSON:
        return await self.request("DELETE", path, body=body)

    async def watch(self, path: str, query: Query, read_timeout_s: float) -> AsyncGenerator[JSON, None]:
        """Yield the watch events of one watch request until the server ends it.

        ``read_timeout_s`` bounds the silence between two lines, so a dead connection is
        noticed; callers set it above the server-side ``timeoutSeconds`` and bookmark period.
        Use it inside ``contextlib.aclosing`` so leaving early closes the connection at once.
        """
        resp = await self._send("GET", path, {**query, "watch": True}, None, "application/json",
                                (10.0, read_timeout_s), "watch")
        try:
            status = int(resp.status)
            if status != 200:
                raise ApiError.from_status(status, await resp.read())
            while True:
                line = await resp.content.readline()
                if not line:
                    return
                line = line.strip()
                if line:
                    event = orjson.loads(line)
                    if isinstance(event, dict):
                        yield event
        finally:
            # close, not release: an unfinished watch body must not go back to the pool.
            resp.close()


@lru_cache(maxsize=16)
def _timeout(value: tuple[float, float | None] | float | None) -> aiohttp.ClientTimeout:
    """A total deadline, or (connect, read-silence) for watches."""
    if value is None:
        return aiohttp.ClientTimeout()
    if isinstance(value, tuple):
        connect, read = value
        return aiohttp.ClientTimeout(connect=connect, sock_connect=connect, sock_read=read)
    return aiohttp.ClientTimeout(total=value)


class _PoolSharer(KubeClient):
    async def close(self) -> None:
        return None


def _query_value(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


async def connect(kubeconfig: str | os.PathLike[str] | None = None, *, context: str | None = None,
                  qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST,
                  max_connections: int = DEFAULT_MAX_CONNECTIONS) -> KubeClient:
    """Build a client from a kubeconfig file, or from the pod's service account when none is given.

    Without ``kubeconfig`` the in-cluster configuration is used when running in a pod
    (``KUBERNETES_SERVICE_HOST`` set), else the usual ``$KUBECONFIG`` / ``~/.kube/config``.
    An unusable kubeconfig raises ``KubeconfigError`` (a ``ValueError``).
    """
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        config = kubeconfig_module.in_cluster()
    else:
        config = await kubeconfig_module.load(kubeconfig, context)
    return _client(config, qps, burst, max_connections)


async def connect_from_dict(kubeconfig: dict[str, Any], *, qps: float = DEFAULT_QPS,
                            burst: int = DEFAULT_BURST,
                            max_connections: int = DEFAULT_MAX_CONNECTIONS) -> KubeClient:
    """A client from a kubeconfig already read (another cluster's, from a Secret); its
    current context. Embedded certificates are loaded from memory. An unusable kubeconfig
    raises ``ValueError``."""
    try:
        config = await kubeconfig_module.load_mapping(kubeconfig)
        return _client(config, qps, burst, max_connections)
    except kubeconfig_module.KubeconfigError as exc:
        raise ValueError(f"unusable kubeconfig: {exc}") from exc


async def connect_with_certificate(server: str, *, ca_file: str | os.PathLike[str],
                                   cert_file: str | os.PathLike[str], key_file: str | os.PathLike[str],
                                   qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST) -> KubeClient:
    """A client that authenticates with an X.509 client certificate (the dev cluster's admin)."""
    config = ClientConfig(host=server.rstrip("/"), ca_file=os.fspath(ca_file), cert_file=os.fspath(cert_file),
                          key_file=os.fspath(key_file))
    return _client(config, qps, burst, DEFAULT_MAX_CONNECTIONS)


def _client(config: ClientConfig, qps: float, burst: int, max_connections: int) -> KubeClient:
    return KubeClient(Connection(config, max_connections), TokenBucket(qps, burst))
