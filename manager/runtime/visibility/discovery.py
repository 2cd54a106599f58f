"""Discovery and OpenAPI documents of the visibility API group.

The aggregator checks an APIService's availability by GETting
``/apis/<group>/<version>`` and builds cluster discovery from it; kubectl then finds the
resources there. OpenAPI is downloaded by the aggregator for the merged cluster spec; a
minimal valid document keeps its controller from retrying an error.
"""

from __future__ import annotations

from typing import Any

from api.keys import VISIBILITY_GROUP

VERSION = "v1beta2"
GROUP_VERSION = f"{VISIBILITY_GROUP}/{VERSION}"
OPENAPI_TITLE = "pykueue visibility-server"


def _group() -> dict[str, Any]:
    version = {"groupVersion": GROUP_VERSION, "version": VERSION}
    return {"name": VISIBILITY_GROUP, "versions": [version], "preferredVersion": version}


def api_group_list() -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group()]}


def api_group() -> dict[str, Any]:
    return {"kind": "APIGroup", "apiVersion": "v1", **_group()}


def _resource(name: str, singular: str, namespaced: bool, kind: str, verbs: list[str]) -> dict[str, Any]:
    return {"name": name, "singularName": singular, "namespaced": namespaced, "kind": kind, "verbs": verbs}


def api_resource_list() -> dict[str, Any]:
    # As in Kueue, the queues themselves are placeholders with no verbs; the data lives in
    # their ``pendingworkloads`` subresource.
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": GROUP_VERSION,
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


def openapi_v3_index() -> dict[str, Any]:
    return {"paths": {OPENAPI_V3_GROUP_PATH: {"serverRelativeURL": f"/openapi/v3/{OPENAPI_V3_GROUP_PATH}"}}}


def openapi_v3_group() -> dict[str, Any]:
    return {"openapi": "3.0.0", "info": {"title": OPENAPI_TITLE, "version": VERSION}, "paths": {}}
