"""One API server's connection: its TLS context, one HTTP session and the credentials.

Built from a :class:`~pykueue.kube.kubeconfig.ClientConfig`. The session does not consult
the environment per request (``trust_env=False``): with it aiohttp read ~/.netrc and the
proxy variables in a worker thread on every request, a thread hand-off that cost a busy
manager several per cent of its CPU (and the extender a third of its CPU per bound pod).
The proxy the environment names for the API server (``HTTPS_PROXY``/``NO_PROXY`` ...) is
resolved once instead, unless the kubeconfig sets its own; netrc credentials never apply.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
import urllib.request
from collections.abc import Mapping
from urllib.parse import urlsplit

import aiohttp

from pykueue.kube.kubeconfig import ClientConfig, KubeconfigError, TokenFile

# client-go allows this many idle-or-busy connections per host; each watch pins one, and
# aiohttp's default would let a handful of informers starve ordinary requests.
DEFAULT_MAX_CONNECTIONS = 100
# Watch events of big objects exceed aiohttp's default read buffer (etcd allows 1.5 MiB).
READ_BUFSIZE = 2**21


def environment_proxy(host: str) -> str | None:
    """The proxy the environment names for ``host`` (a URL), read now; None if it bypasses."""
    url = urlsplit(host)
    if not url.hostname or urllib.request.proxy_bypass(url.hostname):
        return None
    return urllib.request.getproxies().get(url.scheme)


def ssl_context(config: ClientConfig) -> ssl.SSLContext:
    """The client TLS context: the cluster's CA (else the system's), the client certificate."""
    context = ssl.create_default_context(cafile=config.ca_file, cadata=config.ca_data)
    if config.cert_data is not None or config.key_data is not None:
        _load_chain_from_memory(context, config)
    elif config.cert_file:
        context.load_cert_chain(config.cert_file, keyfile=config.key_file)
    if config.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _load_chain_from_memory(context: ssl.SSLContext, config: ClientConfig) -> None:
    """``load_cert_chain`` reads only files: a private directory holds them while it reads."""
    with tempfile.TemporaryDirectory(prefix="pykueue-client-") as directory:  # mode 0700

        def written(name: str, data: bytes | None, path: str | None) -> str:
            if data is None:
                if path is None:
                    raise KubeconfigError("client certificate without a client key")
                return path
            target = os.path.join(directory, name)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            return target

        context.load_cert_chain(
            written("tls.crt", config.cert_data, config.cert_file),
            keyfile=written("tls.key", config.key_data, config.key_file),
        )


class Connection:
    """The session, TLS and credentials requests to one API server go out with.

    The session is made on first use, inside the event loop that will use it."""

    def __init__(self, config: ClientConfig, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        self.config = config
        self.host = config.host.rstrip("/")
        self.proxy = config.proxy or environment_proxy(self.host)
        self.server_hostname = config.server_name
        self.max_connections = max_connections
        self._ssl = ssl_context(config) if self.host.startswith("https:") else None
        self._token_file = TokenFile(config.token_file) if config.token_file else None
        self._static: dict[str, str] = {}
        if config.token:
            self._static["Authorization"] = f"Bearer {config.token}"
        elif config.username is not None and config.password is not None:
            pair = f"{config.username}:{config.password}".encode()
            self._static["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit=self.max_connections, ssl=self._ssl if self._ssl is not None else True
            )
            self._session = aiohttp.ClientSession(
                connector=connector, trust_env=False, read_bufsize=READ_BUFSIZE
            )
        return self._session

    async def auth_headers(self) -> Mapping[str, str]:
        """The credentials' headers for the next request (a rotated token file re-read)."""
        if self.config.auth_headers is not None:
            return await self.config.auth_headers()
        if self._token_file is not None:
            return self._token_file.headers()
        return self._static

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
