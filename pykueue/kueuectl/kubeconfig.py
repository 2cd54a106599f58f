"""Which cluster, credentials and namespace a command uses: kubectl's rules.

The kubeconfig files are ``--kubeconfig``, else every file of ``$KUBECONFIG`` merged (the
first file to name a cluster, user or context wins), else ``~/.kube/config``; without any,
the pod's service account when running in a cluster. The connection flags kubectl accepts
(``--context``, ``--server``, ``--token``, ``--as`` ...) override what the files say.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pykueue.kube.kubeconfig import SERVICE_ACCOUNT_DIR
from pykueue.kueuectl.gotypes import parse_go_duration


class ConfigError(Exception):
    """The configuration cannot be used; the message is the one line to print."""


@dataclass
class ConfigFlags:
    """The connection flags every command accepts (kubectl's genericclioptions)."""

    kubeconfig: str = ""
    context: str = ""
    cluster: str = ""
    user: str = ""
    namespace: str = ""
    server: str = ""
    token: str = ""
    certificate_authority: str = ""
    client_certificate: str = ""
    client_key: str = ""
    tls_server_name: str = ""
    insecure_skip_tls_verify: bool = False
    impersonate: str = ""
    impersonate_groups: list[str] = field(default_factory=list)
    impersonate_uid: str = ""
    impersonate_extra: list[str] = field(default_factory=list)
    request_timeout: str = "0"


@dataclass
class Connection:
    """Everything needed to talk to one API server."""

    server: str
    ca_file: str = ""
    ca_data: bytes = b""
    insecure: bool = False
    tls_server_name: str = ""
    cert_file: str = ""
    cert_data: bytes = b""
    key_file: str = ""
    key_data: bytes = b""
    token: str = ""
    token_file: str = ""
    username: str = ""
    password: str = ""
    exec_config: dict[str, Any] | None = None
    impersonate: str = ""
    impersonate_groups: list[str] = field(default_factory=list)
    impersonate_uid: str = ""
    impersonate_extra: dict[str, list[str]] = field(default_factory=dict)
    timeout_s: float | None = None


@dataclass
class _Merged:
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)
    current_context: str = ""
    files: int = 0


def _config_paths(flags: ConfigFlags) -> tuple[list[Path], bool]:
    """The files to read and whether they must exist."""
    if flags.kubeconfig:
        return [Path(flags.kubeconfig).expanduser()], True
    env = os.environ.get("KUBECONFIG", "")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p], False
    return [Path.home() / ".kube" / "config"], False


def _absolute(base: Path, entry: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """File references in a kubeconfig are relative to the file itself."""
    out = dict(entry)
    for key in keys:
        value = out.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            out[key] = str(base / value)
    return out


def _load(flags: ConfigFlags) -> _Merged:
    merged = _Merged()
    paths, required = _config_paths(flags)
    for path in paths:
        try:
            text = path.read_text()
        except FileNotFoundError as exc:
            if required:
                raise ConfigError(f"stat {path}: no such file or directory") from exc
            continue
        except OSError as exc:
            raise ConfigError(f"error loading config file \"{path}\": {exc}") from exc
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"error loading config file \"{path}\": {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"error loading config file \"{path}\": not a kubeconfig")
        merged.files += 1
        base = path.parent
        for item in data.get("clusters") or ():
            merged.clusters.setdefault(str(item.get("name", "")), _absolute(
                base, item.get("cluster") or {}, ("certificate-authority",)))
        for item in data.get("users") or ():
            merged.users.setdefault(str(item.get("name", "")), _absolute(
                base, item.get("user") or {}, ("client-certificate", "client-key", "tokenFile")))
        for item in data.get("contexts") or ():
            merged.contexts.setdefault(str(item.get("name", "")), item.get("context") or {})
        if not merged.current_context:
            merged.current_context = str(data.get("current-context") or "")
    return merged


def namespace(flags: ConfigFlags) -> str:
    """The namespace of a namespaced command: ``-n``, else the context's, else ``default``."""
    if flags.namespace:
        return flags.namespace
    try:
        merged = _load(flags)
    except ConfigError:
        return "default"
    if merged.files == 0 and _in_cluster():
        try:
            return (SERVICE_ACCOUNT_DIR / "namespace").read_text().strip() or "default"
        except OSError:
            return "default"
    context = merged.contexts.get(flags.context or merged.current_context) or {}
    return str(context.get("namespace") or "default")


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and (SERVICE_ACCOUNT_DIR / "token").exists()


def connection(flags: ConfigFlags) -> Connection:
    merged = _load(flags)
    if merged.files == 0 and not flags.server:
        if _in_cluster():
            return _in_cluster_connection(flags)
        raise ConfigError("invalid configuration: no configuration has been provided, "
                          "try setting KUBERNETES_MASTER environment variable")
    context_name = flags.context or merged.current_context
    context: dict[str, Any] = {}
    if context_name:
        if context_name not in merged.contexts:
            raise ConfigError(f"context \"{context_name}\" does not exist")
        context = merged.contexts[context_name]
    cluster_name = flags.cluster or str(context.get("cluster") or "")
    user_name = flags.user or str(context.get("user") or "")
    cluster = dict(merged.clusters.get(cluster_name) or {})
    user = dict(merged.users.get(user_name) or {})
    if flags.cluster and cluster_name not in merged.clusters:
        raise ConfigError(f"cluster \"{cluster_name}\" does not exist")
    if flags.user and user_name not in merged.users:
        raise ConfigError(f"auth info \"{user_name}\" does not exist")

    server = flags.server or str(cluster.get("server") or "")
    if not server:
        raise ConfigError("invalid configuration: no configuration has been provided, "
                          "try setting KUBERNETES_MASTER environment variable")
    conn = Connection(server=_normalise_server(server))
    if flags.certificate_authority:
        conn.ca_file = flags.certificate_authority
    else:
        conn.ca_file = str(cluster.get("certificate-authority") or "")
        conn.ca_data = _b64(cluster.get("certificate-authority-data"))
    conn.insecure = flags.insecure_skip_tls_verify or bool(cluster.get("insecure-skip-tls-verify"))
    if conn.insecure and flags.insecure_skip_tls_verify:
        conn.ca_file, conn.ca_data = "", b""
    conn.tls_server_name = flags.tls_server_name or str(cluster.get("tls-server-name") or "")

    conn.cert_file = flags.client_certificate or str(user.get("client-certificate") or "")
    conn.cert_data = b"" if flags.client_certificate else _b64(user.get("client-certificate-data"))
    conn.key_file = flags.client_key or str(user.get("client-key") or "")
    conn.key_data = b"" if flags.client_key else _b64(user.get("client-key-data"))
    conn.token = flags.token or str(user.get("token") or "")
    conn.token_file = "" if flags.token else str(user.get("tokenFile") or "")
    conn.username = str(user.get("username") or "")
    conn.password = str(user.get("password") or "")
    exec_config = user.get("exec")
    conn.exec_config = exec_config if isinstance(exec_config, dict) and not conn.token else None
    if user.get("auth-provider"):
        name = (user.get("auth-provider") or {}).get("name", "")
        raise ConfigError(f"the {name} auth provider plugin is not supported; use an exec credential plugin")

    conn.impersonate = flags.impersonate or str(user.get("as") or "")
    conn.impersonate_groups = list(flags.impersonate_groups or user.get("as-groups") or [])
    conn.impersonate_uid = flags.impersonate_uid or str(user.get("as-uid") or "")
    conn.impersonate_extra = _extras(flags.impersonate_extra) or {
        str(k): [str(v) for v in vs] for k, vs in (user.get("as-user-extra") or {}).items()}
    conn.timeout_s = request_timeout(flags.request_timeout)
    return conn


def _in_cluster_connection(flags: ConfigFlags) -> Connection:
    host = os.environ["KUBERNETES_SERVICE_HOST"]
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    host = f"[{host}]" if ":" in host else host
    return Connection(server=f"https://{host}:{port}", ca_file=str(SERVICE_ACCOUNT_DIR / "ca.crt"),
                      token_file=str(SERVICE_ACCOUNT_DIR / "token"),
                      timeout_s=request_timeout(flags.request_timeout))


def _normalise_server(server: str) -> str:
    if "://" not in server:
        server = "https://" + server
    return server.rstrip("/")


def _b64(value: object) -> bytes:
    if not isinstance(value, str) or not value:
        return b""
    try:
        return base64.b64decode(value)
    except ValueError as exc:
        raise ConfigError(f"illegal base64 data in kubeconfig: {exc}") from exc


def _extras(values: list[str]) -> dict[str, list[str]]:
    extras: dict[str, list[str]] = {}
    for value in values:
        key, sep, item = value.partition("=")
        if not sep:
            raise ConfigError(f"invalid --as-user-extra value {value!r}: must be key=value")
        extras.setdefault(key, []).append(item)
    return extras


def request_timeout(text: str) -> float | None:
    """``--request-timeout``: a Go duration, or whole seconds; zero means none."""
    text = text.strip()
    if not text or text == "0":
        return None
    if text.isdigit():
        return float(text) or None
    ns = parse_go_duration(text)
    if ns <= 0:
        raise ConfigError("Invalid timeout value. Timeout must be a single integer in seconds, "
                          "or an integer followed by a corresponding time unit (e.g. 1s | 2m | 3h)")
    return ns / 1e9


def names(flags: ConfigFlags, section: str) -> list[str]:
    """The names of a kubeconfig section ("contexts", "clusters" or "users")."""
    merged = _load(flags)
    return sorted({"contexts": merged.contexts, "clusters": merged.clusters, "users": merged.users}[section])
