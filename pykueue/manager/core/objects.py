"""Compact internal records of the Kubernetes objects the scheduling core reads.

The core is fed plain object dicts (camelCase JSON, as read from YAML or the API) and
turns each into a small frozen record here, once, so the scheduling cycle never walks
nested dicts. Quantities become Kueue's int64 amounts (cpu in milli, others in units).
Invalid input raises :class:`ObjectError` with a one-line reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from pykueue.api import keys
from pykueue.api.quantity import QuantityError, parse_quantity, resource_value

from .max_execution import remaining_budget
from .resources import Transformation, amounts, pod_requests_exact, requests_over_limits, transform_requests

FR = tuple[str, str]
"""A (flavor, resource) pair: the unit of quota accounting."""


class ObjectError(ValueError):
    """An object dict the core cannot use (bad quantity, missing name, wrong shape)."""


def named_meta(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's metadata; an object without a name is refused (``ObjectError``)."""
    meta = obj.get("metadata") or {}
    if not isinstance(meta, dict) or not meta.get("name"):
        raise ObjectError(f"{obj.get('kind', 'object')} without metadata.name")
    return meta


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        raise ObjectError(f"{obj.get('kind')} {obj.get('metadata', {}).get('name')}: spec is not a mapping")
    return spec


def amount(resource: str, value: Any, where: str) -> int:
    try:
        return resource_value(resource, parse_quantity(value))
    except (QuantityError, ValueError, TypeError) as exc:
        raise ObjectError(f"{where}: invalid quantity {value!r} for {resource}") from exc


def parse_time(value: Any) -> float | None:
    """RFC 3339 timestamp -> seconds since the epoch; None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.replace(tzinfo=value.tzinfo or UTC).timestamp()
    try:
        text = str(value).replace("Z", "+00:00")
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ObjectError(f"invalid timestamp {value!r}") from exc
    return parsed.replace(tzinfo=parsed.tzinfo or UTC).timestamp()


def format_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- ResourceFlavor -------------------------------------------------------------------------


@dataclass(frozen=True)
class Flavor:
    name: str
    node_labels: dict[str, str]
    node_taints: tuple[dict[str, Any], ...]
    tolerations: tuple[dict[str, Any], ...]
    topology_name: str | None


def flavor_from(obj: dict[str, Any]) -> Flavor:
    meta, spec = named_meta(obj), _spec(obj)
    return Flavor(
        name=meta["name"],
        node_labels={str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()},
        node_taints=tuple(spec.get("nodeTaints") or ()),
        tolerations=tuple(spec.get("tolerations") or ()),
        topology_name=spec.get("topologyName"),
    )


# -- ClusterQueue and Cohort -----------------------------------------------------------------


@dataclass(frozen=True)
class Quota:
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None


@dataclass(frozen=True)
class ResourceGroup:
    covered: tuple[str, ...]
    flavors: tuple[str, ...]


@dataclass(frozen=True)
class CheckRule:
    name: str
    on_flavors: frozenset[str]


@dataclass(frozen=True)
class QueueDef:
    """What a ClusterQueue and a Cohort share: a node of the quota tree."""

    name: str
    parent: str | None
    groups: tuple[ResourceGroup, ...]
    quotas: dict[FR, Quota]


@dataclass(frozen=True)
class ClusterQueueDef(QueueDef):
    queueing_strategy: str = "BestEffortFIFO"
    namespace_selector: dict[str, Any] | None = None
    when_can_borrow: str = "Borrow"
    when_can_preempt: str = "TryNextFlavor"
    # spec.flavorFungibility.preference: how flavors that all need borrowing or preemption
    # are ranked ("" = Kueue's default, BorrowingOverPreemption).
    fungibility_preference: str = ""
    preemption: dict[str, Any] = field(default_factory=dict)
    checks: tuple[CheckRule, ...] = ()
    stop_policy: str = "None"
    admission_mode: str = ""  # spec.admissionScope.admissionMode (admission fair sharing)

    def policy(self, name: str) -> str:
        """A ``spec.preemption`` policy (``withinClusterQueue``, ``reclaimWithinCohort``):
        ``Never`` when unset."""
        return str(self.preemption.get(name) or "Never")


def _groups(kind: str, name: str, spec: dict[str, Any]) -> tuple[tuple[ResourceGroup, ...], dict[FR, Quota]]:
    groups: list[ResourceGroup] = []
    quotas: dict[FR, Quota] = {}
    for rg in spec.get("resourceGroups") or ():
        covered = tuple(str(r) for r in rg.get("coveredResources") or ())
        flavors: list[str] = []
        for fq in rg.get("flavors") or ():
            fname = fq.get("name")
            if not fname:
                raise ObjectError(f"{kind} {name}: flavor without name")
            flavors.append(fname)
            for res in fq.get("resources") or ():
                rname = res.get("name")
                where = f"{kind} {name} flavor {fname}"
                if "nominalQuota" not in res:
                    raise ObjectError(f"{where}: resource {rname} without nominalQuota")
                bl, ll = res.get("borrowingLimit"), res.get("lendingLimit")
                quotas[(fname, rname)] = Quota(
                    nominal=amount(rname, res["nominalQuota"], where),
                    borrowing_limit=None if bl is None else amount(rname, bl, where),
                    lending_limit=None if ll is None else amount(rname, ll, where),
                )
        groups.append(ResourceGroup(covered, tuple(flavors)))
    return tuple(groups), quotas


def cluster_queue_from(obj: dict[str, Any]) -> ClusterQueueDef:
    meta, spec = named_meta(obj), _spec(obj)
    name = meta["name"]
    groups, quotas = _groups("ClusterQueue", name, spec)
    fung = spec.get("flavorFungibility") or {}
    checks: list[CheckRule] = [CheckRule(str(n), frozenset()) for n in spec.get("admissionChecks") or ()]
    for rule in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or ():
        checks.append(CheckRule(rule["name"], frozenset(rule.get("onFlavors") or ())))
    return ClusterQueueDef(
        name=name,
        parent=spec.get("cohortName") or spec.get("cohort") or None,
        groups=groups,
        quotas=quotas,
        queueing_strategy=spec.get("queueingStrategy") or "BestEffortFIFO",
        namespace_selector=spec.get("namespaceSelector"),
        when_can_borrow=fung.get("whenCanBorrow") or "Borrow",
        when_can_preempt=fung.get("whenCanPreempt") or "TryNextFlavor",
        fungibility_preference=str(fung.get("preference") or ""),
        preemption=dict(spec.get("preemption") or {}),
        checks=tuple(checks),
        stop_policy=spec.get("stopPolicy") or "None",
        admission_mode=str((spec.get("admissionScope") or {}).get("admissionMode") or ""),
    )


def cohort_from(obj: dict[str, Any]) -> QueueDef:
    meta, spec = named_meta(obj), _spec(obj)
    groups, quotas = _groups("Cohort", meta["name"], spec)
    return QueueDef(meta["name"], spec.get("parentName") or spec.get("parent") or None, groups, quotas)


@dataclass(frozen=True)
class LocalQueueDef:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str
    weight: float = 1.0  # spec.fairSharing.weight (admission fair sharing)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def local_queue_from(obj: dict[str, Any]) -> LocalQueueDef:
    meta, spec = named_meta(obj), _spec(obj)
    weight = 1.0
    raw = (spec.get("fairSharing") or {}).get("weight")
    if raw is not None:
        try:
            weight = parse_quantity(raw).nano / 1e9
        except (QuantityError, ValueError, TypeError) as exc:
            raise ObjectError(f"LocalQueue {meta['name']}: invalid fairSharing weight {raw!r}") from exc
    return LocalQueueDef(meta.get("namespace") or "default", meta["name"], spec.get("clusterQueue") or "",
                         spec.get("stopPolicy") or "None", weight)


@dataclass(frozen=True)
class AdmissionCheckDef:
    name: str
    active: bool
    controller: str = ""  # spec.controllerName


def admission_check_from(obj: dict[str, Any], unreported_active: bool = True) -> AdmissionCheckDef:
    """``unreported_active``: what a check without an ``Active`` condition is. Kueue counts it
    inactive until its controller says otherwise; scenario files leave the condition out and
    mean a running controller."""
    meta = named_meta(obj)
    active = unreported_active
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Active":
            active = cond.get("status") == "True"
    controller = str((obj.get("spec") or {}).get("controllerName") or "")
    return AdmissionCheckDef(meta["name"], active, controller)


# -- Workload --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodSet:
    name: str
    count: int
    min_count: int | None
    requests: dict[str, int]  # per pod
    node_selector: dict[str, str]
    affinity_terms: tuple[tuple[dict[str, Any], ...], ...]  # required nodeSelectorTerms
    tolerations: tuple[dict[str, Any], ...]
    topology_request: dict[str, Any] | None
    # Resources the pod spec itself requests (before resource transformations); None: the
    # keys of ``requests``.
    pod_resources: frozenset[str] | None = None

    def spec_resources(self) -> frozenset[str]:
        return frozenset(self.requests) if self.pod_resources is None else self.pod_resources


@dataclass(frozen=True)
class WorkloadDef:
    namespace: str
    name: str
    queue_name: str
    priority: int
    priority_class: str | None  # a WorkloadPriorityClass name, resolved by the cache
    created: float
    podsets: tuple[PodSet, ...]
    active: bool
    owner: str | None
    uid: str
    # Kueue's resource validation errors (requests above limits); non-empty keeps it pending.
    invalid_resources: str = ""
    # The object this was read from (not copied): for hooks that need more than the
    # compact form, such as a topology placer reading pod-template annotations.
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # An elastic job's scaled-up slice: key of the slice it replaces once admitted.
    replaces: str | None = None
    # spec.maximumExecutionTimeSeconds less status.accumulatedPastExecutionTimeSeconds: how
    # long it may still run admitted before Kueue deactivates it; None without a limit.
    max_execution_s: float | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def podset_from(ps: dict[str, Any], where: str, transformations: Mapping[str, Transformation] | None = None,
                excluded_prefixes: tuple[str, ...] = ()) -> PodSet:
    """``transformations`` and ``excluded_prefixes``: the Configuration's ``resources``
    rules, applied to the pod's exact requests (``resources.transform_requests``)."""
    template = ps.get("template") or {}
    pod_spec = template.get("spec") or {}
    try:
        exact = pod_requests_exact(pod_spec)
        requests = transform_requests(exact, transformations or {}, excluded_prefixes) \
            if transformations or excluded_prefixes else amounts(exact)
    except (QuantityError, ValueError, TypeError) as exc:
        raise ObjectError(f"{where}: {exc}") from exc
    terms: list[tuple[dict[str, Any], ...]] = []
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or ():
        terms.append(tuple(term.get("matchExpressions") or ()))
    count = int(ps.get("count", 1))
    min_count = ps.get("minCount")
    if count < 0 or (min_count is not None and not 0 < int(min_count) <= count):
        raise ObjectError(f"{where}: invalid count/minCount")
    return PodSet(
        name=ps.get("name") or "main",
        count=count,
        min_count=None if min_count is None else int(min_count),
        requests=requests,
        node_selector={str(k): str(v) for k, v in (pod_spec.get("nodeSelector") or {}).items()},
        affinity_terms=tuple(terms),
        tolerations=tuple(pod_spec.get("tolerations") or ()),
        topology_request=ps.get("topologyRequest"),
        pod_resources=frozenset(str(r) for r in exact),
    )


def _after_reclaim(podsets: tuple[PodSet, ...], reclaimable: Any, where: str) -> tuple[PodSet, ...]:
    """Pods a job reports as reclaimable (``status.reclaimablePods``: they finished and will
    not run again) need no quota: Kueue counts each PodSet without them."""
    try:
        counts = {str(r.get("name")): int(r.get("count") or 0) for r in reclaimable}
    except (AttributeError, TypeError, ValueError) as exc:
        raise ObjectError(f"{where}: invalid status.reclaimablePods: {exc}") from exc
    if not counts:
        return podsets
    out = []
    for ps in podsets:
        count = max(0, ps.count - counts.get(ps.name, 0))
        min_count = None if ps.min_count is None else min(ps.min_count, count)
        out.append(replace(ps, count=count, min_count=min_count or None))
    return tuple(out)


def workload_from(obj: dict[str, Any], default_created: float,
                  transformations: Mapping[str, Transformation] | None = None,
                  excluded_prefixes: tuple[str, ...] = (), reclaimable_pods: bool = True) -> WorkloadDef:
    meta, spec = named_meta(obj), _spec(obj)
    ns = meta.get("namespace") or "default"
    where = f"Workload {ns}/{meta['name']}"
    podsets = tuple(podset_from(ps, where, transformations, excluded_prefixes)
                    for ps in spec.get("podSets") or ())
    if not podsets:
        raise ObjectError(f"{where}: no podSets")
    try:
        invalid_resources = requests_over_limits(spec.get("podSets") or ())
    except (QuantityError, ValueError, TypeError) as exc:
        raise ObjectError(f"{where}: {exc}") from exc
    if reclaimable_pods:
        podsets = _after_reclaim(podsets, (obj.get("status") or {}).get("reclaimablePods") or (), where)
    ref = spec.get("priorityClassRef") or {}
    pc: str | None = None
    if ref.get("kind") == "WorkloadPriorityClass":
        pc = ref.get("name")
    elif spec.get("priorityClassSource") == "kueue.x-k8s.io/workloadpriorityclass":
        pc = spec.get("priorityClassName")
    owner = None
    for o in meta.get("ownerReferences") or ():
        owner = f"{o.get('apiVersion')}/{o.get('kind')} {ns}/{o.get('name')}"
        if o.get("controller"):
            break
    created = parse_time(meta.get("creationTimestamp"))
    return WorkloadDef(
        namespace=ns,
        name=meta["name"],
        queue_name=spec.get("queueName") or "",
        priority=int(spec.get("priority") or 0),
        priority_class=pc,
        created=default_created if created is None else created,
        podsets=podsets,
        active=spec.get("active", True) is not False,
        owner=owner,
        uid=str(meta.get("uid") or f"{ns}/{meta['name']}"),
        invalid_resources=invalid_resources,
        source=obj,
        replaces=_replaced_slice(meta, ns),
        max_execution_s=remaining_budget(spec, obj.get("status") or {}),
    )


def _replaced_slice(meta: dict[str, Any], ns: str) -> str | None:
    """The ``workload-slice-replacement-for`` key ("ns/name") of an elastic job's Workload
    (a slice in another namespace is never replaced)."""
    annotations = meta.get("annotations") or {}
    key = str(annotations.get(keys.WORKLOAD_SLICE_REPLACEMENT_FOR) or "")
    return key if key.startswith(f"{ns}/") else None
