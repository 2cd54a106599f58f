"""The ProvisioningRequests and PodTemplates a Workload's check asks for, as Kueue v0.19.2
builds them: one request per attempt, owned by the Workload; a pod template per pod set that
uses a managed resource (pod sets merged by ``podSetMergePolicy``), carrying the template
with the admitted flavors' node labels and tolerations and limits standing in for missing
requests."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON

from ..lifecycle import PodSetInfo, merge_into_template
from .config import CheckConfig
from .names import attempt_of, pod_template_name, request_name

REQUEST_API_VERSION = "autoscaling.x-k8s.io/v1"
# Workload annotations with this prefix become request parameters (minus the prefix).
PARAMETER_ANNOTATION_PREFIX = "provreq.kueue.x-k8s.io/"


class InconsistentAssignments(ValueError):
    """The Workload's admission lacks a pod set that its spec has."""


@dataclass(frozen=True)
class MergedPodSet:
    name: str
    podset: Mapping[str, Any]
    assignment: Mapping[str, Any]
    count: int


def _podsets(workload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((workload.get("spec") or {}).get("podSets") or ())


def _assignments(workload: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    admission = (workload.get("status") or {}).get("admission") or {}
    return {str(a.get("name") or "main"): a for a in admission.get("podSetAssignments") or ()}


def _uses(podset: Mapping[str, Any], resources: frozenset[str]) -> bool:
    spec = (podset.get("template") or {}).get("spec") or {}
    for container in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ())):
        res = container.get("resources") or {}
        if resources & {*(res.get("requests") or {}), *(res.get("limits") or {})}:
            return True
    return False


def _required(podset: Mapping[str, Any], config: CheckConfig) -> bool:
    managed = config.managed_resources
    return int(podset.get("count", 1)) > 0 and (not managed or _uses(podset, managed))


def _assigned_count(podset: Mapping[str, Any], assignment: Mapping[str, Any]) -> int:
    count = assignment.get("count")
    return int(count if count is not None else podset.get("count", 1))


def request_needed(workload: Mapping[str, Any], config: CheckConfig) -> bool:
    """Some pod set that uses a managed resource (any, when none are listed) runs pods."""
    assignments = _assignments(workload)
    for podset in _podsets(workload):
        if not _required(podset, config):
            continue
        assignment = assignments.get(str(podset.get("name") or "main"))
        if assignment is None:
            raise InconsistentAssignments(f"missing assignment for PodSet {podset.get('name')!r}")
        if _assigned_count(podset, assignment) > 0:
            return True
    return False


def merged_podsets(workload: Mapping[str, Any], config: CheckConfig) -> list[MergedPodSet]:
    assignments = _assignments(workload)
    merged: list[MergedPodSet] = []
    for podset in _podsets(workload):
        if not _required(podset, config):
            continue
        name = str(podset.get("name") or "main")
        assignment = assignments.get(name)
        if assignment is None:
            raise InconsistentAssignments("inconsistent podSet assignments")
        count = _assigned_count(podset, assignment)
        if count <= 0:
            continue
        for i, other in enumerate(merged):
            if config.merge_policy is not None and _can_merge(other.podset, podset, config.merge_policy):
                merged[i] = MergedPodSet(other.name, other.podset, other.assignment, other.count + count)
                break
        else:
            merged.append(MergedPodSet(name, podset, assignment, count))
    return merged


def _can_merge(a: Mapping[str, Any], b: Mapping[str, Any], policy: str) -> bool:
    if policy == "IdenticalPodTemplates":
        return a.get("template") == b.get("template")
    if policy == "IdenticalWorkloadSchedulingRequirements":
        sa, sb = ((p.get("template") or {}).get("spec") or {} for p in (a, b))
        return (_requests(sa.get("containers")) == _requests(sb.get("containers"))
                and _requests(sa.get("initContainers")) == _requests(sb.get("initContainers"))
                and all(sa.get(k) == sb.get(k) for k in
                        ("resources", "nodeSelector", "tolerations", "affinity", "resourceClaims")))
    return False


def _requests(containers: Iterable[Mapping[str, Any]] | None) -> list[Any]:
    return [(c.get("resources") or {}).get("requests") for c in containers or ()]


def pod_template(workload: Mapping[str, Any], merged: MergedPodSet, name: str,
                 flavors: Mapping[str, Mapping[str, Any]]) -> JSON:
    """The PodTemplate of a merged pod set, owned by the Workload until its request exists."""
    node_selector: dict[str, str] = {}
    tolerations: list[JSON] = []
    for flavor in dict.fromkeys(str(f) for f in (merged.assignment.get("flavors") or {}).values()):
        spec = (flavors.get(flavor) or {}).get("spec") or {}
        node_selector.update({str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()})
        tolerations.extend(dict(t) for t in spec.get("tolerations") or () if t not in tolerations)
    template = merge_into_template(merged.podset.get("template") or {},
                                   PodSetInfo(merged.name, merged.count, node_selector=node_selector,
                                              tolerations=tuple(tolerations)))
    for container in (*(template.get("spec", {}).get("initContainers") or ()),
                      *(template.get("spec", {}).get("containers") or ())):
        resources = container.setdefault("resources", {})
        limits = resources.get("limits") or {}
        if limits:
            resources["requests"] = {**limits, **(resources.get("requests") or {})}
    meta = workload.get("metadata") or {}
    return {"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": name, "namespace": meta.get("namespace"),
                         "labels": {keys.MANAGED: "true"},
                         "ownerReferences": [controller_reference(workload)]},
            "template": template}


def provisioning_request(workload: Mapping[str, Any], check: str, attempt: int, config: CheckConfig,
                         templates: Iterable[tuple[str, int]]) -> JSON:
    """The request of one attempt; ``templates`` are (pod template name, pod count)."""
    meta = workload.get("metadata") or {}
    parameters = dict(config.parameters)
    for key, value in (meta.get("annotations") or {}).items():
        if str(key).startswith(PARAMETER_ANNOTATION_PREFIX):
            parameters[str(key)[len(PARAMETER_ANNOTATION_PREFIX):]] = str(value)
    return {"apiVersion": REQUEST_API_VERSION, "kind": "ProvisioningRequest",
            "metadata": {"name": request_name(str(meta.get("name")), check, attempt),
                         "namespace": meta.get("namespace"),
                         "labels": {keys.MANAGED: "true"},
                         "ownerReferences": [controller_reference(workload)]},
            "spec": {"provisioningClassName": config.class_name, "parameters": parameters,
                     "podSets": [{"podTemplateRef": {"name": t}, "count": n} for t, n in templates]}}


def template_names(request: str, merged: Iterable[MergedPodSet]) -> list[tuple[str, MergedPodSet]]:
    return [(pod_template_name(request, m.name), m) for m in merged]


def controller_reference(owner: Mapping[str, Any]) -> JSON:
    meta = owner.get("metadata") or {}
    return {"apiVersion": str(owner.get("apiVersion") or ""), "kind": str(owner.get("kind") or ""),
            "name": str(meta.get("name")), "uid": str(meta.get("uid")),
            "controller": True, "blockOwnerDeletion": True}


def controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    uid = (owner.get("metadata") or {}).get("uid")
    return any(r.get("controller") and r.get("uid") == uid
               for r in (obj.get("metadata") or {}).get("ownerReferences") or ())


def hand_over(template: Mapping[str, Any], workload: Mapping[str, Any],
              request: Mapping[str, Any]) -> JSON | None:
    """The template owned by its request instead of the Workload (Kueue hands it over once the
    request exists, so deleting the request deletes it); None when nothing is to change."""
    if controlled_by(template, request) and not controlled_by(template, workload):
        return None
    out = copy.deepcopy(dict(template))
    wl_uid = (workload.get("metadata") or {}).get("uid")
    refs = [r for r in (out.get("metadata") or {}).get("ownerReferences") or ()
            if not (r.get("controller") and r.get("uid") == wl_uid)]
    if not controlled_by(out, request):
        refs = [r for r in refs if not r.get("controller")] + [controller_reference(request)]
    out.setdefault("metadata", {})["ownerReferences"] = refs
    return out


def synced_with_config(request: Mapping[str, Any], config: CheckConfig) -> bool:
    """The request has the config's class and every one of its parameters."""
    spec = request.get("spec") or {}
    params = spec.get("parameters") or {}
    return spec.get("provisioningClassName") == config.class_name and \
        all(str(params.get(k)) == v and k in params for k, v in config.parameters.items())


def current_request(workload: Mapping[str, Any], check: str, config: CheckConfig,
                    owned: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The request of the latest attempt for this check that still matches its config (None
    when the Workload needs none, or none matches)."""
    if not request_needed(workload, config):
        return None
    name = str((workload.get("metadata") or {}).get("name"))
    best: tuple[int, Mapping[str, Any]] | None = None
    for req in owned:
        attempt = attempt_of(str((req.get("metadata") or {}).get("name")), name, check)
        if attempt is not None and synced_with_config(req, config) and (best is None or attempt > best[0]):
            best = (attempt, req)
    return None if best is None else best[1]
