"""Where the API server is and who we are to it: a kubeconfig, or the pod's service account.

pykueue reads these itself instead of through kubernetes-asyncio, whose client package
imports every generated API and model class (about 36 MB and 850 modules in every process)
to hand over a host, a TLS context and a header. What is read here:

* a kubeconfig file (``--kubeconfig``), else ``$KUBECONFIG`` (a list separated by
  ``os.pathsep``, merged as kubectl merges it: the first file that names a cluster, user,
  context or ``current-context`` wins), else ``~/.kube/config``; or a mapping already
  read (a MultiKueue worker's Secret). The context is ``context`` when given, else the
  ``current-context``;
* of its cluster: ``server``, ``certificate-authority(-data)``, ``insecure-skip-tls-verify``,
  ``tls-server-name``, ``proxy-url``;
* of its user: ``client-certificate(-data)``, ``client-key(-data)``, ``token``, ``tokenFile``
  (re-read when it changes, and at least every minute), ``username``/``password``.

As in kubectl, relative paths in a kubeconfig file are relative to that file's directory,
and ``-data`` fields win over the file fields beside them. Embedded certificate authorities
are loaded from memory; an embedded client certificate and key are written to a private
temporary directory only for the moment ``load_cert_chain`` reads them.

Not implemented here: a user whose credentials come from an ``exec`` plugin or an
``auth-provider`` (gcp, oidc). For such a user the kubeconfig goes to kubernetes-asyncio's
loader, imported only then, and its configuration supplies the TLS files and, on every
request, the credentials, so such a kubeconfig keeps working as before.

In a pod (:func:`in_cluster`): ``KUBERNETES_SERVICE_HOST``/``KUBERNETES_SERVICE_PORT``, the
service account's CA file, and its token file, which kubelet rotates (bound tokens expire):
it is re-read when it changes and at least every minute.

An unusable configuration raises :class:`KubeconfigError` (a ``ValueError``) with a one-line message.
"""

from __future__ import annotations

import base64
import binascii
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# client-go re-reads a token file at least this often; bound service-account tokens rotate.
TOKEN_FILE_MAX_AGE_S = 60.0
# The fields of a user that only kubernetes-asyncio's loader understands.
PLUGIN_FIELDS = ("exec", "auth-provider")

AuthHeaders = Callable[[], Awaitable[Mapping[str, str]]]


class KubeconfigError(ValueError):
    """A kubeconfig (or service account) that cannot be used, said in one line."""


@dataclass
class ClientConfig:
    """Everything a connection to one API server needs; paths are absolute or as given."""

    host: str
    ca_file: str | None = None
    ca_data: str | None = None  # PEM text
    insecure: bool = False
    server_name: str | None = None
    proxy: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    cert_data: bytes | None = None
    key_data: bytes | None = None
    token: str | None = None
    token_file: str | None = None
    username: str | None = None
    password: str | None = None
    # Per-request credentials from kubernetes-asyncio's loader (exec and auth-provider users).
    auth_headers: AuthHeaders | None = field(default=None, repr=False)
    via_library: bool = False


def kubeconfig_paths(environ: Mapping[str, str] = os.environ) -> list[Path]:
    """The files ``$KUBECONFIG`` names (empty entries skipped), else ``~/.kube/config``."""
    listed = [Path(p).expanduser() for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return listed or [Path("~/.kube/config").expanduser()]


def read_kubeconfig(
    path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] = os.environ
) -> dict[str, Any]:
    """The kubeconfig as one mapping, each named entry with the directory its file lives in
    (``_base``) so relative paths resolve as kubectl resolves them."""
    paths = [Path(os.fspath(path)).expanduser()] if path is not None else kubeconfig_paths(environ)
    present = [p for p in paths if p.is_file()]
    if not present:
        raise KubeconfigError(f"kubeconfig {' or '.join(str(p) for p in paths)} not found")
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    for file in present:
        try:
            data = yaml.safe_load(file.read_text())
        except yaml.YAMLError as exc:
            raise KubeconfigError(f"kubeconfig {file}: not YAML ({_first_line(exc)})") from exc
        if data is None:
            continue
        if not isinstance(data, dict):
            raise KubeconfigError(f"kubeconfig {file}: not a mapping")
        base = str(file.resolve().parent)
        for section in ("clusters", "users", "contexts"):
            known = {entry.get("name") for entry in merged[section]}
            for entry in _entries(data, section, str(file)):
                if entry.get("name") not in known:
                    merged[section].append({**entry, "_base": base})
                    known.add(entry.get("name"))
        if data.get("current-context") and "current-context" not in merged:
            merged["current-context"] = data["current-context"]
    return merged


def from_mapping(
    config: Mapping[str, Any], context: str | None = None, base_dir: str | None = None
) -> ClientConfig:
    """The client configuration of ``context`` (else the current one) of a kubeconfig mapping.

    Relative paths resolve against ``base_dir`` (or an entry's ``_base``, see
    :func:`read_kubeconfig`), else against the working directory. A user this module does
    not implement gives a configuration with ``via_library`` set and only the host filled;
    :func:`load` completes those."""
    if not isinstance(config, Mapping):
        raise KubeconfigError("kubeconfig is not a mapping")
    name = context or config.get("current-context")
    if not name:
        raise KubeconfigError("kubeconfig has no current-context and no context was given")
    ctx = _named(config, "contexts", "context", str(name))
    cluster_name = ctx.get("cluster")
    if not cluster_name:
        raise KubeconfigError(f"context {name!r} names no cluster")
    cluster = _named(config, "clusters", "cluster", str(cluster_name))
    user: Mapping[str, Any] = {}
    if ctx.get("user"):
        user = _named(config, "users", "user", str(ctx["user"]), required=False)
    server = cluster.get("server")
    if not server or not isinstance(server, str):
        raise KubeconfigError(f"cluster {cluster_name!r} has no server")
    result = ClientConfig(host=server.rstrip("/"))
    if any(key in user for key in PLUGIN_FIELDS):
        result.via_library = True
        return result

    def path(entry: Mapping[str, Any], key: str) -> str | None:
        value = entry.get(key)
        if not value:
            return None
        base = base_dir or entry.get("_base")
        expanded = os.path.expanduser(str(value))
        return os.path.join(base, expanded) if base else expanded

    ca_data = _decoded(cluster, "certificate-authority-data")
    result.ca_data = None if ca_data is None else ca_data.decode(errors="replace")
    result.ca_file = None if result.ca_data else path(cluster, "certificate-authority")
    result.insecure = bool(cluster.get("insecure-skip-tls-verify", False))
    result.server_name = cluster.get("tls-server-name") or None
    result.proxy = cluster.get("proxy-url") or None
    result.cert_data = _decoded(user, "client-certificate-data")
    result.cert_file = None if result.cert_data else path(user, "client-certificate")
    result.key_data = _decoded(user, "client-key-data")
    result.key_file = None if result.key_data else path(user, "client-key")
    if (result.cert_data or result.cert_file) and not (result.key_data or result.key_file):
        raise KubeconfigError(f"user {ctx.get('user')!r} has a client certificate but no client key")
    result.token_file = path(user, "tokenFile")
    result.token = None if result.token_file else (str(user["token"]) if user.get("token") else None)
    if user.get("username") is not None and user.get("password") is not None:
        result.username, result.password = str(user["username"]), str(user["password"])
    return result


def in_cluster(
    environ: Mapping[str, str] = os.environ, account_dir: Path = SERVICE_ACCOUNT_DIR
) -> ClientConfig:
    """The pod's service account: the API server's Service, its CA and the (rotated) token."""
    host, port = environ.get("KUBERNETES_SERVICE_HOST", ""), environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeconfigError("in-cluster configuration: KUBERNETES_SERVICE_HOST/PORT not set")
    token, ca = account_dir / "token", account_dir / "ca.crt"
    for file in (token, ca):
        if not file.is_file():
            raise KubeconfigError(f"in-cluster configuration: {file} not found")
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return ClientConfig(host=f"https://{netloc}", ca_file=str(ca), token_file=str(token))


async def load(path: str | os.PathLike[str] | None = None, context: str | None = None) -> ClientConfig:
    """A kubeconfig file's client configuration (see the module's docstring for which file)."""
    merged = read_kubeconfig(path)
    config = from_mapping(merged, context)
    if config.via_library:
        return await _through_library(None if path is None else os.fspath(path), None, context)
    return config


async def load_mapping(mapping: Mapping[str, Any], context: str | None = None) -> ClientConfig:
    """A kubeconfig mapping's client configuration; relative paths against the working directory."""
    config = from_mapping(mapping, context)
    if config.via_library:
        return await _through_library(None, dict(mapping), context)
    return config


class TokenFile:
    """A bearer token kept in a file that something else rotates: re-read when the file
    changes (kubelet swaps it atomically) and at least every ``max_age_s``.

    A read that fails or finds the file empty keeps the last token, as client-go does;
    the first read must succeed."""

    def __init__(
        self, path: str, max_age_s: float = TOKEN_FILE_MAX_AGE_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.path = path
        self._max_age_s = max_age_s
        self._clock = clock
        self._stamp: tuple[int, int, int] | None = None
        self._read_at = 0.0
        self._headers: dict[str, str] = {}
        if not self._refresh():
            raise KubeconfigError(f"token file {path} is unreadable or empty")

    def _refresh(self) -> bool:
        try:
            stat = os.stat(self.path)
            token = Path(self.path).read_text().strip()
        except OSError:
            return False
        self._read_at = self._clock()
        if not token:
            return False
        self._stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        self._headers = {"Authorization": f"Bearer {token}"}
        return True

    def headers(self) -> Mapping[str, str]:
        stale = self._clock() - self._read_at >= self._max_age_s
        if not stale:
            try:
                stat = os.stat(self.path)
                stale = (stat.st_ino, stat.st_mtime_ns, stat.st_size) != self._stamp
            except OSError:
                stale = False  # gone for a moment (being swapped): keep the token we have
        if stale:
            self._refresh()
        return self._headers


async def _through_library(
    path: str | None, mapping: dict[str, Any] | None, context: str | None
) -> ClientConfig:
    """kubernetes-asyncio's loader for what this module does not implement (imported only here)."""
    from kubernetes_asyncio import config as library
    from kubernetes_asyncio.client import Configuration

    configuration = Configuration()
    try:
        if mapping is not None:
            await library.load_kube_config_from_dict(
                mapping, context=context, client_configuration=configuration
            )
        else:
            await library.load_kube_config(
                config_file=path, context=context, client_configuration=configuration, persist_config=False
            )
    except library.ConfigException as exc:
        raise KubeconfigError(_first_line(exc)) from exc

    async def headers() -> Mapping[str, str]:
        settings = await configuration.auth_settings()
        return {setting["key"]: setting["value"] for setting in settings.values()}

    return ClientConfig(
        host=str(configuration.host).rstrip("/"),
        ca_file=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        server_name=configuration.tls_server_name,
        proxy=configuration.proxy,
        cert_file=configuration.cert_file,
        key_file=configuration.key_file,
        auth_headers=headers,
        via_library=True,
    )


def _entries(data: Mapping[str, Any], section: str, where: str) -> list[Mapping[str, Any]]:
    entries = data.get(section) or []
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise KubeconfigError(f"kubeconfig {where}: {section} is not a list of named entries")
    return entries


def _named(
    config: Mapping[str, Any], section: str, key: str, name: str, required: bool = True
) -> Mapping[str, Any]:
    for entry in _entries(config, section, "mapping"):
        if entry.get("name") == name:
            value = entry.get(key) or {}
            if not isinstance(value, Mapping):
                raise KubeconfigError(f"{key} {name!r} is not a mapping")
            base = entry.get("_base")
            return {**value, "_base": base} if base else value
    if required:
        raise KubeconfigError(f"kubeconfig has no {key} named {name!r}")
    return {}


def _decoded(entry: Mapping[str, Any], key: str) -> bytes | None:
    value = entry.get(key)
    if not value:
        return None
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise KubeconfigError(f"{key} is not base64") from exc


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
