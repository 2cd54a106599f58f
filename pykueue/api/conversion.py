"""Conversion between ``kueue.x-k8s.io/v1beta1`` and ``v1beta2`` documents.

This is what the CRD conversion webhook runs. It works on plain JSON dicts so that fields
we do not model pass through untouched. The changes follow Kueue's own conversion:

* ClusterQueue: ``spec.cohort`` <-> ``spec.cohortName``; the v1beta1-only
  ``spec.admissionChecks`` list becomes ``spec.admissionChecksStrategy``; the deprecated
  flavor-fungibility values ``Borrow``/``Preempt`` become ``MayStopSearch``; the v1beta1-only
  ``status.pendingWorkloadsStatus`` and ``status.fairSharing.admissionFairSharingStatus`` go.
* LocalQueue: ``status.flavorUsage`` <-> ``status.flavorsUsage``; v1beta1 ``status.flavors`` goes.
* Workload: ``spec.priorityClassSource`` + ``spec.priorityClassName`` <-> ``spec.priorityClassRef``;
  ``status.accumulatedPastExexcutionTimeSeconds`` (sic) <-> ``accumulatedPastExecutionTimeSeconds``;
  a topology assignment's ``domains`` <-> compressed ``slices``.
* Cohort: v1beta1-only ``status.fairSharing.admissionFairSharingStatus`` goes.
* AdmissionCheck: v1beta1-only ``spec.retryDelayMinutes`` goes.
* MultiKueueCluster: ``spec.kubeConfig`` / ``spec.clusterProfileRef`` <-> ``spec.clusterSource``.
* MultiKueueConfig: v1beta2-only ``spec.quotaManagement`` goes on the way down.

Everything else is identical in both versions; only ``apiVersion`` changes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

GROUP = "kueue.x-k8s.io"
V1BETA1 = f"{GROUP}/v1beta1"
V1BETA2 = f"{GROUP}/v1beta2"
VERSIONS = (V1BETA1, V1BETA2)

WORKLOAD_PRIORITY_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
POD_PRIORITY_SOURCE = "scheduling.k8s.io/priorityclass"
_REF_BY_SOURCE = {
    WORKLOAD_PRIORITY_SOURCE: ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    POD_PRIORITY_SOURCE: ("scheduling.k8s.io", "PriorityClass"),
}
_SOURCE_BY_REF = {ref: source for source, ref in _REF_BY_SOURCE.items()}

Obj = dict[str, Any]


class ConversionError(ValueError):
    """The object cannot be converted: unknown kind, unknown version or malformed input."""


def _get(obj: Obj, *path: str) -> Any:
    node: Any = obj
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _rename(node: Any, old: str, new: str) -> None:
    if isinstance(node, dict) and old in node:
        node[new] = node.pop(old)


def _drop(node: Any, key: str) -> None:
    if isinstance(node, dict):
        node.pop(key, None)


# -- ClusterQueue ----------------------------------------------------------------------------
def _cq_up(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _rename(spec, "cohort", "cohortName")
        checks = spec.pop("admissionChecks", None)
        if checks and spec.get("admissionChecksStrategy") is None:
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": n} for n in checks]}
        fungibility = spec.get("flavorFungibility")
        if isinstance(fungibility, dict):
            if fungibility.get("whenCanBorrow") == "Borrow":
                fungibility["whenCanBorrow"] = "MayStopSearch"
            if fungibility.get("whenCanPreempt") == "Preempt":
                fungibility["whenCanPreempt"] = "MayStopSearch"
    status = obj.get("status")
    if isinstance(status, dict):
        _drop(status, "pendingWorkloadsStatus")
        _drop(status.get("fairSharing"), "admissionFairSharingStatus")


def _cq_down(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _rename(spec, "cohortName", "cohort")
        _drop(spec, "concurrentAdmissionPolicy")


# -- LocalQueue ------------------------------------------------------------------------------
def _lq_up(obj: Obj) -> None:
    status = obj.get("status")
    if isinstance(status, dict):
        _rename(status, "flavorUsage", "flavorsUsage")
        _drop(status, "flavors")


def _lq_down(obj: Obj) -> None:
    _rename(obj.get("status"), "flavorsUsage", "flavorUsage")


# -- Cohort / AdmissionCheck / MultiKueue ----------------------------------------------------
def _cohort_up(obj: Obj) -> None:
    _drop(_get(obj, "status", "fairSharing"), "admissionFairSharingStatus")


def _ac_up(obj: Obj) -> None:
    _drop(obj.get("spec"), "retryDelayMinutes")


def _mkc_up(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        source = {k: spec.pop(k) for k in ("kubeConfig", "clusterProfileRef") if k in spec}
        if source:
            spec["clusterSource"] = source


def _mkc_down(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("clusterSource"), dict):
        spec.update(spec.pop("clusterSource"))


def _mkconfig_down(obj: Obj) -> None:
    _drop(obj.get("spec"), "quotaManagement")


# -- Workload --------------------------------------------------------------------------------
def domains_to_slices(domains: list[Any]) -> list[Obj]:
    """v1beta1 ``domains`` as one v1beta2 slice, values shared per level when they agree."""
    if not domains:
        return []
    counts = [int(d.get("count", 0)) for d in domains]
    values = [list(d.get("values") or []) for d in domains]
    levels = len(values[0])
    per_level: list[Obj] = []
    for level in range(levels):
        at_level = [v[level] if level < len(v) else "" for v in values]
        if len(set(at_level)) == 1:
            per_level.append({"universal": at_level[0]})
        else:
            per_level.append({"individual": {"roots": at_level}})
    pod_counts: Obj = {"universal": counts[0]} if len(set(counts)) == 1 else {"individual": counts}
    return [{"domainCount": len(domains), "valuesPerLevel": per_level, "podCounts": pod_counts}]


def slices_to_domains(slices: list[Any]) -> list[Obj]:
    """Expand v1beta2 slices into the v1beta1 list of (values, count) domains."""
    domains: list[Obj] = []
    for piece in slices:
        n = int(piece.get("domainCount", 0))
        counts = piece.get("podCounts") or {}
        for j in range(n):
            values = []
            for level in piece.get("valuesPerLevel") or []:
                if "universal" in level:
                    values.append(level["universal"])
                else:
                    ind = level.get("individual") or {}
                    values.append(f"{ind.get('prefix', '')}{ind['roots'][j]}{ind.get('suffix', '')}")
            count = counts["universal"] if "universal" in counts else counts["individual"][j]
            domains.append({"values": values, "count": count})
    return domains


def _assignments(obj: Obj) -> list[Obj]:
    found = _get(obj, "status", "admission", "podSetAssignments")
    return [a for a in found if isinstance(a, dict)] if isinstance(found, list) else []


def _wl_up(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        source = spec.pop("priorityClassSource", None)
        name = spec.pop("priorityClassName", None)
        ref = _REF_BY_SOURCE.get(str(source))
        if ref is not None and name:
            spec["priorityClassRef"] = {"group": ref[0], "kind": ref[1], "name": name}
    status = obj.get("status")
    if isinstance(status, dict):
        _rename(status, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")
    for assignment in _assignments(obj):
        ta = assignment.get("topologyAssignment")
        if isinstance(ta, dict) and "domains" in ta:
            ta["slices"] = domains_to_slices(ta.pop("domains") or [])


def _wl_down(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _drop(spec, "preemptionGates")
        ref = spec.pop("priorityClassRef", None)
        if isinstance(ref, dict):
            source = _SOURCE_BY_REF.get((str(ref.get("group")), str(ref.get("kind"))))
            if source is not None:
                spec["priorityClassSource"] = source
                spec["priorityClassName"] = ref.get("name")
    status = obj.get("status")
    if isinstance(status, dict):
        _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
        _drop(status, "preemptionGates")
    for assignment in _assignments(obj):
        ta = assignment.get("topologyAssignment")
        if isinstance(ta, dict) and "slices" in ta:
            ta["domains"] = slices_to_domains(ta.pop("slices") or [])


def _same(obj: Obj) -> None:
    del obj


# kind -> (v1beta1 -> v1beta2, v1beta2 -> v1beta1)
CONVERTERS: dict[str, tuple[Callable[[Obj], None], Callable[[Obj], None]]] = {
    "AdmissionCheck": (_ac_up, _same),
    "ClusterQueue": (_cq_up, _cq_down),
    "Cohort": (_cohort_up, _same),
    "LocalQueue": (_lq_up, _lq_down),
    "MultiKueueCluster": (_mkc_up, _mkc_down),
    "MultiKueueConfig": (_same, _mkconfig_down),
    "ProvisioningRequestConfig": (_same, _same),
    "ResourceFlavor": (_same, _same),
    "Topology": (_same, _same),
    "Workload": (_wl_up, _wl_down),
    "WorkloadPriorityClass": (_same, _same),
}


def convert(obj: dict[str, Any], desired_api_version: str, *, in_place: bool = False) -> dict[str, Any]:
    """Return ``obj`` converted to ``desired_api_version``: a deep copy, the input unchanged, or
    with ``in_place`` the input itself, changed (for objects parsed just for this call: the
    copy is most of a conversion's cost). A failed conversion may leave the input half done."""
    if not isinstance(obj, dict):
        raise ConversionError(f"expected an object, got {type(obj).__name__}")
    kind = obj.get("kind")
    current = obj.get("apiVersion")
    if not isinstance(kind, str) or kind not in CONVERTERS:
        raise ConversionError(f"kind {kind!r} is not served by {GROUP} in more than one version; "
                              f"convertible kinds: {', '.join(sorted(CONVERTERS))}")
    for version, what in ((current, "source"), (desired_api_version, "desired")):
        if version not in VERSIONS:
            raise ConversionError(f"{what} apiVersion {version!r} is not one of {', '.join(VERSIONS)}")
    out = obj if in_place else copy.deepcopy(obj)
    if current != desired_api_version:
        up, down = CONVERTERS[str(kind)]
        try:
            (up if desired_api_version == V1BETA2 else down)(out)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise ConversionError(f"{kind} {_get(obj, 'metadata', 'name')!r} cannot be converted: "
                                  f"{exc!r}") from exc
        out["apiVersion"] = desired_api_version
    return out
