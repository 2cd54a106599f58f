"""What the commands share: the connection, namespaces, dry-run, API paths and errors."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

from pykueue.kueuectl.cli import Flag, Invocation
from pykueue.kueuectl.kubeconfig import ConfigFlags, connection, namespace
from pykueue.kueuectl.transport import Client

KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"
VISIBILITY_API = "/apis/visibility.kueue.x-k8s.io/v1beta2"

DRY_RUN = Flag("dry-run", "string", 'one of "none", "server" or "client": "client" only prints the object '
               'that would be sent, "server" sends it without storing it', default="none")
ALL_NAMESPACES = Flag("all-namespaces", "bool", "list across all namespaces (ignores --namespace)", short="A")
LABEL_SELECTOR = Flag("selector", "string",
                      "label query to filter on (=, == and !=, e.g. -l key1=value1,key2=value2)", short="l")
FIELD_SELECTOR = Flag("field-selector", "string",
                      "field query to filter on (=, == and !=; the server supports a few fields per type)")

# The connection flags every command takes, as kubectl names them.
GLOBAL_FLAGS: tuple[Flag, ...] = (
    Flag("as", "string", "user to impersonate"),
    Flag("as-group", "stringArray", "group to impersonate (repeatable)"),
    Flag("as-uid", "string", "UID to impersonate"),
    Flag("as-user-extra", "stringArray", "extra of the impersonated user, key=value (repeatable)"),
    Flag("cache-dir", "string", "ignored; accepted for kubectl compatibility",
         default=os.path.join(os.path.expanduser("~"), ".kube", "cache")),
    Flag("certificate-authority", "string", "CA certificate file of the API server"),
    Flag("client-certificate", "string", "client certificate file for TLS"),
    Flag("client-key", "string", "client key file for TLS"),
    Flag("cluster", "string", "kubeconfig cluster to use"),
    Flag("context", "string", "kubeconfig context to use"),
    Flag("disable-compression", "bool", "ignored; responses are never compressed"),
    Flag("insecure-skip-tls-verify", "bool", "do not verify the server's certificate (insecure)"),
    Flag("kubeconfig", "string", "kubeconfig file to use"),
    Flag("namespace", "string", "namespace of the request", short="n"),
    Flag("request-timeout", "string", "time to wait for one request (1s, 2m...; 0 waits forever)",
         default="0"),
    Flag("server", "string", "address and port of the API server", short="s"),
    Flag("tls-server-name", "string", "server name to check the server's certificate against"),
    Flag("token", "string", "bearer token for the API server"),
    Flag("user", "string", "kubeconfig user to use"),
)


class CommandError(Exception):
    """A command failed; the message is the line after ``Error: ``."""


def config_flags(inv: Invocation) -> ConfigFlags:
    v = inv.values
    return ConfigFlags(
        kubeconfig=v["kubeconfig"], context=v["context"], cluster=v["cluster"], user=v["user"],
        namespace=v["namespace"], server=v["server"], token=v["token"],
        certificate_authority=v["certificate-authority"], client_certificate=v["client-certificate"],
        client_key=v["client-key"], tls_server_name=v["tls-server-name"],
        insecure_skip_tls_verify=v["insecure-skip-tls-verify"], impersonate=v["as"],
        impersonate_groups=list(v["as-group"]), impersonate_uid=v["as-uid"],
        impersonate_extra=list(v["as-user-extra"]), request_timeout=v["request-timeout"])


def client(inv: Invocation) -> Client:
    return Client(connection(config_flags(inv)))


def current_namespace(inv: Invocation) -> str:
    return namespace(config_flags(inv))


def dry_run_strategy(inv: Invocation) -> str:
    value = inv.string("dry-run")
    if value not in ("none", "server", "client"):
        raise CommandError(f'invalid dry-run value ({value}). Must be "none", "server", or "client"')
    return value


def with_dry_run(operation: str, strategy: str) -> str:
    """The name printer's operation under a dry run ("created (server dry run)")."""
    if strategy == "none":
        return operation
    return f"{operation} ({strategy} dry run)"


def dry_run_query(strategy: str) -> dict[str, str]:
    return {"dryRun": "All"} if strategy == "server" else {}


def now() -> datetime:
    return datetime.now(UTC)


def list_request_limit() -> int:
    """Page size of list requests; ``KUEUECTL_LIST_REQUEST_LIMIT`` overrides it, as in kueuectl."""
    text = os.environ.get("KUEUECTL_LIST_REQUEST_LIMIT", "")
    if not text:
        return 100
    try:
        return int(text)
    except ValueError:
        raise CommandError("invalid list request limit") from None


def list_query(label_selector: str, field_selector: str, limit: int) -> dict[str, Any]:
    query: dict[str, Any] = {}
    if label_selector:
        query["labelSelector"] = label_selector
    if field_selector:
        query["fieldSelector"] = field_selector
    if limit:
        query["limit"] = limit
    return query
