"""The ``kueue.x-k8s.io/v1beta1`` shape, described as differences from the v1beta2 models.

Only the schema of the still-served v1beta1 version needs it: objects are always parsed
as v1beta2 after :func:`api.conversion.convert`. The renames here mirror that module.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pykueue.api.admissioncheck import AdmissionCheckSpec
from pykueue.api.clusterqueue import ClusterQueueSpec, ClusterQueueStatus, FlavorFungibility
from pykueue.api.cohort import CohortStatus
from pykueue.api.fields import FieldInfo, Items, Model, Rule, f
from pykueue.api.localqueue import LocalQueueStatus
from pykueue.api.meta import DNS1123_SUBDOMAIN
from pykueue.api.multikueue import ClusterProfileReference, MultiKueueClusterSpec, MultiKueueConfigSpec
from pykueue.api.quota import AdmissionFairSharingStatus, FairSharingStatus
from pykueue.api.schema import FieldList, VersionView
from pykueue.api.workload import (
    PodSetAssignment,
    PodSetTopologyRequest,
    TopologyAssignment,
    Workload,
    WorkloadSpec,
    WorkloadStatus,
)


class TopologyDomainAssignment(Model):
    values: list[str] = f(required=True, min_items=1, max_items=16, list_type="atomic")
    count: int = f(required=True, minimum=1, fmt="int32")


class KubeConfigV1Beta1(Model):
    location: str = f(required=True)
    location_type: str = f(required=True, default="Secret", enum=("Secret", "Path"))


class _V1Beta1Fields(Model):
    """Declarations of the fields only v1beta1 has, borrowed by :class:`V1Beta1View`."""

    cohort: str | None = f(max_length=253, pattern=DNS1123_SUBDOMAIN)
    admission_checks: list[str] | None = f(items=Items(max_length=316))
    pending_workloads_status: dict[str, Any] | None = f(schema={
        "type": "object", "x-kubernetes-preserve-unknown-fields": True})
    admission_fair_sharing_status: AdmissionFairSharingStatus | None = f()
    flavors: list[dict[str, Any]] | None = f(max_items=16, list_type="atomic", schema={
        "type": "array", "maxItems": 16, "x-kubernetes-list-type": "atomic",
        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}})
    priority_class_name: str | None = f(max_length=253, pattern=DNS1123_SUBDOMAIN)
    priority_class_source: str | None = f(default="", enum=(
        "kueue.x-k8s.io/workloadpriorityclass", "scheduling.k8s.io/priorityclass", ""))
    accumulated_past_exexcution_time_seconds: int | None = f(fmt="int32")
    domains: list[TopologyDomainAssignment] = f(required=True, max_items=100000, list_type="atomic")
    retry_delay_minutes: int | None = f(default=15, fmt="int64")
    kube_config: KubeConfigV1Beta1 = f(required=True)
    cluster_profile_ref: ClusterProfileReference | None = f()


def _extra(name: str) -> tuple[str, Any, FieldInfo]:
    for b in _V1Beta1Fields.api_fields():
        if b.name == name:
            return (b.name, b.tp, b.info)
    raise KeyError(name)


def _without(fields: FieldList, *json_names: str) -> FieldList:
    return [fld for fld in fields if fld[2].json not in json_names]


def _retyped(fields: FieldList, json_name: str, tp: Any) -> FieldList:
    return [(n, tp if info.json == json_name else t, info) for n, t, info in fields]


class V1Beta1View(VersionView):
    def fields(self, cls: type[Model], fields: FieldList) -> FieldList:
        if cls is ClusterQueueSpec:
            fields = _without(fields, "cohortName", "concurrentAdmissionPolicy")
            return [*fields, _extra("cohort"), _extra("admission_checks")]
        if cls is FlavorFungibility:
            return [(n, t, _widen_enum(info)) for n, t, info in fields]
        if cls is CohortStatus:
            return _retyped(fields, "fairSharing", FairSharingStatusV1Beta1)
        if cls is ClusterQueueStatus:
            fields = _retyped(fields, "fairSharing", FairSharingStatusV1Beta1)
            return [*fields, _extra("pending_workloads_status")]
        if cls is LocalQueueStatus:
            flavor_usage = next(fld for fld in fields if fld[2].json == "flavorsUsage")
            fields = _without(fields, "flavorsUsage")
            renamed = (flavor_usage[0], flavor_usage[1], _rename(flavor_usage[2], "flavorUsage"))
            return [*fields, renamed, _extra("flavors")]
        if cls is WorkloadSpec:
            fields = _without(fields, "priorityClassRef", "preemptionGates")
            return [*fields, _extra("priority_class_name"), _extra("priority_class_source")]
        if cls is WorkloadStatus:
            fields = _without(fields, "accumulatedPastExecutionTimeSeconds", "preemptionGates")
            return [*fields, _extra("accumulated_past_exexcution_time_seconds")]
        if cls is PodSetTopologyRequest:
            return _without(fields, "podsetSliceRequiredTopologyConstraints")
        if cls is PodSetAssignment:
            return [(n, t, _rename(info, info.json, enum=None) if info.json == "delayedTopologyRequest"
                     else info) for n, t, info in fields]
        if cls is TopologyAssignment:
            return [*_without(fields, "slices"), _extra("domains")]
        if cls is AdmissionCheckSpec:
            return [*fields, _extra("retry_delay_minutes")]
        if cls is MultiKueueConfigSpec:
            return _without(fields, "quotaManagement")
        if cls is MultiKueueClusterSpec:
            return [*_without(fields, "clusterSource"), _extra("kube_config"), _extra("cluster_profile_ref")]
        return fields

    def rules(self, cls: type[Model], rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
        if cls is TopologyAssignment:
            # Its rule is about the v1beta2-only slices.
            return ()
        if cls is WorkloadSpec:
            return (Rule("!has(self.priorityClassName) || has(self.priority)",
                         "priority should not be nil when priorityClassName is set"),)
        if cls is Workload:
            return tuple(r for r in rules if "priorityClassRef" not in r.rule)
        if cls is ClusterQueueSpec:
            return tuple(Rule(r.rule.replace("cohortName", "cohort"), r.message) for r in rules)
        return rules


class FairSharingStatusV1Beta1(FairSharingStatus):
    admission_fair_sharing_status: AdmissionFairSharingStatus | None = f()


def _widen_enum(info: FieldInfo) -> FieldInfo:
    extra = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}.get(info.json)
    if extra is None or info.enum is None:
        return info
    return _rename(info, info.json, enum=(*info.enum, extra))


def _rename(info: FieldInfo, json: str, **changes: Any) -> FieldInfo:
    return replace(info, json=json, **changes)
