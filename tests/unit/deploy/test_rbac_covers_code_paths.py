"""The install's roles grant exactly what the code asks of kube-apiserver.

Every module that calls the API states its calls next to them (``api.access``: an
``API_ACCESS`` table, or an ``api_access`` function where the rows follow from a registry the
code walks: the job kinds, the owner kinds of the ancestor walk), and
``pykueue.run.api_access`` gathers those of every part ``pykueue run`` composes. Both ways are
checked against ``manifests/02-rbac.yaml``, following the bindings of pykueue's ServiceAccount:

* every row is granted. A read the role lacks is a 403 at run time, and in a webhook a 403
  used to become a denial: the pod webhook's ancestor walk GETs a pod's ReplicaSet, the role
  had no rule for it, and every Deployment in the cluster stopped creating pods;
* every grant of pykueue's own roles is some row's. The role once let the manager list and
  watch every Secret of its namespace (the CA keys with them) and delete Leases it only ever
  reads and PUTs, because it was copied rather than derived.

The tables are kept honest too: every table is reached from ``pykueue.run.api_access``, each
module's source still makes the kind of call its table states, and the Lease and certificate
code, run against in-memory API servers, asks for exactly what it declares.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import yaml

from pykueue import run
from pykueue.api.access import EVERY_NAMESPACE, OWN_NAMESPACE, ApiAccess
from pykueue.certs import rotation
from pykueue.kube import events as kube_events
from pykueue.kube import leader
from pykueue.kube import resources as res
from pykueue.manager.jobs import registry
from pykueue.manager.runtime import token_review
from pykueue.manager.runtime.controllers import finalizers, jobs, manager, provisioning, retention, topology
from pykueue.manager.runtime.controllers.multikueue import connections
from pykueue.manager.runtime.controllers.multikueue import controller as multikueue
from pykueue.manager.runtime.visibility import assembly, auth
from pykueue.webhook import facts, server
from tests.conftest import REPO
from tests.unit.certs.memory_apiserver import MemoryApiserver, recording_context
from tests.unit.runtime.fake_lease import FakeLease

NAMESPACE = "pykueue-system"
SERVICE_ACCOUNT = {"kind": "ServiceAccount", "name": "pykueue-controller-manager", "namespace": NAMESPACE}
OUR_ROLES = ("pykueue-manager-role", "pykueue-leader-election-role", "pykueue-auth-delegator")
CLUSTER = "cluster"  # where a ClusterRole bound by a ClusterRoleBinding applies
# Roles of Kubernetes' own the install binds (bootstrap policy): theirs to define, not ours to trim.
BUILT_IN_ROLES: dict[str, list[dict[str, Any]]] = {
    "extension-apiserver-authentication-reader": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"],
         "resourceNames": ["extension-apiserver-authentication"]}],
}
# Grants kept without a declared code path (none: every grant has one).
LEFT_IN_PLACE: set[tuple[str, str, str, str, str | None]] = set()

Where = str  # CLUSTER, or the namespace of a RoleBinding
Grant = tuple[Where, str, str, str, str | None]  # where, group, resource, verb, object name (None: any)


def _documents() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((REPO / "manifests" / "02-rbac.yaml").read_text()) if d]


def _role(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (role,) = (d for d in docs if d["kind"] in ("Role", "ClusterRole") and d["metadata"]["name"] == name)
    return role


def _granted(docs: list[dict[str, Any]]) -> dict[Grant, str]:
    """Every (where, group, resource, verb, name) a role bound to pykueue's ServiceAccount
    grants, with the role's name."""
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d.get("rules") or []
             for d in docs if d["kind"] in ("Role", "ClusterRole")}
    out: dict[Grant, str] = {}
    for binding in docs:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding") or \
                SERVICE_ACCOUNT not in (binding.get("subjects") or ()):
            continue
        ref = binding["roleRef"]
        where = CLUSTER if binding["kind"] == "ClusterRoleBinding" else binding["metadata"]["namespace"]
        namespace = binding["metadata"].get("namespace") if ref["kind"] == "Role" else None
        rules = roles.get((ref["kind"], namespace, ref["name"]))
        if rules is None:
            rules = BUILT_IN_ROLES[ref["name"]]  # not ours: a role of Kubernetes'
        for rule in rules:
            for group in rule.get("apiGroups", ()):
                for resource in rule.get("resources", ()):
                    for verb in rule.get("verbs", ()):
                        for name in rule.get("resourceNames") or (None,):
                            out[(where, group, resource, verb, name)] = ref["name"]
    return out


def _where(row: ApiAccess) -> Where:
    return {EVERY_NAMESPACE: CLUSTER, OWN_NAMESPACE: NAMESPACE}.get(row.namespace, row.namespace)


def _needed(rows: Iterable[ApiAccess]) -> dict[Grant, str]:
    """Every (where, group, resource, verb, name) the rows ask for, with a reason."""
    out: dict[Grant, str] = {}
    for row in rows:
        for verb in row.verbs:
            for name in row.names or (None,):
                out[(_where(row), row.group, row.resource, verb, name)] = row.why or "a call"
    return out


def _covered(need: Grant, granted: dict[Grant, str]) -> bool:
    """A grant in the same place (or cluster-wide) for any object, or for the object named."""
    where, group, resource, verb, name = need
    places = {CLUSTER, where}
    return any((place, group, resource, verb, obj) in granted for place in places for obj in {None, name})


def _missing(needed: dict[Grant, str], granted: dict[Grant, str]) -> list[str]:
    return sorted(f"{_show(need)} ({why})" for need, why in needed.items() if not _covered(need, granted))


def _unused(needed: dict[Grant, str], granted: dict[Grant, str]) -> list[str]:
    """Grants of pykueue's roles no row asks for: a grant for any object needs a row for any
    object in that place; a grant limited to a name needs a row for that name (or for any)."""
    unused = []
    for grant, role in sorted(granted.items(), key=lambda item: (item[1], str(item[0]))):
        where, group, resource, verb, name = grant
        if role not in OUR_ROLES or grant in LEFT_IN_PLACE:
            continue
        if (where, group, resource, verb, name) in needed or \
                (name is not None and (where, group, resource, verb, None) in needed):
            continue
        hint = "no code path asks for it"
        named = sorted(str(n) for (w, g, r, v, n) in needed if (w, g, r, v) == (where, group, resource, verb))
        elsewhere = sorted({w for (w, g, r, v, _) in needed if (g, r, v) == (group, resource, verb)}
                           - {where})
        if named and name is None:
            hint = f"only these objects are asked for: {', '.join(named)}"
        elif elsewhere:
            hint = f"asked for only in {', '.join(elsewhere)}"
        unused.append(f"{role}: {_show(grant)} ({hint})")
    return unused


def _show(grant: Grant) -> str:
    where, group, resource, verb, name = grant
    scope = "" if where == CLUSTER else f" in {where}"
    return f"{group or 'core'} {resource}{'/' + name if name else ''} {verb}{scope}"


def _every_row() -> tuple[ApiAccess, ...]:
    return run.api_access()


# -- (a) every call is granted ---------------------------------------------------------------


def test_every_call_the_code_makes_is_granted() -> None:
    missing = _missing(_needed(_every_row()), _granted(_documents()))
    assert not missing, "manifests/02-rbac.yaml lacks: " + "; ".join(missing)


def _walked() -> set[tuple[str, str]]:
    return {(row.group, row.resource) for row in facts.owner_access()}


@pytest.mark.parametrize("resource", [("apps", "replicasets"), ("apps", "deployments")])
def test_the_walk_from_a_deployment_pod_is_covered(resource: tuple[str, str]) -> None:
    """The derivation itself reaches the Deployment chain (it would otherwise prove nothing)."""
    assert resource in _walked()
    assert (CLUSTER, *resource, "get", None) in _granted(_documents())


def _without(docs: list[dict[str, Any]], role: str, resource: str) -> list[dict[str, Any]]:
    docs = copy.deepcopy(docs)
    for rule in _role(docs, role)["rules"]:
        rule["resources"] = [r for r in rule.get("resources", ()) if r != resource]
    return docs


def test_a_rule_missing_from_the_role_is_reported() -> None:
    """The check fails for a role without the ReplicaSet rule: it can catch the bug it is for."""
    missing = _missing(_needed(_every_row()), _granted(_without(_documents(), OUR_ROLES[0], "replicasets")))
    assert any(m.startswith("apps replicasets get") for m in missing), missing


def test_the_event_writes_are_derived_and_a_role_without_them_is_reported() -> None:
    """The recorder posts events.k8s.io Events and patches their series: both are needed,
    and a role lacking the events rule fails the check."""
    needed = _needed(_every_row())
    wanted = {(CLUSTER, "events.k8s.io", "events", verb, None) for verb in ("create", "patch")}
    assert wanted <= set(needed)
    missing = _missing(needed, _granted(_without(_documents(), OUR_ROLES[0], "events")))
    assert {"events.k8s.io events create (a call)", "events.k8s.io events patch (a call)"} <= set(missing)


# -- (b) every grant is asked for --------------------------------------------------------------


def test_every_grant_is_asked_for_by_a_code_path() -> None:
    docs = _documents()
    granted = _granted(docs)
    assert set(granted.values()) >= set(OUR_ROLES), "pykueue's ServiceAccount is bound to its roles"
    unused = _unused(_needed(_every_row()), granted)
    assert not unused, "manifests/02-rbac.yaml grants what no code path asks for: " + "; ".join(unused)


def _with_rule(docs: list[dict[str, Any]], role: str, rule: dict[str, Any]) -> list[dict[str, Any]]:
    docs = copy.deepcopy(docs)
    _role(docs, role)["rules"].append(rule)
    return docs


@pytest.mark.parametrize(("role", "rule", "reported"), [
    ("pykueue-leader-election-role", {"apiGroups": [""], "resources": ["secrets"],
                                      "verbs": ["list", "watch"]},
     ["core secrets list in pykueue-system (no code path asks for it)",
      "core secrets watch in pykueue-system (no code path asks for it)"]),
    ("pykueue-leader-election-role", {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                                      "verbs": ["delete"]},
     ["coordination.k8s.io leases delete in pykueue-system (no code path asks for it)"]),
    ("pykueue-manager-role", {"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]},
     ["core pods patch (no code path asks for it)"]),
    # The caBundle targets are asked for by name: a grant on every object is reported.
    ("pykueue-manager-role", {"apiGroups": ["admissionregistration.k8s.io"],
                              "resources": ["mutatingwebhookconfigurations"], "verbs": ["update"]},
     ["admissionregistration.k8s.io mutatingwebhookconfigurations update "
      "(only these objects are asked for: pykueue-mutating-webhook-configuration)"]),
    # Secrets are pykueue's namespace's business: cluster-wide they would be every namespace's.
    ("pykueue-manager-role", {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
     ["core secrets get (asked for only in pykueue-system)"]),
    ("pykueue-auth-delegator", {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"],
                                "verbs": ["get"]},
     ["authentication.k8s.io tokenreviews get (no code path asks for it)"]),
])
def test_an_extra_grant_is_reported(role: str, rule: dict[str, Any], reported: list[str]) -> None:
    """The check names a grant nobody asks for: it can catch the excess it is for."""
    unused = _unused(_needed(_every_row()), _granted(_with_rule(_documents(), role, rule)))
    assert unused == [f"{role}: {r}" for r in reported]


# -- the tables stay honest --------------------------------------------------------------------


def _tables() -> list[tuple[str, tuple[ApiAccess, ...], tuple[str, ...]]]:
    """Each table, the module it belongs to and the sources making its calls."""
    names = {"mutating": ("m",), "validating": ("v",), "crds": ("c",), "api_services": ("a",)}
    controllers = "manager/runtime/controllers"
    # Module names and source paths inside the pykueue package.
    own = [
        ("kube.leader", leader.API_ACCESS, ("kube/leader.py",)),
        ("kube.events", kube_events.API_ACCESS, ("kube/events.py",)),
        ("certs.rotation", rotation.api_access(**names), ("certs/rotation.py",)),
        ("manager.runtime.controllers.manager", manager.API_ACCESS, (f"{controllers}/manager.py",)),
        ("manager.runtime.controllers.jobs", jobs.api_access(()), (f"{controllers}/jobs.py",)),
        ("manager.runtime.controllers.provisioning", provisioning.API_ACCESS,
         (f"{controllers}/provisioning.py",)),
        ("manager.runtime.controllers.multikueue.controller", multikueue.api_access(()),
         (f"{controllers}/multikueue/controller.py", f"{controllers}/multikueue/connections.py")),
        ("manager.runtime.controllers.multikueue.connections", connections.API_ACCESS,
         (f"{controllers}/multikueue/connections.py",)),
        ("manager.runtime.controllers.retention", retention.API_ACCESS, (f"{controllers}/retention.py",)),
        ("manager.runtime.controllers.finalizers", finalizers.API_ACCESS, (f"{controllers}/finalizers.py",)),
        ("manager.runtime.controllers.topology", topology.API_ACCESS, (f"{controllers}/topology.py",)),
        ("manager.runtime.token_review", token_review.API_ACCESS,
         ("manager/runtime/token_review.py", "manager/runtime/visibility/auth.py")),
        ("manager.runtime.visibility.auth", auth.API_ACCESS, ("manager/runtime/visibility/auth.py",)),
        ("manager.runtime.visibility.assembly", assembly.API_ACCESS,
         ("manager/runtime/visibility/assembly.py", "manager/runtime/visibility/auth.py",
          "certs/rotation.py")),
        ("webhook.server", server.API_ACCESS, ("webhook/server.py", "webhook/facts.py", "certs/rotation.py")),
    ]
    out = [(f"pykueue.{module}", rows, tuple(f"pykueue/{path}" for path in sources))
           for module, rows, sources in own]
    for kind in registry.kinds():  # the writes of each kind's lifecycle (JobKind.rbac)
        if not kind.reconciled:
            continue  # a webhook only (a Deployment): its lifecycle writes nothing
        module = type(kind.lifecycle).__module__
        out.append((module, kind.rbac, (module.replace(".", "/") + ".py",)))
    return out


def _defining_tables() -> set[str]:
    """Every module of the manager's process that defines a table at its top level (the
    extender's, under its own ServiceAccount, is checked by ``test_extender_rbac``)."""
    found = set()
    for path in (REPO / "pykueue").rglob("*.py"):
        if path.relative_to(REPO / "pykueue").parts[0] in ("extender", "devcluster"):
            continue
        if re.search(r"^API_ACCESS\b", path.read_text(), re.MULTILINE):
            found.add(".".join(path.relative_to(REPO).with_suffix("").parts))
    return found


def test_every_table_is_gathered_by_pykueue_run() -> None:
    every = set(_every_row())
    modules = _defining_tables()
    assert modules <= {module for module, _, _ in _tables()}, "a table this test does not check"
    for module in modules:
        table = importlib.import_module(module)
        rows = table.API_ACCESS
        assert set(rows) <= every, f"{module}: rows pykueue.run.api_access leaves out"
    for derived in (jobs.api_access(registry.kinds()), multikueue.api_access(registry.kinds()),
                    server.api_access()):
        assert set(derived) <= every


# How each verb shows in a source that makes the call: the shared client's methods and raw
# requests, an informer (list and watch), kubernetes-asyncio's typed calls, and a lifecycle's
# actions (a ``Replace`` is PUT, a ``Delete`` DELETE, by the job reconciler, which PUTs each pod
# an ``adopt`` returns too).
CALL_FORMS = {
    "get": (".get(", "get_or_none(", '"GET"', "read_"),
    "list": (".get(", '"GET"', "Informer("),
    "watch": ("Informer(",),
    "create": (".create(", '"POST"', "create_"),
    "update": (".replace(", '"PUT"', "Replace(", "def adopt("),
    "patch": (".patch(", '"PATCH"'),
    "delete": (".delete(", '"DELETE"', "Delete("),
}


def _named_in(row: ApiAccess, source: str) -> bool:
    """The source names the row's resource: a ``kube.resources`` constant of it, or the
    resource itself in any spelling (``configmaps``, ``config_map``, ``ConfigMap``)."""
    constants = [name for name, ref in vars(res).items()
                 if isinstance(ref, res.ResourceRef) and (ref.group, ref.plural) == (row.group, row.plural)]
    flat = source.lower().replace("_", "")
    return any(re.search(rf"\b{c}\b", source) for c in constants) or row.plural.rstrip("s") in flat


@pytest.mark.parametrize(("module", "rows", "sources"), _tables(), ids=[t[0] for t in _tables()])
def test_each_table_states_calls_its_sources_make(module: str, rows: tuple[ApiAccess, ...],
                                                  sources: tuple[str, ...]) -> None:
    """A cheap staleness check: each row's resource is named, and each of its verbs has a
    call of that kind, in the sources that make its calls (a row saying why it is needed
    without a call is exempt)."""
    source = "\n".join((REPO / path).read_text() for path in sources)
    assert rows, f"{module}: an empty table"
    for row in rows:
        if row.why:
            continue
        assert _named_in(row, source), f"{module}: nothing in {sources} names {row.resource}"
        for verb in row.verbs:
            assert any(form in source for form in CALL_FORMS[verb]), f"{module}: no {verb} call in {sources}"


def test_each_reason_names_the_rule_it_is_for() -> None:
    """A row needed without a call is one of the two things OwnerReferencesPermissionEnforcement
    asks: ``update`` on an owner's finalizers, or ``delete`` on an object whose owners change."""
    for row in _every_row():
        if row.why:
            assert "OwnerReferencesPermissionEnforcement" in row.why, row
            assert (row.subresource, row.verbs) in {("finalizers", ("update",)), ("", ("delete",))}, row


# -- calls made against in-memory API servers ------------------------------------------------


def _attributes(method: str, path: str) -> tuple[str, str, str, str | None]:
    """(group, resource with subresource, verb, object name) of one request, as RBAC sees it."""
    parts = [unquote(p) for p in path.split("?")[0].strip("/").split("/")]
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    plural, name, sub = rest[0], rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else ""
    verbs = {"GET": "get" if name else "list", "POST": "create", "PUT": "update", "PATCH": "patch",
             "DELETE": "delete"}
    return group, f"{plural}/{sub}" if sub else plural, verbs[method], None if method == "POST" else name


def _assert_exactly_declared(made: set[tuple[str, str, str, str | None]], rows: Iterable[ApiAccess]) -> None:
    declared = {(row.group, row.resource, verb): row.names
                for row in rows if not row.why for verb in row.verbs}
    undeclared = sorted(str(m) for m in made
                        if m[:3] not in declared or (declared[m[:3]] and m[3] not in declared[m[:3]]))
    assert not undeclared, f"calls the table does not state: {undeclared}"
    unmade = sorted(str(d) for d in set(declared) - {m[:3] for m in made})
    assert not unmade, f"stated calls never made: {unmade}"


class _LoggedLease(FakeLease):
    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, str]] = []

    async def request(self, method: str, path: str, *, body: Any = None, **kw: Any) -> dict[str, Any]:
        self.log.append((method, path))
        return await super().request(method, path, body=body, **kw)


def test_leader_election_makes_exactly_the_calls_of_its_table() -> None:
    """Acquire (the Lease is created), renew, release: GETs, a POST and PUTs, nothing else."""
    async def go() -> list[tuple[str, str]]:
        api = _LoggedLease()
        elector = leader.LeaderElector(api, namespace=NAMESPACE, identity="me")  # type: ignore[arg-type]
        assert await elector.try_acquire_or_renew()
        assert await elector.try_acquire_or_renew()
        assert await elector.release()
        return api.log

    made = {_attributes(method, path) for method, path in asyncio.run(go())}
    _assert_exactly_declared(made, leader.API_ACCESS)


def test_certificate_rotation_makes_exactly_the_calls_of_its_table(tmp_path: Path) -> None:
    """A first reconcile creates the serving Secret, renews a client Secret in place and
    publishes the caBundle on each named object: GETs, POSTs and PUTs, nothing listed."""
    names = {"mutating": ("hook-m",), "validating": ("hook-v",), "crds": ("crd",), "api_services": ("svc",)}
    api = MemoryApiserver()
    objects = {rotation.MUTATING_PATH: "hook-m", rotation.VALIDATING_PATH: "hook-v", rotation.CRD_PATH: "crd",
               rotation.API_SERVICE_PATH: "svc"}
    bodies = {rotation.MUTATING_PATH: {"webhooks": [{"name": "a", "clientConfig": {}}]},
              rotation.VALIDATING_PATH: {"webhooks": [{"name": "a", "clientConfig": {}}]},
              rotation.CRD_PATH: {"spec": {"conversion": {"strategy": "Webhook", "webhook": {}}}},
              rotation.API_SERVICE_PATH: {"spec": {}}}
    for path, name in objects.items():
        api.put_object(f"{path}/{name}", {"metadata": {"name": name}, **bodies[path]})
    client_secret = {"metadata": {"name": "client"}, "data": {}}
    api.put_object(f"/api/v1/namespaces/{NAMESPACE}/secrets/client", client_secret)
    rotator = rotation.CertRotator(client=api, namespace=NAMESPACE, secret_name="serving",  # type: ignore[arg-type]
                                   dns_names=("svc.ns.svc",), ip_addresses=(), cert_dir=tmp_path,
                                   context=recording_context(api.log), clients={"client": "cn"}, **names)
    asyncio.run(rotator.reconcile())
    made = {_attributes(verb, path) for verb, path in api.log if verb != "load"}
    _assert_exactly_declared(made, rotation.api_access(**names))
