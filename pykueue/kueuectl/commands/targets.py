"""``--for TYPE[.GROUP]/NAME``: the object a list is about, found as kubectl finds it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pykueue.kueuectl.commands.common import CommandError
from pykueue.kueuectl.discovery import Mapper, MappingError, Resource
from pykueue.kueuectl.transport import Client

JSON = dict[str, Any]


@dataclass(frozen=True)
class Target:
    resource: Resource
    name: str


def decode(mapper: Mapper, text: str) -> Target | None:
    """The resource and name of ``type/name``; None when ``text`` is not of that form."""
    parts = text.split("/")
    if len(parts) != 2:
        if len(parts) > 2:
            raise CommandError("arguments in resource/name form may not have more than one slash")
        return None
    resource_arg, name = parts
    try:
        return Target(mapper.resource_for(resource_arg), name)
    except MappingError:
        group_resource = resource_arg.lower()
        resource, _, group = group_resource.partition(".")
        raise CommandError(f"no matches for {group}/, Resource={resource}") from None


def fetch(api: Client, target: Target, namespace: str, all_namespaces: bool) -> JSON | None:
    """The first object of that type and name in the namespace (or anywhere with -A)."""
    resource = target.resource
    path = resource.collection_path("" if all_namespaces else namespace)
    page = api.get(path, {"fieldSelector": f"metadata.name={target.name}"})
    for item in page.get("items") or ():
        return {"apiVersion": resource.api_version, "kind": resource.kind, **item}
    return None
