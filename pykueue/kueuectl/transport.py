"""A small synchronous client for one command's few requests.

The manager's client (``kube.client``) is asyncio over aiohttp; loading it costs
a short-lived command most of a second, and it takes neither kubectl's connection flags
(impersonation, ``--server``, ``--token``) nor exec credential plugins. This one is the
standard library's HTTP over TLS: each command makes a handful of requests.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from contextlib import suppress
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from pykueue import __version__
from pykueue.kueuectl.kubeconfig import ConfigError, Connection

JSON = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
USER_AGENT = f"kubectl-kueue/pykueue-{__version__}"


class ApiError(Exception):
    """A failed request; ``str()`` is the message kueuectl prints after ``Error: ``."""

    def __init__(self, message: str, code: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason

    @property
    def not_found(self) -> bool:
        return self.code == 404


# What client-go says when a failed answer carries no Status to quote.
_GENERIC = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    403: "the server does not allow access to the requested resource",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    410: "the server reported that the requested resource is gone",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    500: "an error on the server has prevented the request from succeeding",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be processing "
         "the request",
}


class Client:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        url = urlsplit(conn.server)
        self.scheme = url.scheme
        self.host = url.hostname or ""
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.prefix = url.path.rstrip("/")
        self._context: ssl.SSLContext | None = None
        self._http: http.client.HTTPConnection | None = None
        self._exec_token: str | None = None
        self._warned: set[str] = set()

    # -- TLS and credentials
    def _ssl_context(self) -> ssl.SSLContext:
        if self._context is not None:
            return self._context
        conn = self.conn
        ctx = ssl.create_default_context(cafile=conn.ca_file or None,
                                         cadata=conn.ca_data.decode() if conn.ca_data else None)
        if conn.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        cert, key = conn.cert_data, conn.key_data
        if conn.exec_config is not None and not (conn.cert_file or cert):
            credential = self._exec_credential()
            cert = credential.get("clientCertificateData", "").encode()
            key = credential.get("clientKeyData", "").encode()
        if conn.cert_file or cert:
            _load_cert_chain(ctx, conn.cert_file, cert, conn.key_file, key)
        self._context = ctx
        return ctx

    def _exec_credential(self) -> dict[str, str]:
        """Run the kubeconfig's exec plugin once and keep what it printed."""
        config = self.conn.exec_config or {}
        command = [str(config.get("command", ""))] + [str(a) for a in config.get("args") or ()]
        env = dict(os.environ)
        for item in config.get("env") or ():
            env[str(item.get("name"))] = str(item.get("value"))
        api_version = str(config.get("apiVersion") or "client.authentication.k8s.io/v1")
        env["KUBERNETES_EXEC_INFO"] = json.dumps(
            {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False}})
        try:
            result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        except OSError as exc:
            hint = config.get("installHint") or ""
            suffix = f": {hint}" if hint else ""
            raise ConfigError(f"exec: executable {command[0]} not found{suffix}") from exc
        if result.returncode != 0:
            raise ConfigError(f"exec: executable {command[0]} failed with exit code {result.returncode}")
        try:
            status = json.loads(result.stdout).get("status") or {}
        except ValueError as exc:
            raise ConfigError(f"exec: decoding stdout of {command[0]}: {exc}") from exc
        self._exec_token = str(status.get("token") or "")
        return {k: str(v) for k, v in status.items()}

    def _auth_headers(self) -> dict[str, str]:
        conn = self.conn
        headers: dict[str, str] = {}
        token = conn.token
        if not token and conn.token_file:
            with suppress(OSError), open(conn.token_file) as f:
                token = f.read().strip()
        if not token and conn.exec_config is not None:
            if self._exec_token is None:
                self._exec_credential()
            token = self._exec_token or ""
        if token:
            headers["Authorization"] = f"Bearer {token}"
        elif conn.username or conn.password:
            basic = base64.b64encode(f"{conn.username}:{conn.password}".encode()).decode()
            headers["Authorization"] = f"Basic {basic}"
        if conn.impersonate:
            headers["Impersonate-User"] = conn.impersonate
        if conn.impersonate_uid:
            headers["Impersonate-Uid"] = conn.impersonate_uid
        return headers

    def _connection(self) -> http.client.HTTPConnection:
        if self._http is None:
            if self.scheme == "https":
                self._http = _TLSConnection(self.host, self.port, timeout=self.conn.timeout_s,
                                            context=self._ssl_context(),
                                            server_name=self.conn.tls_server_name or None)
            else:
                self._http = http.client.HTTPConnection(self.host, self.port, timeout=self.conn.timeout_s)
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    # -- requests
    def url(self, path: str, query: Mapping[str, Any] | None = None) -> str:
        text = f"{self.conn.server}{path}"
        return f"{text}?{urlencode(query)}" if query else text

    def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None,
                body: Any = None, content_type: str = "application/json",
                accept: str = "application/json") -> JSON:
        target = self.prefix + path + ("?" + urlencode(query) if query else "")
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": accept, "User-Agent": USER_AGENT, **self._auth_headers()}
        if data is not None:
            headers["Content-Type"] = content_type
            headers["Content-Length"] = str(len(data))
        for attempt in range(2):
            conn = self._connection()
            try:
                conn.putrequest(method, target, skip_accept_encoding=True)
                for name, value in headers.items():
                    conn.putheader(name, value)
                for group in self.conn.impersonate_groups:
                    conn.putheader("Impersonate-Group", group)
                for key, values in self.conn.impersonate_extra.items():
                    for value in values:
                        conn.putheader(f"Impersonate-Extra-{quote(key, safe='')}", value)
                conn.endheaders(data)
                response = conn.getresponse()
                raw = response.read()
                self._warn(response.headers.get_all("Warning") or [])
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()  # a kept-alive connection the server closed: one fresh try
                if attempt:
                    raise ApiError(self._transport_message(method, path, query, "EOF")) from None
            except ssl.SSLCertVerificationError as exc:
                self.close()
                reason = f"tls: failed to verify certificate: {exc.verify_message}"
                raise ApiError(self._transport_message(method, path, query, reason)) from None
            except ConnectionRefusedError:
                self.close()
                reason = f"dial tcp {self.host}:{self.port}: connect: connection refused"
                raise ApiError(self._transport_message(method, path, query, reason)) from None
            except TimeoutError:
                self.close()
                reason = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
                raise ApiError(self._transport_message(method, path, query, reason)) from None
            except ssl.SSLEOFError:
                self.close()
                raise ApiError(self._transport_message(method, path, query, "EOF")) from None
            except OSError as exc:
                self.close()
                reason = exc.strerror.lower() if exc.strerror else str(exc)
                raise ApiError(self._transport_message(method, path, query, reason)) from None
        if not 200 <= response.status <= 299:
            raise _api_error(response.status, raw, method, path)
        if not raw:
            return {}
        decoded = json.loads(raw)
        return decoded if isinstance(decoded, dict) else {"items": decoded}

    def _warn(self, headers: list[str]) -> None:
        """Print the server's warnings once each, as kubectl does (RFC 7234 ``299 - "text"``)."""
        for header in headers:
            code, _, rest = header.partition(" ")
            _, _, text = rest.partition(" ")
            if code == "299" and text.startswith('"'):
                message = text[1:text.rfind('"')] if text.count('"') >= 2 else text[1:]
                message = message.replace('\\"', '"').replace("\\\\", "\\")
                if message not in self._warned:
                    self._warned.add(message)
                    sys.stderr.write(f"Warning: {message}\n")

    def _transport_message(self, method: str, path: str, query: Mapping[str, Any] | None, reason: str) -> str:
        return f'{method.capitalize()} "{self.url(path, query)}": {reason}'

    def get(self, path: str, query: Mapping[str, Any] | None = None, *,
            accept: str = "application/json") -> JSON:
        return self.request("GET", path, query=query, accept=accept)


def _api_error(status: int, raw: bytes, method: str, path: str) -> ApiError:
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return ApiError(str(body.get("message") or _GENERIC.get(status, "unknown")),
                        int(body.get("code") or status), str(body.get("reason") or ""))
    # No Status to quote: client-go's generic message, naming the request.
    text = raw.decode(errors="replace").strip()
    if status in _GENERIC:
        message = _GENERIC[status]
    elif status >= 500:
        message = f"an error on the server ({json.dumps(text)}) has prevented the request from succeeding"
    else:
        message = f"the server responded with the status code {status} but did not return more information"
    resource, name = _request_target(path)
    if resource:
        message += f" ({method.lower()} {resource}{' ' + name if name else ''})"
    return ApiError(message, status)


def _request_target(path: str) -> tuple[str, str]:
    """The qualified resource and name a REST path addresses ("jobs.batch", "sample")."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return "", ""
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    if not rest:
        return "", ""
    resource = f"{rest[0]}.{group}" if group else rest[0]
    return resource, rest[1] if len(rest) > 1 else ""


def _load_cert_chain(ctx: ssl.SSLContext, cert_file: str, cert: bytes, key_file: str, key: bytes) -> None:
    """ssl only loads client certificates from files: embedded ones go through a private
    temporary directory that is removed right after."""
    if not cert and not key:
        ctx.load_cert_chain(cert_file, key_file or None)
        return
    with tempfile.TemporaryDirectory(prefix="kubectl-kueue-") as tmp:
        cert_path = os.path.join(tmp, "client.crt")
        key_path = os.path.join(tmp, "client.key")
        for path, data, source in ((cert_path, cert, cert_file), (key_path, key, key_file)):
            if not data and source:
                with open(source, "rb") as f:
                    data = f.read()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        ctx.load_cert_chain(cert_path, key_path)


class _TLSConnection(http.client.HTTPSConnection):
    """HTTPS with a server name of our choosing (``--tls-server-name``)."""

    def __init__(self, host: str, port: int, *, timeout: float | None, context: ssl.SSLContext,
                 server_name: str | None) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._server_name = server_name
        self._tls_context = context

    def connect(self) -> None:
        if self._server_name is None:
            super().connect()
            return
        http.client.HTTPConnection.connect(self)
        self.sock = self._tls_context.wrap_socket(self.sock, server_hostname=self._server_name)
