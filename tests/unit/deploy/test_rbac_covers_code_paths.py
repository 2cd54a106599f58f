"""The shipped ClusterRole grants every read (and the event writes) the code makes, derived
from the code itself.

A read the role lacks is a 403 at run time, and in a webhook a 403 used to become a denial:
the pod webhook's ancestor walk GETs a pod's ReplicaSet, the role had no rule for it, and
every Deployment in the cluster stopped creating pods. So the rules wanted here come from the
same tables the code walks and watches, not from a list kept by hand beside the manifest.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kube import events
from kube.resources import ResourceRef
from manager.jobs import integrations, registry
from manager.jobs.lifecycle import ScalesBySlices
from manager.runtime.controllers import manager, provisioning, topology
from manager.runtime.controllers.jobs import resource_of
from manager.runtime.controllers.multikueue import controller as multikueue
from tests.conftest import REPO
from webhook import server

Rule = tuple[str, str, str]  # (apiGroup, resource, verb)


def _granted(leave_out: str = "") -> set[Rule]:
    """What the manager's ClusterRole grants on every object of a resource (rules limited to
    named objects do not count), less the resource ``leave_out``."""
    docs: list[Any] = list(yaml.safe_load_all((REPO / "manifests" / "02-rbac.yaml").read_text()))
    (role,) = (d for d in docs if d and d["kind"] == "ClusterRole"
               and d["metadata"]["name"] == "pykueue-manager-role")
    return {(group, resource, verb) for rule in role["rules"] if not rule.get("resourceNames")
            for group in rule.get("apiGroups", []) for resource in rule.get("resources", [])
            if resource != leave_out for verb in rule.get("verbs", [])}


def _walked() -> set[tuple[str, str]]:
    """(group, plural) of every owner kind the ancestor walk may GET: the kinds Kueue
    integrates (run here or not: an owner of any of them is read to see whether it is Kueue's)
    and the ReplicaSet between a Deployment and its pods."""
    kinds = [*integrations.KNOWN_ELSEWHERE, *(k.integration for k in registry.kinds()),
             integrations.REPLICA_SET]
    return {(i.group, i.plural) for i in kinds}


def _watched() -> set[tuple[str, str]]:
    """(group, plural) of every informer the manager and webhook run, and what MultiKueue lists."""
    refs: list[ResourceRef] = [*manager.CORE_KINDS, *server.FACT_KINDS, *topology.WATCHED, *multikueue.LISTED,
                               *provisioning.WATCHED]
    refs += [resource_of(k.lifecycle) for k in registry.kinds()]
    return {(r.group, r.plural) for r in refs}


def _needed() -> dict[Rule, str]:
    needed: dict[Rule, str] = {}
    for group, plural in _walked():
        needed[(group, plural, "get")] = "the ancestor walk"
    for group, plural in _watched():
        for verb in ("list", "watch"):
            needed[(group, plural, verb)] = "an informer"
    for ref in server.FACT_KINDS:  # the webhook GETs a fact while its informer has not synced
        needed[(ref.group, ref.plural, "get")] = "a webhook fact lookup"
    if any(isinstance(k.lifecycle, ScalesBySlices) for k in registry.kinds()):
        # The elastic-job ungater lists a job's pods, then writes them without their gate.
        needed[("", "pods", "list")] = "the elastic-job ungater"
        needed[("", "pods", "update")] = "the elastic-job ungater"
    for ref, verbs in provisioning.WRITES:  # requests and their pod templates
        for verb in verbs:
            needed[(ref.group, ref.plural, verb)] = "the ProvisioningRequest controller"
    for ref, verbs in events.WRITES:  # the event recorder creates Events and patches their series
        for verb in verbs:
            needed[(ref.group, ref.plural, verb)] = "recording an event"
    return needed


def test_every_read_the_code_makes_is_granted() -> None:
    granted = _granted()
    missing = sorted(f"{rule[0] or 'core'} {rule[1]} {rule[2]} ({why})"
                     for rule, why in _needed().items() if rule not in granted)
    assert not missing, "manifests/02-rbac.yaml lacks: " + "; ".join(missing)


@pytest.mark.parametrize("resource", [("apps", "replicasets"), ("apps", "deployments")])
def test_the_walk_from_a_deployment_pod_is_covered(resource: tuple[str, str]) -> None:
    """The derivation itself reaches the Deployment chain (it would otherwise prove nothing)."""
    assert resource in _walked()
    assert (*resource, "get") in _granted()


def test_a_rule_missing_from_the_role_is_reported() -> None:
    """The check fails for a role without the ReplicaSet rule: it can catch the bug it is for."""
    assert ("apps", "replicasets", "get") in set(_needed()) - _granted(leave_out="replicasets")


def test_the_event_writes_are_derived_and_a_role_without_them_is_reported() -> None:
    """The recorder posts events.k8s.io Events and patches their series: both are needed,
    and a role lacking the events rule fails the check."""
    needed = set(_needed())
    assert {("events.k8s.io", "events", "create"), ("events.k8s.io", "events", "patch")} <= needed
    missing = needed - _granted(leave_out="events")
    assert {("events.k8s.io", "events", "create"), ("events.k8s.io", "events", "patch")} <= missing
