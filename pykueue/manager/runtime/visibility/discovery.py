"""Discovery and OpenAPI documents of the visibility API group.

The aggregator checks an APIService's availability by GETting
``/apis/<group>/<version>`` and builds cluster discovery from it; kubectl then finds the
resources there. OpenAPI is downloaded by the aggregator for the merged cluster spec; a
minimal valid document keeps its controller from retrying an error.

Like Kueue, the group is served at ``v1beta2`` (preferred) and ``v1beta1`` (what clients of
Kueue v0.12 and older ask for); the two carry the same data, so one set of handlers serves
both and only the ``apiVersion`` of an answer differs.
"""

from __future__ import annotations

from typing import Any

from pykueue.api.keys import VISIBILITY_GROUP

VERSION = "v1beta2"  # the preferred version
VERSIONS = (VERSION, "v1beta1")  # preferred first, as discovery lists them
GROUP_VERSION = f"{VISIBILITY_GROUP}/{VERSION}"
OPENAPI_TITLE = "pykueue visibility-server"


def group_version(version: str) -> str:
    return f"{VISIBILITY_GROUP}/{version}"


def _group() -> dict[str, Any]:
    versions = [{"groupVersion": group_version(v), "version": v} for v in VERSIONS]
    return {"name": VISIBILITY_GROUP, "versions": versions, "preferredVersion": versions[0]}


def api_group_list() -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group()]}


def api_group() -> dict[str, Any]:
    return {"kind": "APIGroup", "apiVersion": "v1", **_group()}


def _resource(name: str, singular: str, namespaced: bool, kind: str, verbs: list[str]) -> dict[str, Any]:
    return {"name": name, "singularName": singular, "namespaced": namespaced, "kind": kind, "verbs": verbs}


def api_resource_list(version: str = VERSION) -> dict[str, Any]:
    # As in Kueue, the queues themselves are placeholders with no verbs; the data lives in
    # their ``pendingworkloads`` subresource.
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version(version),
        "resources": [
            _resource("clusterqueues", "clusterqueue", False, "ClusterQueue", []),
            _resource("clusterqueues/pendingworkloads", "", False, "PendingWorkloadsSummary", ["get"]),
            _resource("localqueues", "localqueue", True, "LocalQueue", []),
            _resource("localqueues/pendingworkloads", "", True, "PendingWorkloadsSummary", ["get"]),
        ],
    }


def openapi_v2() -> dict[str, Any]:
    return {"swagger": "2.0", "info": {"title": OPENAPI_TITLE, "version": VERSION}, "paths": {}}


OPENAPI_V3_GROUP_PATH = f"apis/{GROUP_VERSION}"


def openapi_v3_group_path(version: str) -> str:
    return f"apis/{group_version(version)}"


def openapi_v3_index() -> dict[str, Any]:
    paths = (openapi_v3_group_path(v) for v in VERSIONS)
    return {"paths": {path: {"serverRelativeURL": f"/openapi/v3/{path}"} for path in paths}}


def openapi_v3_group() -> dict[str, Any]:
    return {"openapi": "3.0.0", "info": {"title": OPENAPI_TITLE, "version": VERSION}, "paths": {}}
