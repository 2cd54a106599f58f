"""Checking a worker's kubeconfig before connecting with it (pure).

A MultiKueueCluster's kubeconfig comes from a Secret anyone with write access to that Secret
controls, and the manager would act on it with its own process: as Kueue does, refuse what
would run a program (``exec``, ``auth-provider``) or read a file of the manager's host
(``tokenFile`` and the file forms of certificates and keys); only inline credentials are taken.
A refusal is a :class:`BadKubeconfig` whose text becomes the MultiKueueCluster's condition.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

_FILE_FIELDS = {
    "cluster": ("certificate-authority",),
    "user": ("client-certificate", "client-key", "tokenFile"),
}
_PROGRAM_FIELDS = ("exec", "auth-provider")


class BadKubeconfig(ValueError):
    """The kubeconfig cannot be used; the message says why."""


def _named(config: Mapping[str, Any], section: str, name: str, inner: str) -> Mapping[str, Any]:
    for entry in config.get(section) or ():
        if isinstance(entry, Mapping) and entry.get("name") == name:
            value = entry.get(inner)
            if isinstance(value, Mapping):
                return value
    raise BadKubeconfig(f"{inner} {name!r} of the current context not found")


def parse_kubeconfig(raw: bytes | str) -> dict[str, Any]:
    """The kubeconfig as a dict, checked; raises :class:`BadKubeconfig`."""
    try:
        config = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise BadKubeconfig(f"not a kubeconfig: {exc}") from exc
    if not isinstance(config, dict):
        raise BadKubeconfig("not a kubeconfig: expected a mapping")
    current = config.get("current-context")
    contexts: list[Any] = list(config.get("contexts") or [])
    if not current:
        if len(contexts) != 1:
            raise BadKubeconfig("no current-context")
        current = (contexts[0] or {}).get("name")
        config["current-context"] = current
    context = _named(config, "contexts", str(current), "context")
    cluster = _named(config, "clusters", str(context.get("cluster")), "cluster")
    if not cluster.get("server"):
        raise BadKubeconfig(f"cluster {context.get('cluster')!r} has no server")
    user = _named(config, "users", str(context.get("user")), "user") if context.get("user") else {}
    for key in _PROGRAM_FIELDS:
        if key in user:
            raise BadKubeconfig(f"user {context.get('user')!r}: {key} is not allowed")
    for part, values in (("cluster", cluster), ("user", user)):
        for key in _FILE_FIELDS[part]:
            if values.get(key):
                raise BadKubeconfig(f"{part} field {key} (a file) is not allowed; embed the data")
    return config
