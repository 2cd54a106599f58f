"""Resource names to kinds and back, from the API server's discovery (kubectl's RESTMapper).

``--for job/NAME`` and a Workload's owner references name resources the way kubectl does:
plural, singular, short name or kind, optionally with ``.group`` or ``.version.group``. One
aggregated-discovery request lists every group; servers without it are asked group by group.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykueue.kueuectl.transport import ApiError, Client

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection_path(self, namespace: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{base}/namespaces/{namespace}/{self.plural}"
        return f"{base}/{self.plural}"


class MappingError(Exception):
    pass


class Mapper:
    def __init__(self, api: Client) -> None:
        self.api = api
        self._resources: list[Resource] | None = None

    def resources(self) -> list[Resource]:
        """Every top-level resource, groups in the server's priority order and each group's
        preferred version first."""
        if self._resources is None:
            self._resources = self._aggregated() if self._supports_aggregated() else self._legacy()
        return self._resources

    def _supports_aggregated(self) -> bool:
        self._core = self.api.get("/api", accept=AGGREGATED)
        self._groups = self.api.get("/apis", accept=AGGREGATED)
        return bool(self._groups.get("kind") == "APIGroupDiscoveryList")

    def _aggregated(self) -> list[Resource]:
        out: list[Resource] = []
        for document in (self._core, self._groups):
            for group in document.get("items") or ():
                name = str((group.get("metadata") or {}).get("name") or "")
                for version in group.get("versions") or ():
                    for item in version.get("resources") or ():
                        kind = str((item.get("responseKind") or {}).get("kind") or "")
                        out.append(Resource(
                            name, str(version.get("version")), str(item.get("resource")),
                            str(item.get("singularResource") or kind.lower()), kind,
                            item.get("scope") == "Namespaced", tuple(item.get("shortNames") or ())))
        return out

    def _legacy(self) -> list[Resource]:
        versions: list[tuple[str, str]] = [("", v) for v in (self._core.get("versions") or ["v1"])]
        for group in self._groups.get("groups") or ():
            preferred = (group.get("preferredVersion") or {}).get("version")
            ordered = [v.get("version") for v in group.get("versions") or ()]
            ordered.sort(key=lambda v: v != preferred)
            versions.extend((str(group.get("name")), str(v)) for v in ordered)
        out: list[Resource] = []
        for group_name, version in versions:
            try:
                listing = self.api.get(f"/apis/{group_name}/{version}" if group_name else f"/api/{version}")
            except ApiError:
                continue
            for item in listing.get("resources") or ():
                if "/" in str(item.get("name")):
                    continue
                kind = str(item.get("kind") or "")
                out.append(Resource(group_name, version, str(item.get("name")),
                                    str(item.get("singularName") or kind.lower()), kind,
                                    bool(item.get("namespaced")), tuple(item.get("shortNames") or ())))
        return out

    def resource_for(self, text: str) -> Resource:
        """The resource ``text`` names (``job``, ``jobs.batch``, ``jobs.v1.batch``, ``po``)."""
        arg = text.lower()
        if arg.count(".") >= 2:
            plural, version, group = arg.split(".", 2)
            found = self._match(plural, group, version)
            if found is not None:
                return found
        resource, _, group = arg.partition(".")
        found = self._match(resource, group if "." in arg else None, None)
        if found is None:
            raise MappingError(f"the server doesn't have a resource type \"{resource}\"")
        return found

    def _match(self, name: str, group: str | None, version: str | None) -> Resource | None:
        candidates = [r for r in self.resources()
                      if (group is None or r.group == group) and (version is None or r.version == version)]
        for matches in (
            lambda r: name in r.short_names,
            lambda r: name in (r.plural, r.singular),
            lambda r: name == r.kind.lower(),
        ):
            for resource in candidates:
                if matches(resource):
                    return resource
        return None

    def for_kind(self, api_version: str, kind: str) -> Resource:
        group, _, version = api_version.rpartition("/")
        for resource in self.resources():
            if resource.group == group and resource.version == version and resource.kind == kind:
                return resource
        for resource in self.resources():
            if resource.group == group and resource.kind == kind:
                return resource
        raise MappingError(f'no matches for kind "{kind}" in version "{api_version}"')
