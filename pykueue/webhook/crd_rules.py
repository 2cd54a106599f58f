"""Admission rules of pykueue's own kinds (pure): what Kueue's CRD webhooks check beyond the schema.

ClusterQueue, Cohort, ResourceFlavor and Workload are checked here the way Kueue's
``pkg/webhooks`` does (LocalQueue has no webhook in Kueue: its rules are schema/CEL, and the
few that matter are repeated here so a request rejected by CEL gets the same answer from
us). Everything works on the raw JSON the apiserver sends, so unknown or partial fields
never crash a check, and returns :class:`FieldError`s with Kubernetes field paths.
Defaulting is limited to what Kueue's mutating webhooks do (finalizers, minCount).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import (
    duplicate,
    forbidden,
    invalid,
    not_found,
    not_supported,
    required,
    too_many,
)
from pykueue.api.fields import FieldError
from pykueue.api.quantity import Quantity, QuantityError
from pykueue.api.reservation import admission_changed
from pykueue.api.wire import JSON
from pykueue.manager.jobs.names import (
    annotation_path,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    label_key_problems,
)
from pykueue.manager.jobs.validation import admission_gated_by_errors

MAX_FLAVORS, MAX_RESOURCES, MAX_PAIRS_PER_GROUP = 256, 256, 512


def _d(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _qty(value: Any, path: str, errors: list[FieldError]) -> Quantity | None:
    if value is None:
        return None
    try:
        return Quantity.parse(value)
    except (QuantityError, ValueError, TypeError):
        errors.append(invalid(path, value, "quantities must match the regular expression"))
        return None


def _non_negative(q: Quantity | None, raw: Any, path: str, errors: list[FieldError]) -> None:
    if q is not None and q.sign() < 0:
        errors.append(invalid(path, raw, "must be greater than or equal to 0"))


# -- label selectors ------------------------------------------------------------------------


def selector_errors(selector: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    sel = _d(selector)
    for key, value in _d(sel.get("matchLabels")).items():
        for problem in label_key_problems(str(key)):
            errors.append(invalid(f"{path}.matchLabels", key, problem))
        if not is_label_value(str(value)):
            errors.append(
                invalid(
                    f"{path}.matchLabels",
                    value,
                    "a valid label must be an empty string or "
                    "consist of alphanumeric characters, '-', '_' or '.'",
                )
            )
    for i, expr in enumerate(_l(sel.get("matchExpressions"))):
        e, p = _d(expr), f"{path}.matchExpressions[{i}]"
        op, values = e.get("operator"), _l(e.get("values"))
        if op in ("In", "NotIn") and not values:
            errors.append(required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist") and values:
            errors.append(
                forbidden(f"{p}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
            )
        elif op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            errors.append(
                not_supported(f"{p}.operator",
                    op,
                    'supported values: "In", "NotIn", "Exists", "DoesNotExist"',
                )
            )
        for problem in label_key_problems(str(e.get("key", ""))):
            errors.append(invalid(f"{p}.key", e.get("key"), problem))
    return errors


# -- resource groups (ClusterQueue and Cohort) ---------------------------------------------


def resource_groups_errors(
    spec: JSON, *, parent_field: str, bound_lending_by_nominal: bool
) -> list[FieldError]:
    errors: list[FieldError] = []
    has_parent = bool(spec.get(parent_field))
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    total_flavors = total_resources = 0
    for g, group in enumerate(_l(spec.get("resourceGroups"))):
        gp = f"spec.resourceGroups[{g}]"
        covered = [str(c) for c in _l(_d(group).get("coveredResources"))]
        total_resources += len(covered)
        for c, name in enumerate(covered):
            for problem in label_key_problems(name):
                errors.append(invalid(f"{gp}.coveredResources[{c}]", name, problem))
            if name in seen_resources:
                errors.append(duplicate(f"{gp}.coveredResources[{c}]", name))
            seen_resources.add(name)
        flavors = _l(_d(group).get("flavors"))
        total_flavors += len(flavors)
        if len(flavors) * len(covered) > MAX_PAIRS_PER_GROUP:
            errors.append(
                invalid(
                    gp,
                    len(flavors) * len(covered),
                    f"must have at most {MAX_PAIRS_PER_GROUP} flavor-resource combinations",
                )
            )
        for f, flavor in enumerate(flavors):
            fp = f"{gp}.flavors[{f}]"
            fname = str(_d(flavor).get("name", ""))
            if fname in seen_flavors:
                errors.append(duplicate(f"{fp}.name", fname))
            seen_flavors.add(fname)
            resources = _l(_d(flavor).get("resources"))
            if len(resources) != len(covered):
                errors.append(
                    invalid(
                        f"{fp}.resources",
                        len(resources),
                        "must have the same number of resources as the coveredResources",
                    )
                )
            for r, res in enumerate(resources):
                rp, rd = f"{fp}.resources[{r}]", _d(res)
                if r < len(covered) and rd.get("name") != covered[r]:
                    errors.append(
                        invalid(
                            f"{rp}.name",
                            rd.get("name"),
                            f"must match the name in coveredResources[{r}]: {covered[r]!r}",
                        )
                    )
                nominal = _qty(rd.get("nominalQuota"), f"{rp}.nominalQuota", errors)
                _non_negative(nominal, rd.get("nominalQuota"), f"{rp}.nominalQuota", errors)
                for limit in ("borrowingLimit", "lendingLimit"):
                    raw = rd.get(limit)
                    if raw is None:
                        continue
                    q = _qty(raw, f"{rp}.{limit}", errors)
                    _non_negative(q, raw, f"{rp}.{limit}", errors)
                    noun = "cohort" if parent_field == "cohortName" else "parent"
                    if not has_parent:
                        errors.append(invalid(f"{rp}.{limit}", raw, f"must be nil when {noun} is empty"))
                    elif (
                        limit == "lendingLimit"
                        and bound_lending_by_nominal
                        and q is not None
                        and nominal is not None
                        and nominal < q
                    ):
                        errors.append(
                            invalid(f"{rp}.{limit}", raw, "must be less than or equal to the nominalQuota")
                        )
    if total_flavors > MAX_FLAVORS:
        errors.append(
            invalid("spec.resourceGroups", total_flavors, f"must have at most {MAX_FLAVORS} flavors")
        )
    if total_resources > MAX_RESOURCES:
        errors.append(
            invalid(
                "spec.resourceGroups", total_resources, f"must have at most {MAX_RESOURCES} covered resources"
            )
        )
    return errors


def fair_sharing_errors(spec: JSON) -> list[FieldError]:
    raw = _d(spec.get("fairSharing")).get("weight")
    if raw is None:
        return []
    errors: list[FieldError] = []
    q = _qty(raw, "spec.fairSharing.weight", errors)
    if q is not None and q.sign() < 0:
        errors.append(invalid("spec.fairSharing.weight", raw, "must be greater than or equal to 0"))
    elif q is not None and 0 < q.nano <= 1:
        errors.append(invalid("spec.fairSharing.weight", raw, "must be 0 or greater than 1n"))
    return errors


# -- per kind -------------------------------------------------------------------------------


def stop_policy_errors(spec: JSON) -> list[FieldError]:
    """The stopPolicy enum: ClusterQueue and LocalQueue share Kueue's one StopPolicy type."""
    if spec.get("stopPolicy") in (None, "None", "Hold", "HoldAndDrain"):
        return []
    return [
        not_supported("spec.stopPolicy",
            spec.get("stopPolicy"),
            'supported values: "None", "Hold", "HoldAndDrain"',
        )
    ]


def validate_cluster_queue(obj: JSON, old: JSON | None) -> list[FieldError]:
    spec = _d(obj.get("spec"))
    errors = resource_groups_errors(spec, parent_field="cohortName", bound_lending_by_nominal=True)
    if spec.get("cohortName") and not is_dns1123_subdomain(str(spec["cohortName"])):
        errors.append(invalid("spec.cohortName", spec["cohortName"], "must be a DNS-1123 subdomain"))
    if spec.get("namespaceSelector") is not None:
        errors += selector_errors(spec["namespaceSelector"], "spec.namespaceSelector")
    preemption = _d(spec.get("preemption"))
    reclaim = preemption.get("reclaimWithinCohort")
    borrow = _d(preemption.get("borrowWithinCohort")).get("policy")
    if reclaim == "Never" and borrow not in (None, "Never"):
        errors.append(
            invalid(
                "spec.preemption",
                preemption,
                "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
            )
        )
    fungibility = _d(spec.get("flavorFungibility"))
    if fungibility.get("preference") is not None and not (
        fungibility.get("whenCanBorrow") == "TryNextFlavor"
        and fungibility.get("whenCanPreempt") == "TryNextFlavor"
    ):
        errors.append(
            invalid(
                "spec.flavorFungibility.preference",
                fungibility.get("preference"),
                f"preference {json.dumps(fungibility.get('preference'))} requires both whenCanBorrow and "
                "whenCanPreempt to be TryNextFlavor",
            )
        )
    errors += fair_sharing_errors(spec)
    flavors = {
        str(_d(f).get("name")) for g in _l(spec.get("resourceGroups")) for f in _l(_d(g).get("flavors"))
    }
    strategy = _d(spec.get("admissionChecksStrategy"))
    for i, check in enumerate(_l(strategy.get("admissionChecks"))):
        for j, flavor in enumerate(_l(_d(check).get("onFlavors"))):
            if flavor not in flavors:
                errors.append(
                    not_supported(f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]",
                        flavor,
                        "must be one of the ClusterQueue's flavors",
                    )
                )
    errors += stop_policy_errors(spec)
    return errors


def validate_cohort(obj: JSON, old: JSON | None) -> list[FieldError]:
    spec = _d(obj.get("spec"))
    errors = resource_groups_errors(spec, parent_field="parentName", bound_lending_by_nominal=False)
    return errors + fair_sharing_errors(spec)


_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def validate_resource_flavor(obj: JSON, old: JSON | None) -> list[FieldError]:
    spec = _d(obj.get("spec"))
    errors: list[FieldError] = []
    node_labels = _d(spec.get("nodeLabels"))
    for key, value in node_labels.items():
        path = f"spec.nodeLabels[{key}]"
        for problem in label_key_problems(str(key)):
            errors.append(invalid("spec.nodeLabels", key, problem))
        if not is_label_value(str(value)):
            errors.append(
                invalid(
                    path,
                    value,
                    "a valid label must be an empty string or consist of "
                    "alphanumeric characters, '-', '_' or '.'",
                )
            )
    seen: set[tuple[str, str]] = set()
    taints = _l(spec.get("nodeTaints"))
    for i, taint in enumerate(taints):
        t, p = _d(taint), f"spec.nodeTaints[{i}]"
        key, effect = str(t.get("key", "")), str(t.get("effect", ""))
        for problem in label_key_problems(key):
            errors.append(invalid(f"{p}.key", key, problem))
        if t.get("value") is not None and not is_label_value(str(t["value"])):
            errors.append(invalid(f"{p}.value", t["value"], "must be a valid label value"))
        if effect not in _EFFECTS:
            errors.append(
                not_supported(f"{p}.effect",
                    effect,
                    'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
                )
            )
        if (key, effect) in seen:
            errors.append(duplicate(p, {"key": key, "effect": effect}))
        seen.add((key, effect))
    tolerations = _l(spec.get("tolerations"))
    for i, tol in enumerate(tolerations):
        t, p = _d(tol), f"spec.tolerations[{i}]"
        key, op = str(t.get("key", "")), t.get("operator", "Equal")
        if key:
            for problem in label_key_problems(key):
                errors.append(invalid(f"{p}.key", key, problem))
        elif op != "Exists":
            errors.append(invalid(f"{p}.operator", op, "operator must be Exists when key is empty"))
        if op not in ("Equal", "Exists"):
            errors.append(
                not_supported(f"{p}.operator", op, 'supported values: "Equal", "Exists"')
            )
        elif op == "Exists" and t.get("value"):
            errors.append(
                invalid(f"{p}.value", t.get("value"), "value must be empty when operator is Exists")
            )
        if t.get("tolerationSeconds") is not None and t.get("effect") != "NoExecute":
            errors.append(
                invalid(
                    f"{p}.effect", t.get("effect"), "effect must be NoExecute when tolerationSeconds is set"
                )
            )
    for what, items in (("nodeTaints", taints), ("tolerations", tolerations)):
        if len(items) > 8:
            errors.append(too_many(f"spec.{what}", "must have at most 8 items"))
    if spec.get("topologyName") and not node_labels:
        errors.append(
            required("spec.nodeLabels", "at least one nodeLabel is required when topologyName is set")
        )
    old_topology = _d(_d(old).get("spec")).get("topologyName") if old else None
    if old_topology and spec.get("topologyName") != old_topology:
        errors.append(invalid("spec.topologyName", spec.get("topologyName"), "field is immutable"))
    return errors


def validate_local_queue(obj: JSON, old: JSON | None) -> list[FieldError]:
    spec = _d(obj.get("spec"))
    errors: list[FieldError] = []
    cq = spec.get("clusterQueue")
    if not isinstance(cq, str) or not is_dns1123_subdomain(cq):
        errors.append(invalid("spec.clusterQueue", cq, "must be a DNS-1123 subdomain"))
    if old is not None and _d(old.get("spec")).get("clusterQueue") != cq:
        errors.append(invalid("spec.clusterQueue", cq, "field is immutable"))
    errors += stop_policy_errors(spec)
    return errors


def _condition_true(obj: JSON, kind: str) -> bool:
    return any(
        _d(c).get("type") == kind and _d(c).get("status") == "True"
        for c in _l(_d(obj.get("status")).get("conditions"))
    )


def _podset_errors(spec: JSON, annotations: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    podsets = _l(spec.get("podSets"))
    if not 1 <= len(podsets) <= 18:
        errors.append(invalid("spec.podSets", len(podsets), "must have between 1 and 18 podSets"))
    names: set[str] = set()
    with_min = 0
    for i, ps in enumerate(podsets):
        p, d = f"spec.podSets[{i}]", _d(ps)
        name = str(d.get("name", "main"))
        if not is_dns1123_label(name):
            errors.append(invalid(f"{p}.name", name, "must be a DNS-1123 label"))
        if name in names:
            errors.append(duplicate(f"{p}.name", name))
        names.add(name)
        count = d.get("count", 1)
        if not isinstance(count, int) or count < 0:
            errors.append(invalid(f"{p}.count", count, "must be greater than or equal to 0"))
        if d.get("minCount") is not None:
            with_min += 1
            mc = d["minCount"]
            if not isinstance(mc, int) or mc < 1 or (isinstance(count, int) and mc > count):
                errors.append(invalid(f"{p}.minCount", mc, "must be between 1 and count"))
            if annotations.get(keys.ELASTIC_JOB) == "true":
                errors.append(invalid(f"{p}.minCount", mc, "cannot be combined with an elastic job"))
        errors += _slice_size_errors(_d(d.get("topologyRequest")), f"{p}.topologyRequest")
        pod_spec = _d(_d(d.get("template")).get("spec"))
        for kind in ("initContainers", "containers"):
            for c, container in enumerate(_l(pod_spec.get(kind))):
                res = _d(_d(container).get("resources"))
                for part in ("requests", "limits"):
                    for rname, raw in _d(res.get(part)).items():
                        rpath = f"{p}.template.spec.{kind}[{c}].resources.{part}[{rname}]"
                        if rname == "pods":
                            errors.append(
                                invalid(
                                    rpath,
                                    rname,
                                    'the resource name "pods" is reserved for internal kueue use',
                                )
                            )
                        q = _qty(raw, rpath, errors)
                        _non_negative(q, raw, rpath, errors)
    if with_min > 1:
        errors.append(invalid("spec.podSets", with_min, "at most one podSet can use minCount"))
    return errors


def _slice_size_errors(request: JSON, path: str) -> list[FieldError]:
    """Kueue's validateTASSliceSize (gate TASValidateWorkloadSliceSize, on since v0.19): a slice
    topology and its size come together, and sizes are positive."""
    errors: list[FieldError] = []
    size = request.get("podSetSliceSize")
    if request.get("podSetSliceRequiredTopology") is not None:
        if size is None:
            errors.append(required(f"{path}.podSetSliceSize",
                                   "must be set when podSetSliceRequiredTopology is specified"))
        elif isinstance(size, int) and size <= 0:
            errors.append(invalid(f"{path}.podSetSliceSize", size, "must be greater than 0"))
    elif size is not None:
        errors.append(forbidden(f"{path}.podSetSliceSize",
                                "may not be set when podSetSliceRequiredTopology is not specified"))
    for i, constraint in enumerate(_l(request.get("podsetSliceRequiredTopologyConstraints"))):
        layer_size = _d(constraint).get("size")
        if isinstance(layer_size, int) and layer_size <= 0:
            errors.append(invalid(f"{path}.podsetSliceRequiredTopologyConstraints[{i}].size", layer_size,
                                  "must be greater than 0"))
    return errors


def _reclaimable(status: JSON) -> dict[str, tuple[int, Any]]:
    return {
        str(_d(r).get("name")): (i, _d(r).get("count"))
        for i, r in enumerate(_l(status.get("reclaimablePods")))
    }


def validate_workload(obj: JSON, old: JSON | None) -> list[FieldError]:
    spec, status = _d(obj.get("spec")), _d(obj.get("status"))
    annotations = _d(_d(obj.get("metadata")).get("annotations"))
    errors = _podset_errors(spec, annotations)
    counts = {str(_d(ps).get("name", "main")): _d(ps).get("count", 1) for ps in _l(spec.get("podSets"))}
    if spec.get("queueName") and not is_dns1123_subdomain(str(spec["queueName"])):
        errors.append(invalid("spec.queueName", spec["queueName"], "must be a DNS-1123 subdomain"))
    gated = annotations.get(keys.ADMISSION_GATED_BY)
    if gated is not None:
        errors += admission_gated_by_errors(str(gated), annotation_path(keys.ADMISSION_GATED_BY))
    reserved = _condition_true(obj, keys.WorkloadCondition.QUOTA_RESERVED)
    admission = status.get("admission")
    if reserved and admission is None:
        errors.append(required("status.admission", "must be set when the quota is reserved"))
    for i, assignment in enumerate(_l(_d(admission).get("podSetAssignments"))):
        a, p = _d(assignment), f"status.admission.podSetAssignments[{i}]"
        name = str(a.get("name", "main"))
        if name not in counts:
            errors.append(not_found(f"{p}.name", name))
            continue
        count = a.get("count", counts[name])
        for rname, raw in _d(a.get("resourceUsage")).items():
            q = _qty(raw, f"{p}.resourceUsage[{rname}]", errors)
            if q is None or not isinstance(count, int) or count <= 0:
                continue
            amount = q.milli_value() if rname == "cpu" else q.value()
            if amount % count:
                errors.append(
                    invalid(f"{p}.resourceUsage[{rname}]", raw, f"is not divisible by the pod count {count}")
                )
    for name, (i, count) in _reclaimable(status).items():
        p = f"status.reclaimablePods[{i}]"
        if name not in counts:
            errors.append(not_supported(f"{p}.name", name, "must be one of the podSet names"))
        elif isinstance(count, int) and isinstance(counts[name], int) and count > counts[name]:
            errors.append(invalid(f"{p}.count", count, f"should be less or equal to {counts[name]}"))
    if old is not None:
        errors += _workload_update_errors(obj, old, reserved)
    return errors


def _workload_update_errors(obj: JSON, old: JSON, reserved: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    old_reserved = _condition_true(old, keys.WorkloadCondition.QUOTA_RESERVED)
    spec, old_spec = _d(obj.get("spec")), _d(old.get("spec"))
    if old_reserved and reserved:
        old_rec, new_rec = _reclaimable(_d(old.get("status"))), _reclaimable(_d(obj.get("status")))
        for name, (_, count) in old_rec.items():
            if name not in new_rec:
                errors.append(
                    required("status.reclaimablePods", f"cannot remove {name!r} while the quota is reserved")
                )
            else:
                j, new_count = new_rec[name]
                if isinstance(count, int) and isinstance(new_count, int) and new_count < count:
                    errors.append(
                        invalid(
                            f"status.reclaimablePods[{j}].count",
                            new_count,
                            f"cannot be less than {count} while the quota is reserved",
                        )
                    )
        if spec.get("queueName") != old_spec.get("queueName"):
            errors.append(
                invalid(
                    "spec.queueName", spec.get("queueName"), "field is immutable while the quota is reserved"
                )
            )
    if old_reserved and not _only_scaled_down(_l(spec.get("podSets")), _l(old_spec.get("podSets"))):
        errors.append(invalid("spec.podSets", "...", "field is immutable while the quota is reserved"))
    old_admission = _d(old.get("status")).get("admission")
    new_admission = _d(obj.get("status")).get("admission")
    if old_admission is not None and new_admission is not None and old_reserved and reserved and \
            admission_changed(old_admission, new_admission):
        errors.append(invalid("status.admission", "...", "field is immutable"))
    return errors


def _only_scaled_down(new: list[Any], old: list[Any]) -> bool:
    """Pod sets equal but for counts that went down: an elastic job scaled down keeps its
    quota reservation (Kueue's ElasticJobsViaWorkloadSlices, on by default, allows it)."""
    if len(new) != len(old):
        return False
    for n, o in zip(new, old, strict=True):
        if not (isinstance(n, dict) and isinstance(o, dict)):
            if n != o:
                return False
            continue
        count, old_count = n.get("count", 1), o.get("count", 1)
        if not (isinstance(count, int) and isinstance(old_count, int) and count <= old_count):
            return False
        if {**n, "count": old_count} != {**o, "count": old_count}:
            return False
    return True


# -- defaulting -----------------------------------------------------------------------------


def add_resource_in_use_finalizer(obj: JSON) -> JSON:
    metadata = obj.setdefault("metadata", {})
    finalizers = metadata.get("finalizers") if isinstance(metadata.get("finalizers"), list) else []
    if keys.RESOURCE_IN_USE_FINALIZER not in finalizers:
        metadata["finalizers"] = [*finalizers, keys.RESOURCE_IN_USE_FINALIZER]
    return obj


def default_workload(obj: JSON, partial_admission: bool = True) -> JSON:
    if not partial_admission:
        for ps in _l(_d(obj.get("spec")).get("podSets")):
            if isinstance(ps, dict):
                ps.pop("minCount", None)
    return obj


Validator = Callable[[JSON, JSON | None], list[FieldError]]
VALIDATORS: Mapping[str, Validator] = {
    "ClusterQueue": validate_cluster_queue,
    "Cohort": validate_cohort,
    "ResourceFlavor": validate_resource_flavor,
    "LocalQueue": validate_local_queue,
    "Workload": validate_workload,
}
