"""What the three KubeRay kinds share: a Ray cluster's spec as pod sets, started and restored,
and its admission rules (Kueue's ``raycluster/common.go``).

A RayCluster, the cluster a RayJob makes (``spec.rayClusterSpec``) and the one a RayService
runs (``spec.rayClusterConfig``) are the same spec, so one set of rules serves the three:

* pod sets: ``head`` (one pod; with the in-tree autoscaler its sidecar is added to the template
  with its own requests, by default 500m CPU and 512Mi; with GCS fault tolerance the Ray
  container's requests are raised to at least 200m CPU and 256Mi for the Redis clean-up Job
  KubeRay runs at deletion), then one per worker group named after ``groupName`` with
  ``replicas`` (1 when unset) times ``numOfHosts`` pods;
* start merges each pod set's info into its group's template (head first, then the workers
  in order) and restore puts back what the Workload recorded, skipped when the number of pod
  sets no longer matches;
* validation: the head group's name is reserved, at most 18 pod sets, the in-tree autoscaler
  only for an elastic job (workload slices), and the topology annotations of every group.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import forbidden, invalid, too_many_items
from pykueue.api.fields import FieldError
from pykueue.api.quantity import QuantityError, parse_quantity
from pykueue.api.wire import JSON
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.job_fields import get_path, int_or, str_map
from pykueue.manager.jobs.lifecycle import (
    PodSetInfo,
    StartConflict,
    merge_into_template,
    restored_template,
)
from pykueue.manager.jobs.tas_annotations import (
    podset_group_errors,
    slice_size_upper_bound_errors,
    tas_podset_errors,
)
from pykueue.manager.jobs.validation import elastic_enabled

HEAD = "head"
GROUP = "ray.io"
# spec.managedBy of an object KubeRay runs itself.
KUBERAY_CONTROLLER = "ray.io/kuberay-operator"
# The label KubeRay puts on every pod of a cluster, naming it.
CLUSTER_LABEL = "ray.io/cluster"
FT_ENABLED_ANNOTATION = "ray.io/ft-enabled"
# Kueue's record, on an elastic RayJob or RayService, of the generation of the cluster its
# current slice was sized from (pykueue reads it for the slice's name, but does not write it).
RAYCLUSTER_GENERATION = "kueue.x-k8s.io/raycluster-generation"
# Kueue's jobframework.MaxPodSets.
MAX_POD_SETS = 18
AUTOSCALER_CONTAINER = "autoscaler"
_AUTOSCALER_RESOURCES = {
    "requests": {"cpu": "500m", "memory": "512Mi"},
    "limits": {"cpu": "500m", "memory": "512Mi"},
}
_REDIS_CLEANUP_REQUESTS = {"cpu": "200m", "memory": "256Mi"}


def slice_name_extra(meta: Mapping[str, Any]) -> str:
    """Kueue's GetWorkloadNameExtraPart of an elastic RayJob or RayService: its generation, and
    the generation of the cluster its slice was sized from when the annotation records it."""
    extra = str(meta.get("generation") or 0)
    cluster_generation = (meta.get("annotations") or {}).get(RAYCLUSTER_GENERATION)
    return f"{extra}_{cluster_generation}" if cluster_generation else extra


def worker_groups(cluster_spec: Mapping[str, Any]) -> list[JSON]:
    """``workerGroupSpecs``, skipping malformed entries."""
    return [g for g in cluster_spec.get("workerGroupSpecs") or () if isinstance(g, dict)]


def worker_count(group: Mapping[str, Any]) -> int:
    """Kueue's effectiveWorkerCount: ``replicas`` (1 when unset) times ``numOfHosts`` when above 1."""
    count = int_or(group.get("replicas"), 1)
    hosts = int_or(group.get("numOfHosts"), 1)
    return count * hosts if hosts > 1 else count


def podset_names(cluster_spec: Mapping[str, Any]) -> list[str]:
    return [HEAD, *(str(g.get("groupName") or "") for g in worker_groups(cluster_spec))]


def expected_podsets(cluster_spec: Mapping[str, Any]) -> int:
    return len(worker_groups(cluster_spec)) + 1


def autoscaling(cluster_spec: Mapping[str, Any]) -> bool:
    return cluster_spec.get("enableInTreeAutoscaling") is True


def gcs_fault_tolerance(cluster_spec: Mapping[str, Any], annotations: Mapping[str, str]) -> bool:
    """KubeRay's IsGCSFaultToleranceEnabled."""
    return (
        annotations.get(FT_ENABLED_ANNOTATION, "").lower() == "true"
        or cluster_spec.get("gcsFaultToleranceOptions") is not None
    )


def _keep_max(requests: Mapping[str, Any], floor: Mapping[str, str]) -> dict[str, Any]:
    """Kueue's MergeResourceListKeepMax: each resource at the larger of the two."""
    out = dict(requests)
    for name, value in floor.items():
        try:
            if name not in out or parse_quantity(out[name]) < parse_quantity(value):
                out[name] = value
        except QuantityError:
            out[name] = value
    return out


def _head_template(cluster_spec: Mapping[str, Any], annotations: Mapping[str, str]) -> JSON:
    template: JSON = copy.deepcopy(get_path(cluster_spec, "headGroupSpec", "template") or {})
    containers = template.setdefault("spec", {}).setdefault("containers", [])
    if gcs_fault_tolerance(cluster_spec, annotations):
        if not containers:
            raise ValueError(
                "cannot account for Redis cleanup resources: head pod template must include the Ray container"
            )
        resources = containers[0].setdefault("resources", {})
        resources["requests"] = _keep_max(resources.get("requests") or {}, _REDIS_CLEANUP_REQUESTS)
    if autoscaling(cluster_spec):
        options = cluster_spec.get("autoscalerOptions") or {}
        resources = options.get("resources")
        containers.append(
            {
                "name": AUTOSCALER_CONTAINER,
                "resources": copy.deepcopy(resources if resources is not None else _AUTOSCALER_RESOURCES),
            }
        )
    return template


def build_podsets(cluster_spec: Mapping[str, Any], annotations: Mapping[str, str]) -> list[JSON]:
    """Kueue's BuildPodSets: the head, then one pod set per worker group."""
    podsets: list[JSON] = [{"name": HEAD, "count": 1, "template": _head_template(cluster_spec, annotations)}]
    for group in worker_groups(cluster_spec):
        podsets.append(
            {
                "name": str(group.get("groupName") or ""),
                "count": worker_count(group),
                "template": copy.deepcopy(group.get("template") or {}),
            }
        )
    return podsets


def _group_templates(cluster_spec: JSON) -> list[JSON]:
    """The head's template, then each worker group's, created when absent (edited in place)."""
    head = cluster_spec.setdefault("headGroupSpec", {})
    out = [head.setdefault("template", {})]
    out += [g.setdefault("template", {}) for g in worker_groups(cluster_spec)]
    return out


def start_cluster(cluster_spec: JSON, infos: list[PodSetInfo]) -> None:
    """Kueue's UpdateRayClusterSpecToRunWithPodSetsInfo: the infos of the cluster's pod sets
    (in pod set order, the head first) merged into the group templates, in place; a count
    that does not match is a :class:`StartConflict`."""
    expected = expected_podsets(cluster_spec)
    if len(infos) != expected:
        raise StartConflict(f"expecting {expected} podset infos, got {len(infos)}")
    holders = [cluster_spec["headGroupSpec"], *worker_groups(cluster_spec)]
    for holder, info in zip(holders, infos, strict=False):
        holder["template"] = merge_into_template(holder.get("template") or {}, info)


def restore_cluster(cluster_spec: JSON, originals: list[JSON]) -> bool:
    """Kueue's RestorePodSetsInfo: each group's template (the head first) back as the Workload
    recorded it, by position (``originals``: the templates of the Workload's pod sets of the
    cluster, in order). Whether anything changed."""
    changed = False
    holders = [cluster_spec.setdefault("headGroupSpec", {}), *worker_groups(cluster_spec)]
    for holder, original in zip(holders, originals, strict=False):
        template = restored_template(holder.get("template") or {}, original)
        if template is not None:
            holder["template"] = template
            changed = True
    return changed


def workload_templates(workload: Mapping[str, Any]) -> list[JSON]:
    """The templates of a Workload's pod sets, in order."""
    return [
        copy.deepcopy(dict(ps.get("template") or {}))
        for ps in (workload.get("spec") or {}).get("podSets") or ()
    ]


# -- admission ----------------------------------------------------------------------------------


def cluster_spec_errors(
    obj: Mapping[str, Any], cluster_spec: Mapping[str, Any], base: str, ctx: AdmissionContext
) -> list[FieldError]:
    """Kueue's ValidateCreate of a Ray cluster spec at path ``base`` (RayJob, RayService)."""
    errors: list[FieldError] = []
    if autoscaling(cluster_spec) and not elastic_enabled(obj, ctx):
        errors.append(
            invalid(
                f"{base}.enableInTreeAutoscaling",
                True,
                "a kueue managed job should only use autoscaling when workload slicing is enabled",
            )
        )
    errors += podset_limit_errors(cluster_spec, base)
    return errors


def podset_limit_errors(cluster_spec: Mapping[str, Any], base: str) -> list[FieldError]:
    """At most 18 pod sets, and no worker group named like the head's pod set."""
    errors: list[FieldError] = []
    count = expected_podsets(cluster_spec)
    if count > MAX_POD_SETS:
        errors.append(too_many_items(f"{base}.workerGroupSpecs", count, MAX_POD_SETS))
    for i, group in enumerate(worker_groups(cluster_spec)):
        if group.get("groupName") == HEAD:
            errors.append(
                forbidden(
                    f"{base}.workerGroupSpecs[{i}].groupName", f'"{HEAD}" is reserved for the head group'
                )
            )
    return errors


def _meta(template: Any) -> Mapping[str, Any]:
    meta = get_path(template, "metadata") if isinstance(template, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


def topology_errors(
    cluster_spec: Mapping[str, Any],
    base: str,
    ctx: AdmissionContext,
    *,
    head_bound_after_groups: bool = False,
) -> list[FieldError]:
    """Kueue's topology validation of a Ray cluster spec at ``base``: each group's topology
    annotations, the slice sizes against each pod set's count and the pod set groups. The
    head's slice size comes before the groups' rules (RayJob, RayService) or after them
    (RayCluster's own webhook)."""
    if not ctx.gate("TopologyAwareScheduling"):
        return []
    head_path = f"{base}.headGroupSpec.template.metadata"
    head_meta = _meta(get_path(cluster_spec, "headGroupSpec", "template"))
    head_ann = str_map(head_meta.get("annotations"))
    errors = tas_podset_errors(head_meta, head_path, ctx)
    head_bound = slice_size_upper_bound_errors(head_ann, head_path, 1)
    members = [(head_path, head_ann, 1)]
    workers: list[FieldError] = []
    for i, group in enumerate(worker_groups(cluster_spec)):
        path = f"{base}.workerGroupSpecs[{i}].template.metadata"
        meta = _meta(group.get("template"))
        workers += tas_podset_errors(meta, path, ctx, worker_count(group))
        members.append((path, str_map(meta.get("annotations")), worker_count(group)))
    groups = podset_group_errors(members)
    if head_bound_after_groups:
        return errors + groups + head_bound + workers
    return errors + head_bound + groups + workers


def gate_templates(cluster_spec: JSON) -> None:
    """Kueue's elastic-job defaulting: every group's pods are created behind the
    ``kueue.x-k8s.io/elastic-job`` scheduling gate."""
    for template in _group_templates(cluster_spec):
        spec = template.setdefault("spec", {})
        gates = spec.setdefault("schedulingGates", [])
        if not any(g.get("name") == keys.ELASTIC_JOB_GATE for g in gates if isinstance(g, Mapping)):
            gates.append({"name": keys.ELASTIC_JOB_GATE})


def ungated_template_errors(cluster_spec: Mapping[str, Any], base: str) -> list[FieldError]:
    """Kueue's validateElasticJob: every group's template carries the elastic-job gate
    (the workers first, then the head)."""

    def has_gate(template: Any) -> bool:
        gates = get_path(template, "spec", "schedulingGates") if isinstance(template, Mapping) else None
        return any(isinstance(g, Mapping) and g.get("name") == keys.ELASTIC_JOB_GATE for g in gates or ())

    detail = "an elastic job must have the ElasticJobSchedulingGate"
    errors = []
    for i, group in enumerate(worker_groups(cluster_spec)):
        if not has_gate(group.get("template")):
            path = f"{base}.workerGroupSpecs[{i}].template.spec.schedulingGates"
            errors.append(invalid(path, get_path(group, "template", "spec", "schedulingGates"), detail))
    head_template = get_path(cluster_spec, "headGroupSpec", "template")
    if not has_gate(head_template):
        errors.append(
            invalid(
                f"{base}.headGroupSpec.template.spec.schedulingGates",
                get_path(cluster_spec, "headGroupSpec", "template", "spec", "schedulingGates"),
                detail,
            )
        )
    return errors
