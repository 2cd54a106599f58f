"""The extender's ServiceAccount is granted exactly what its code asks kube-apiserver for.

The ClusterRole comes from ``extender.kube_port.API_ACCESS`` and the Role from
``extender.certificates.SECRET_ACCESS``; both tables are checked against the requests the
code really makes (every method of the port is called against a recording client, the
certificate rotator against an in-memory apiserver), so a new call the role lacks, or a
right nothing uses any more, fails here rather than in a cluster.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.certs.rotation import CertRotator
from pykueue.extender import certificates
from pykueue.extender.kube_port import API_ACCESS, KubeClusterPort
from pykueue.kube.client import Query
from pykueue.kube.resources import ResourceRef
from tests.conftest import REPO
from tests.unit.certs.memory_apiserver import MemoryApiserver

Rule = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)
Named = tuple[str, str, str, str]  # the same and a resourceName ("" for any)
NAMESPACE = certificates.NAMESPACE
SERVICE_ACCOUNT = {"kind": "ServiceAccount", "name": "pykueue-extender", "namespace": NAMESPACE}
VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _documents() -> list[dict[str, Any]]:
    return [d for path in sorted((REPO / "manifests").glob("*.yaml"))
            for d in yaml.safe_load_all(path.read_text()) if d]


def _named(kind: str, name: str) -> dict[str, Any]:
    (doc,) = (d for d in _documents() if d["kind"] == kind and d["metadata"]["name"] == name)
    return doc


def _expand(rules: Iterable[dict[str, Any]]) -> set[Named]:
    return {(group, resource, verb, name) for rule in rules for group in rule.get("apiGroups", ())
            for resource in rule.get("resources", ()) for verb in rule.get("verbs", ())
            for name in rule.get("resourceNames") or ("",)}


def rule_of(method: str, path: str) -> Rule:
    """The RBAC (group, resource, verb) a request needs: ``/api/v1/...`` or
    ``/apis/GROUP/VERSION/...``, then ``namespaces/NS/`` for a namespaced one."""
    parts = path.strip("/").split("/")
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    if rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    resource = rest[0] if len(rest) < 3 else f"{rest[0]}/{rest[2]}"
    verb = VERBS.get(method) or ("get" if len(rest) > 1 else "list")
    return group, resource, verb


def _table(entries: Iterable[tuple[ResourceRef, str, tuple[str, ...]]]) -> set[Rule]:
    return {(ref.group, f"{ref.plural}/{sub}" if sub else ref.plural, verb)
            for ref, sub, verbs in entries for verb in verbs}


class RecordingClient:
    """Answers every request with an empty object (a list for a list) and records it."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []

    async def request(self, method: str, path: str, *, query: Query | None = None, body: Any = None,
                      content_type: str = "application/json", timeout_s: float | None = 60.0) -> Any:
        self.requests.append((method, path))
        return {"items": []} if method == "GET" and rule_of(method, path)[2] == "list" else {}


# The arguments each port method is called with, by parameter name.
ARGUMENTS: dict[str, Any] = {
    "namespace": "team-a", "name": "p", "node": "n1", "podset": "main", "workload": "w", "uid": "u",
    "resource_version": "7", "annotations": {"a": "b"},
}
WORKLOAD = {"metadata": {"name": "w", "namespace": "team-a", "resourceVersion": "7"}}


async def _requests_of_every_port_method() -> dict[str, set[Rule]]:
    client = RecordingClient()
    port = KubeClusterPort(client)  # type: ignore[arg-type]
    made: dict[str, set[Rule]] = {}
    for name, method in inspect.getmembers(port, inspect.iscoroutinefunction):
        if name.startswith("_"):
            continue
        parameters = inspect.signature(method).parameters
        arguments = [WORKLOAD] if name == "update_workload_status" else [ARGUMENTS[p] for p in parameters]
        client.requests.clear()
        await method(*arguments)
        made[name] = {rule_of(verb, path) for verb, path in client.requests}
    return made


async def test_every_request_of_the_port_is_in_its_table_and_every_entry_is_used() -> None:
    made = await _requests_of_every_port_method()
    assert {"post_binding", "update_workload_status", "patch_workload_annotations"} <= set(made)
    assert all(made.values()), "each method makes a request"
    used = set().union(*made.values())
    assert used == _table(API_ACCESS)
    assert made["post_binding"] == {("", "pods/binding", "create")}


def test_the_extender_cluster_role_is_the_ports_table() -> None:
    role = _named("ClusterRole", "pykueue-extender-role")
    assert not any(rule.get("resourceNames") for rule in role["rules"])
    assert _expand(role["rules"]) == {(*rule, "") for rule in _table(API_ACCESS)}


def test_the_extender_role_is_the_secret_table() -> None:
    role = _named("Role", "pykueue-extender-certificates")
    assert role["metadata"]["namespace"] == NAMESPACE
    wanted = {(ref.group, ref.plural, verb, name) for ref, verbs, names in certificates.SECRET_ACCESS
              for verb in verbs for name in names or ("",)}
    assert _expand(role["rules"]) == wanted
    # Only create goes unnamed: RBAC cannot limit it to a name.
    assert {(verb, name) for _, _, verb, name in wanted if not name} == {("create", "")}


def test_the_service_account_has_those_two_roles_and_no_other() -> None:
    bound = {(d["roleRef"]["kind"], d["roleRef"]["name"], d["kind"]) for d in _documents()
             if d["kind"] in ("ClusterRoleBinding", "RoleBinding") and SERVICE_ACCOUNT in d["subjects"]}
    assert bound == {("ClusterRole", "pykueue-extender-role", "ClusterRoleBinding"),
                     ("Role", "pykueue-extender-certificates", "RoleBinding")}
    (deployment,) = (d for d in _documents() if d["kind"] == "Deployment"
                     and d["metadata"]["name"] == "pykueue-extender")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == SERVICE_ACCOUNT["name"]


def test_nobody_else_may_bind_pods() -> None:
    binders = sorted(d["metadata"]["name"] for d in _documents() if d["kind"] in ("ClusterRole", "Role")
                     if any(r[1] in ("pods/binding", "bindings") for r in _expand(d.get("rules") or ())))
    assert binders == ["pykueue-extender-role"]


@pytest.mark.parametrize("change", ["none", "server", "client"])
async def test_keeping_the_secrets_asks_only_what_the_role_grants(tmp_path: Path, change: str) -> None:
    """Created once, then read (and, when one was changed, written back) by every replica."""
    api = MemoryApiserver()

    def rotator() -> CertRotator:
        return certificates.secret_rotator(api, NAMESPACE, cert_dir=tmp_path)  # type: ignore[arg-type]

    await rotator().reconcile()
    paths = {name: f"/api/v1/namespaces/{NAMESPACE}/secrets/{name}"
             for name in (certificates.SERVER_SECRET, certificates.TAS_SCHEDULER_CLIENT_SECRET)}
    assert set(api.objects) == set(paths.values())
    if change != "none":  # a broken pair is renewed in place
        changed = api.objects[paths[certificates.SERVER_SECRET if change == "server"
                                    else certificates.TAS_SCHEDULER_CLIENT_SECRET]]
        del changed["data"]["tls.crt"]
    await rotator().reconcile()
    if change != "none":
        assert api.count("PUT") >= 1
    granted = {(verb, name) for _, verbs, names in certificates.SECRET_ACCESS
               for verb in verbs for name in names or ("",)}
    for method, path in api.log:
        verb = {"GET": "get", "POST": "create", "PUT": "update"}[method]
        name = path.rsplit("/", 1)[1]
        assert (verb, "") in granted or (verb, name) in granted, (method, path)
    assert {method for method, _ in api.log} <= {"GET", "POST", "PUT"}
