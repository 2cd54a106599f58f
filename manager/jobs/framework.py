"""Admission-side rules shared by every job integration, and by the reconcilers.

Kueue's ``jobframework`` decides, for any job kind, whether an object is Kueue's to manage,
which queue it goes to, and which label/annotation values are acceptable. The same answers
are needed by the admission webhook (suspend it? default its queue? reject it?) and by the
reconcilers (make a Workload for it?), so they live here once, as pure functions.

Purity is kept by splitting each decision in two: *facts* about the cluster (namespace
labels, does LocalQueue ``default`` exist, owner objects) are resolved by the caller at the
edge and handed in as :class:`ClusterFacts`; the functions here only read them. The owner
chain is the one fact whose extent is only known while walking it, so the walk raises
:class:`OwnerLookupNeeded` naming the next object to fetch, and the caller fetches it and
walks again -- one walk implementation, no I/O in it.

The behaviour follows Kueue's HEAD line (feature gates at their HEAD defaults; see
:data:`DEFAULT_GATES`); field-error texts follow Kubernetes' ``field.Error`` format so
messages read like the apiserver's.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from api import keys
from api.field_errors import forbidden, invalid, required, too_long
from api.fields import FieldError
from api.wire import JSON
from manager.core.jobs_to_workloads import queue_name as queue_name  # re-exported for webhook code
from manager.core.matching import label_selector_matches

# -- feature gates --------------------------------------------------------------------------

DEFAULT_GATES: Mapping[str, bool] = {
    "TopologyAwareScheduling": True,
    "TASMultiLayerTopology": True,
    "ElasticJobsViaWorkloadSlices": True,
    "AdmissionGatedBy": True,
    "WorkloadIdentifierAnnotations": True,
    "SkipAncestorCheckForDeletedWorkloads": True,
    "WorkloadPriorityClassDefaulting": True,
    "MultiKueue": True,
    "LWSImmutableGroupSize": True,
    "PartialAdmission": True,
}


@dataclass(frozen=True)
class FeatureGates:
    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        return bool(self.overrides.get(name, DEFAULT_GATES.get(name, False)))


# -- field errors ---------------------------------------------------------------------------


class AdmissionDenied(Exception):
    """A defaulter cannot decide (owner missing, chain too long): the request is denied."""


def label_path(key: str, base: str = "metadata") -> str:
    return f"{base}.labels[{key}]"


def annotation_path(key: str, base: str = "metadata") -> str:
    return f"{base}.annotations[{key}]"


# -- name formats ---------------------------------------------------------------------------

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)


def is_dns1123_label(value: str) -> bool:
    return len(value) <= 63 and bool(_DNS1123_LABEL.match(value))


def is_dns1123_subdomain(value: str) -> bool:
    return 0 < len(value) <= 253 and all(is_dns1123_label(p) for p in value.split("."))


def label_key_problems(key: str) -> list[str]:
    """Why ``key`` is not a qualified name (``[prefix/]name``); empty when it is."""
    prefix, slash, name = key.rpartition("/")
    problems = []
    if slash and not is_dns1123_subdomain(prefix):
        problems.append("prefix part " + DNS1123_SUBDOMAIN_MSG)
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        problems.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character, at most 63 characters"
        )
    return problems


def is_label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_LABEL_VALUE.match(value))


def dns_subdomain_errors(value: str, path: str) -> list[FieldError]:
    return [] if is_dns1123_subdomain(value) else [invalid(path, value, DNS1123_SUBDOMAIN_MSG)]


# -- integrations and owners ----------------------------------------------------------------


@dataclass(frozen=True)
class Integration:
    name: str  # Kueue's integration name in Configuration.integrations.frameworks
    group: str
    version: str
    kind: str
    plural: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


INTEGRATIONS: tuple[Integration, ...] = (
    Integration("batch/job", "batch", "v1", "Job", "jobs"),
    Integration("kubeflow.org/pytorchjob", "kubeflow.org", "v1", "PyTorchJob", "pytorchjobs"),
    Integration(
        "leaderworkerset.x-k8s.io/leaderworkerset",
        "leaderworkerset.x-k8s.io",
        "v1",
        "LeaderWorkerSet",
        "leaderworkersets",
    ),
    Integration("pod", "", "v1", "Pod", "pods"),
    Integration("kubeflow.org/mpijob", "kubeflow.org", "v2beta1", "MPIJob", "mpijobs"),
    Integration("kubeflow.org/tfjob", "kubeflow.org", "v1", "TFJob", "tfjobs"),
    Integration("kubeflow.org/paddlejob", "kubeflow.org", "v1", "PaddleJob", "paddlejobs"),
    Integration("kubeflow.org/xgboostjob", "kubeflow.org", "v1", "XGBoostJob", "xgboostjobs"),
    Integration("jobset.x-k8s.io/jobset", "jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets"),
    Integration("ray.io/rayjob", "ray.io", "v1", "RayJob", "rayjobs"),
    Integration("ray.io/raycluster", "ray.io", "v1", "RayCluster", "rayclusters"),
    Integration("trainer.kubeflow.org/trainjob", "trainer.kubeflow.org", "v1alpha1", "TrainJob", "trainjobs"),
    Integration(
        "workload.codeflare.dev/appwrapper", "workload.codeflare.dev", "v1beta2", "AppWrapper", "appwrappers"
    ),
    Integration("deployment", "apps", "v1", "Deployment", "deployments"),
    Integration("statefulset", "apps", "v1", "StatefulSet", "statefulsets"),
)
BY_GROUP_KIND: Mapping[tuple[str, str], Integration] = {(i.group, i.kind): i for i in INTEGRATIONS}
# A ReplicaSet is a transparent hop between a Deployment and its pods.
REPLICA_SET = Integration("", "apps", "v1", "ReplicaSet", "replicasets")
MAX_OWNER_HOPS = 10

# Kinds for which Kueue supports a prebuilt workload / elastic jobs (by group, kind).
PREBUILT_KINDS = frozenset(
    {
        ("batch", "Job"),
        ("jobset.x-k8s.io", "JobSet"),
        ("kubeflow.org", "TFJob"),
        ("kubeflow.org", "PaddleJob"),
        ("kubeflow.org", "PyTorchJob"),
        ("kubeflow.org", "XGBoostJob"),
        ("trainer.kubeflow.org", "TrainJob"),
        ("kubeflow.org", "MPIJob"),
        ("ray.io", "RayJob"),
        ("ray.io", "RayCluster"),
        ("ray.io", "RayService"),
        ("", "Pod"),
        ("workload.codeflare.dev", "AppWrapper"),
    }
)
ELASTIC_KINDS = frozenset(
    {("batch", "Job"), ("ray.io", "RayCluster"), ("ray.io", "RayJob"), ("ray.io", "RayService")}
)


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


OwnerKey = tuple[str, str, str, str]
"""(apiVersion, kind, namespace, name) of an owner object to look up."""


class OwnerLookupNeeded(Exception):
    """The walk needs this owner object; fetch it into ``ClusterFacts.owners`` and walk again."""

    def __init__(self, key: OwnerKey) -> None:
        super().__init__(f"{key[1]} {key[2]}/{key[3]}")
        self.key = key


# -- policy and facts -----------------------------------------------------------------------


@dataclass(frozen=True)
class AdmissionPolicy:
    """The static part of the decisions: Kueue's Configuration fields that matter here."""

    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: Mapping[str, Any] | None = None  # None selects every namespace
    frameworks: frozenset[str] = frozenset({"batch/job"})
    external_frameworks: frozenset[str] = frozenset()  # "Kind.version.group"
    gates: FeatureGates = FeatureGates()

    def integration_enabled(self, name: str) -> bool:
        if name in self.frameworks:
            return True
        # LeaderWorkerSet gates its pods through the pod integration, which it enables implicitly.
        return name == "pod" and "leaderworkerset.x-k8s.io/leaderworkerset" in self.frameworks

    def owner_integration(self, api_version: str, kind: str) -> tuple[bool, bool]:
        """(known, enabled) for an owner kind: known kinds are walked through, enabled ones manage."""
        group = group_of(api_version)
        version = api_version.rpartition("/")[2]
        if f"{kind}.{version}.{group}" in self.external_frameworks:
            return True, True
        integration = BY_GROUP_KIND.get((group, kind))
        if integration is not None:
            return True, self.integration_enabled(integration.name)
        return (group, kind) == (REPLICA_SET.group, REPLICA_SET.kind), False

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> AdmissionPolicy:
        """From a Configuration dict (already defaulted or not: Kueue's defaults apply)."""
        from api.config import Configuration

        parsed = Configuration.from_dict(dict(config)).with_defaults()
        selector = parsed.managed_jobs_namespace_selector
        integrations = parsed.integrations
        return cls(
            manage_jobs_without_queue_name=bool(parsed.manage_jobs_without_queue_name),
            managed_jobs_namespace_selector=None if selector is None else selector.to_dict(),
            frameworks=frozenset((integrations.frameworks if integrations else None) or ["batch/job"]),
            external_frameworks=frozenset((integrations.external_frameworks if integrations else None) or ()),
            gates=FeatureGates(dict(parsed.feature_gates or {})),
        )


@dataclass(frozen=True)
class ClusterFacts:
    """What the cluster looked like for one request, resolved by the caller."""

    namespace_labels: Mapping[str, str] | None = None  # None: the Namespace could not be read
    default_local_queue: bool = False  # LocalQueue "default" exists in the object's namespace
    default_priority_class: bool = False  # WorkloadPriorityClass "default" exists
    queue_uses_multikueue: bool = False  # the object's LocalQueue -> ClusterQueue has a MultiKueue check
    owners: Mapping[OwnerKey, JSON | None] = field(default_factory=dict)  # None: not found


@dataclass(frozen=True)
class AdmissionContext:
    policy: AdmissionPolicy
    facts: ClusterFacts
    operation: str = "CREATE"

    def gate(self, name: str) -> bool:
        return self.policy.gates.enabled(name)


# -- metadata helpers -----------------------------------------------------------------------


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return _str_map(meta(obj).get("labels"))


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return _str_map(meta(obj).get("annotations"))


def set_label(obj: JSON, key: str, value: str) -> None:
    obj.setdefault("metadata", {})
    if not isinstance(obj["metadata"].get("labels"), dict):
        obj["metadata"]["labels"] = {}
    obj["metadata"]["labels"][key] = value


def set_annotation(obj: JSON, key: str, value: str) -> None:
    obj.setdefault("metadata", {})
    if not isinstance(obj["metadata"].get("annotations"), dict):
        obj["metadata"]["annotations"] = {}
    obj["metadata"]["annotations"][key] = value


def priority_class_label(obj: Mapping[str, Any]) -> str:
    return labels(obj).get(keys.PRIORITY_CLASS, "")


def controller_owner(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in meta(obj).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def namespace_selected(policy: AdmissionPolicy, namespace_labels: Mapping[str, str] | None) -> bool:
    """Does managedJobsNamespaceSelector select the namespace? A nil selector selects all."""
    if policy.managed_jobs_namespace_selector is None:
        return True
    if namespace_labels is None:
        raise AdmissionDenied("failed to get the namespace to evaluate managedJobsNamespaceSelector")
    return label_selector_matches(policy.managed_jobs_namespace_selector, namespace_labels)


def is_managed(obj: Mapping[str, Any], policy: AdmissionPolicy, namespace_labels: Mapping[str, str]) -> bool:
    """Should a reconciler make a Workload for this top-level job (no managed ancestor)?

    Kueue HEAD (ManagedJobsNamespaceSelectorAlwaysRespected): the namespace must match
    managedJobsNamespaceSelector even when the job names a queue; without a queue name the
    job is managed only under manageJobsWithoutQueueName. Callers handle the ancestor case.
    """
    if not namespace_selected(policy, namespace_labels):
        return False
    return bool(queue_name(obj)) or policy.manage_jobs_without_queue_name


# -- the ancestor walk (Kueue FindAncestorJobManagedByKueue) -------------------------------


def find_managed_ancestor(obj: Mapping[str, Any], ctx: AdmissionContext) -> Mapping[str, Any] | None:
    """The topmost controller-owner ancestor that Kueue manages, or None.

    Raises :class:`OwnerLookupNeeded` for an owner not in ``ctx.facts.owners`` and
    :class:`AdmissionDenied` for a missing owner, a cycle, or a chain over 10 hops.
    """
    policy = ctx.policy
    namespace = str(meta(obj).get("namespace") or "")
    seen = {str(meta(obj).get("uid") or "")}
    current: Mapping[str, Any] = obj
    candidate: Mapping[str, Any] | None = None
    for _ in range(MAX_OWNER_HOPS + 1):
        ref = controller_owner(current)
        if ref is None:
            return candidate
        api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
        known, enabled = policy.owner_integration(api_version, kind)
        if not known:
            return candidate
        uid = str(ref.get("uid") or "")
        if uid in seen:
            raise AdmissionDenied(f"cyclic ownership detected at {kind} {namespace}/{ref.get('name')}")
        seen.add(uid)
        key: OwnerKey = (api_version, kind, namespace, str(ref.get("name", "")))
        if key not in ctx.facts.owners:
            raise OwnerLookupNeeded(key)
        owner = ctx.facts.owners[key]
        if owner is None:
            raise AdmissionDenied(f"owner {kind} {namespace}/{key[3]} not found")
        if str(meta(owner).get("uid") or "") != uid:
            return candidate
        if enabled and (policy.manage_jobs_without_queue_name or queue_name(owner)):
            candidate = owner
        current = owner
    raise AdmissionDenied(
        f"reached the limit of {MAX_OWNER_HOPS} hops while looking for the ancestor job managed by Kueue"
    )


def deleting(obj: Mapping[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def workload_should_be_suspended(obj: Mapping[str, Any], ctx: AdmissionContext) -> bool:
    """Kueue's WorkloadShouldBeSuspended as the webhook sees it (tolerating deletion)."""
    if deleting(obj) and ctx.gate("SkipAncestorCheckForDeletedWorkloads"):
        return False
    if find_managed_ancestor(obj, ctx) is not None:
        return False
    if queue_name(obj):
        return True
    if ctx.policy.manage_jobs_without_queue_name:
        return namespace_selected(ctx.policy, ctx.facts.namespace_labels)
    return False


def _direct_owner_managed_kind(obj: Mapping[str, Any], policy: AdmissionPolicy) -> bool:
    ref = controller_owner(obj)
    if ref is None:
        return False
    known, enabled = policy.owner_integration(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
    return known and enabled


def apply_default_local_queue(obj: JSON, ctx: AdmissionContext) -> None:
    """Label ``queue-name: default`` when LocalQueue ``default`` exists and nothing else decides."""
    if not ctx.facts.default_local_queue or queue_name(obj):
        return
    if _direct_owner_managed_kind(obj, ctx.policy):
        return
    if not namespace_selected(ctx.policy, ctx.facts.namespace_labels):
        return
    set_label(obj, keys.QUEUE_NAME, keys.DEFAULT_LOCAL_QUEUE)


def apply_default_priority_class(obj: JSON, ctx: AdmissionContext) -> None:
    if not ctx.gate("WorkloadPriorityClassDefaulting") or not ctx.facts.default_priority_class:
        return
    if priority_class_label(obj) or _direct_owner_managed_kind(obj, ctx.policy):
        return
    set_label(obj, keys.PRIORITY_CLASS, keys.DEFAULT_PRIORITY_CLASS)


def managed_by_default(
    current: str | None, own_controller: str, ctx: AdmissionContext, obj: Mapping[str, Any]
) -> str | None:
    """The managedBy value after MultiKueue defaulting (None: leave the field as it is)."""
    if not ctx.gate("MultiKueue") or current not in (None, "", own_controller):
        return None
    if queue_name(obj) and ctx.facts.queue_uses_multikueue:
        return keys.MULTIKUEUE_CONTROLLER
    return None



def apply_job_defaults(
    obj: JSON,
    ctx: AdmissionContext,
    switches: Callable[[JSON], JSON],
    is_suspended: Callable[[JSON], bool],
    own_controller: str,
) -> JSON:
    """Kueue's BaseWebhook defaulting of a kind with a suspend switch: default LocalQueue and
    priority class, ``suspend`` when Kueue manages it, MultiKueue ``managedBy``.

    ``switches`` returns (creating it when absent) the mapping holding ``suspend`` and
    ``managedBy``: ``spec`` of a Job, ``spec.runPolicy`` of a training job. It is called after
    the label defaults, which decide whether the object is managed. Returns that mapping.
    """
    apply_default_local_queue(obj, ctx)
    apply_default_priority_class(obj, ctx)
    holder = switches(obj)
    if workload_should_be_suspended(obj, ctx) and not is_suspended(obj):
        holder["suspend"] = True
    managed_by = managed_by_default(holder.get("managedBy"), own_controller, ctx, obj)
    if managed_by is not None:
        holder["managedBy"] = managed_by
    return holder

# -- shared validation (Kueue ValidateJobOnCreate / ValidateJobOnUpdate) ---------------------

_GATE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def elastic_enabled(obj: Mapping[str, Any], ctx: AdmissionContext) -> bool:
    return ctx.gate("ElasticJobsViaWorkloadSlices") and annotations_of(obj).get(keys.ELASTIC_JOB) == "true"


def _prebuilt(obj: Mapping[str, Any], ctx: AdmissionContext) -> tuple[str, str]:
    """(value, path) of the prebuilt workload name, label first then annotation."""
    value = labels(obj).get(keys.PREBUILT_WORKLOAD_NAME, "")
    if value:
        return value, label_path(keys.PREBUILT_WORKLOAD_NAME)
    value = annotations_of(obj).get(keys.PREBUILT_WORKLOAD_NAME, "")
    if value and (ctx.gate("WorkloadIdentifierAnnotations") or len(value) > 63):
        return value, annotation_path(keys.PREBUILT_WORKLOAD_NAME)
    return "", ""


def admission_gated_by_errors(value: str, path: str) -> list[FieldError]:
    if not value.strip():
        return []
    errors: list[FieldError] = []
    seen: set[str] = set()
    for gate in (g.strip() for g in value.split(",")):
        if not gate:
            errors.append(invalid(path, value, "gate names must not be empty"))
        elif len(gate) > 63:
            errors.append(too_long(path, f"gate {gate!r} may not be more than 63 bytes"))
        elif not _GATE_NAME.match(gate):
            errors.append(invalid(path, gate, 'must be a domain-prefixed path (such as "acme.io/foo")'))
        elif gate in seen:
            errors.append(invalid(path, gate, "duplicate gate"))
        seen.add(gate)
    return errors


def _gates(value: str) -> list[str]:
    return [g.strip() for g in value.split(",") if g.strip()]


def validate_job_on_create(
    obj: Mapping[str, Any], ctx: AdmissionContext, group: str, kind: str
) -> list[FieldError]:
    errors: list[FieldError] = []
    queue = queue_name(obj)
    if queue:
        errors += dns_subdomain_errors(queue, label_path(keys.QUEUE_NAME))
    prebuilt, path = _prebuilt(obj, ctx)
    if prebuilt:
        errors += dns_subdomain_errors(prebuilt, path)
        if (group, kind) not in PREBUILT_KINDS:
            errors.append(forbidden(path, f"prebuilt workload is not supported for {kind}"))
    max_exec = labels(obj).get(keys.MAX_EXEC_TIME_SECONDS)
    if max_exec is not None:
        try:
            if int(max_exec) <= 0:
                errors.append(
                    invalid(label_path(keys.MAX_EXEC_TIME_SECONDS), max_exec, "should be greater than 0")
                )
        except ValueError:
            errors.append(
                invalid(
                    label_path(keys.MAX_EXEC_TIME_SECONDS),
                    max_exec,
                    f"strconv.Atoi: parsing {json.dumps(max_exec)}: invalid syntax",
                )
            )
    if elastic_enabled(obj, ctx) and (group, kind) not in ELASTIC_KINDS:
        errors.append(
            forbidden(annotation_path(keys.ELASTIC_JOB), f"elastic jobs are not supported for {kind}")
        )
    if ctx.gate("AdmissionGatedBy"):
        gated = annotations_of(obj).get(keys.ADMISSION_GATED_BY)
        if gated is not None:
            errors += admission_gated_by_errors(gated, annotation_path(keys.ADMISSION_GATED_BY))
    return errors


def validate_job_on_update(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    ctx: AdmissionContext,
    *,
    new_suspended: bool,
    old_suspended: bool,
) -> list[FieldError]:
    errors: list[FieldError] = []
    qpath = label_path(keys.QUEUE_NAME)
    old_q, new_q = queue_name(old), queue_name(new)
    if not new_suspended and old_q != new_q:
        errors.append(invalid(qpath, new_q, "field is immutable"))
    elif old_q and not new_q and ctx.facts.default_local_queue:
        errors.append(
            invalid(qpath, new_q, 'must not be empty: a LocalQueue "default" exists in the namespace')
        )
    old_pre, _ = _prebuilt(old, ctx)
    new_pre, pre_path = _prebuilt(new, ctx)
    if not (new_suspended or elastic_enabled(old, ctx)) and old_pre != new_pre:
        errors.append(
            invalid(pre_path or label_path(keys.PREBUILT_WORKLOAD_NAME), new_pre, "field is immutable")
        )
    mpath = label_path(keys.MAX_EXEC_TIME_SECONDS)
    old_m, new_m = labels(old).get(keys.MAX_EXEC_TIME_SECONDS), labels(new).get(keys.MAX_EXEC_TIME_SECONDS)
    if old_m != new_m and not (old_suspended and new_suspended):
        errors.append(invalid(mpath, new_m, "field is immutable"))
    ppath = label_path(keys.PRIORITY_CLASS)
    old_p, new_p = priority_class_label(old), priority_class_label(new)
    if old_p and not new_p:
        errors.append(invalid(ppath, new_p, "the priority class label cannot be removed"))
    elif not old_p and new_p and not new_suspended:
        errors.append(invalid(ppath, new_p, "the priority class label cannot be added to a running job"))
    if elastic_enabled(old, ctx) != elastic_enabled(new, ctx):
        errors.append(
            invalid(
                annotation_path(keys.ELASTIC_JOB),
                annotations_of(new).get(keys.ELASTIC_JOB),
                "field is immutable",
            )
        )
    if ctx.gate("AdmissionGatedBy"):
        gpath = annotation_path(keys.ADMISSION_GATED_BY)
        old_g = annotations_of(old).get(keys.ADMISSION_GATED_BY, "")
        new_g = annotations_of(new).get(keys.ADMISSION_GATED_BY, "")
        if not old_g.strip() and new_g.strip():
            errors.append(forbidden(gpath, "the annotation cannot be added after creation"))
        elif old_g.strip() and new_g.strip():
            added = [g for g in _gates(new_g) if g not in _gates(old_g)]
            if added:
                errors.append(forbidden(gpath, f"gates can only be removed, not added: {', '.join(added)}"))
    return errors


# -- TAS pod-template annotations (Kueue ValidateTASPodSetRequest) -------------------------


def tas_podset_errors(
    template_meta: Mapping[str, Any], base: str, ctx: AdmissionContext, podset_count: int | None = None
) -> list[FieldError]:
    """Topology annotation rules on one pod template's metadata at path ``base``."""
    if not ctx.gate("TopologyAwareScheduling"):
        return []
    ann = _str_map(template_meta.get("annotations"))
    errors: list[FieldError] = []
    req, pref = ann.get(keys.PODSET_REQUIRED_TOPOLOGY), ann.get(keys.PODSET_PREFERRED_TOPOLOGY)
    unconstrained = ann.get(keys.PODSET_UNCONSTRAINED_TOPOLOGY)
    present = [
        k
        for k in (
            keys.PODSET_REQUIRED_TOPOLOGY,
            keys.PODSET_PREFERRED_TOPOLOGY,
            keys.PODSET_UNCONSTRAINED_TOPOLOGY,
        )
        if k in ann
    ]
    if len(present) > 1:
        errors.append(
            invalid(
                f"{base}.annotations",
                present,
                "must not contain more than one topology annotation: " + ", ".join(present),
            )
        )
    for key in (
        keys.PODSET_REQUIRED_TOPOLOGY,
        keys.PODSET_PREFERRED_TOPOLOGY,
        keys.PODSET_SLICE_REQUIRED_TOPOLOGY,
    ):
        value = ann.get(key)
        if value is not None:
            problems = label_key_problems(value)
            if problems:
                errors.append(invalid(annotation_path(key, base), value, "; ".join(problems)))
    if unconstrained is not None and unconstrained.lower() not in ("true", "false", "1", "0", "t", "f"):
        errors.append(
            invalid(
                annotation_path(keys.PODSET_UNCONSTRAINED_TOPOLOGY, base), unconstrained, "must be a boolean"
            )
        )
    slice_topology = ann.get(keys.PODSET_SLICE_REQUIRED_TOPOLOGY)
    slice_size = ann.get(keys.PODSET_SLICE_SIZE)
    size_path = annotation_path(keys.PODSET_SLICE_SIZE, base)
    size_value: int | None = None
    if slice_size is not None:
        try:
            size_value = int(slice_size)
        except ValueError:
            errors.append(invalid(size_path, slice_size, "must be an integer"))
        else:
            if size_value < 1:
                errors.append(invalid(size_path, slice_size, "must be greater than or equal to 1"))
        if slice_topology is None:
            errors.append(
                forbidden(
                    size_path, f"cannot be set when {keys.PODSET_SLICE_REQUIRED_TOPOLOGY} is not present"
                )
            )
    if slice_topology is not None and slice_size is None:
        errors.append(
            required(size_path, f"slice size is required if {keys.PODSET_SLICE_REQUIRED_TOPOLOGY} is present")
        )
    group = ann.get(keys.PODSET_GROUP_NAME)
    gpath = annotation_path(keys.PODSET_GROUP_NAME, base)
    if group is not None:
        if group.isdigit():
            errors.append(invalid(gpath, group, "must not be a number"))
        if slice_size is not None or slice_topology is not None:
            errors.append(forbidden(gpath, "may not be set together with a slice topology request"))
        if req is None and pref is None:
            errors.append(forbidden(gpath, "may be set only with a required or preferred topology"))
    constraints = ann.get(keys.PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS)
    if constraints is not None:
        errors += _slice_constraint_errors(constraints, ann, base, ctx)
        size_value = _first_constraint_size(constraints)
    if podset_count is not None and size_value is not None and size_value > podset_count:
        errors.append(
            invalid(size_path, str(size_value), f"must not be greater than pod set count {podset_count}")
        )
    return errors


def _first_constraint_size(raw: str) -> int | None:
    try:
        items = json.loads(raw)
        size = items[0]["size"]
        return size if isinstance(size, int) else None
    except (ValueError, LookupError, TypeError):
        return None


def _slice_constraint_errors(
    raw: str, ann: Mapping[str, str], base: str, ctx: AdmissionContext
) -> list[FieldError]:
    path = annotation_path(keys.PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS, base)
    if not ctx.gate("TASMultiLayerTopology"):
        return [forbidden(path, "requires the TASMultiLayerTopology feature gate")]
    errors: list[FieldError] = []
    if any(
        k in ann
        for k in (keys.PODSET_SLICE_REQUIRED_TOPOLOGY, keys.PODSET_SLICE_SIZE, keys.PODSET_GROUP_NAME)
    ):
        errors.append(forbidden(path, "may not be combined with slice topology, slice size or podset group"))
    try:
        items = json.loads(raw)
    except ValueError:
        return [*errors, invalid(path, raw, "must be a JSON array of {topology, size}")]
    if not isinstance(items, list) or not 1 <= len(items) <= 3:
        return [*errors, invalid(path, raw, "must list 1 to 3 constraints")]
    previous: int | None = None
    topologies: set[str] = set()
    for item in items:
        topology = item.get("topology") if isinstance(item, dict) else None
        size = item.get("size") if isinstance(item, dict) else None
        if not isinstance(topology, str) or label_key_problems(topology):
            errors.append(invalid(path, raw, f"invalid topology {topology!r}"))
        elif topology in topologies:
            errors.append(invalid(path, raw, f"duplicate topology {topology!r}"))
        else:
            topologies.add(topology)
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            errors.append(invalid(path, raw, "sizes must be integers >= 1"))
        elif previous is not None and previous % size:
            errors.append(invalid(path, raw, f"size {size} must divide the previous size {previous}"))
        else:
            previous = size
    return errors


# -- pod-spec shape (role hash and LWS template immutability) -------------------------------

SHAPE_FIELDS = (
    "nodeSelector",
    "affinity",
    "tolerations",
    "runtimeClassName",
    "priority",
    "topologySpreadConstraints",
    "overhead",
    "resourceClaims",
    "resources",
)


def _container_shape(containers: Any) -> list[JSON]:
    out = []
    for c in containers if isinstance(containers, list) else ():
        if isinstance(c, dict):
            out.append(
                {"resources": (c.get("resources") or {}).get("requests") or {}, "ports": c.get("ports") or []}
            )
    return out


def pod_spec_shape(spec: Mapping[str, Any]) -> JSON:
    """The scheduling-relevant part of a pod spec: what makes two pods interchangeable."""
    shape: JSON = {
        "initContainers": _container_shape(spec.get("initContainers")),
        "containers": _container_shape(spec.get("containers")),
    }
    for name in SHAPE_FIELDS:
        if spec.get(name) not in (None, {}, []):
            shape[name] = spec.get(name)
    return shape


def role_hash(spec: Mapping[str, Any]) -> str:
    blob = json.dumps(pod_spec_shape(spec), sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:8]


def shape_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any], base: str) -> list[FieldError]:
    """Field errors naming where two pod specs differ in shape (first difference per field)."""
    old, new = pod_spec_shape(old_spec), pod_spec_shape(new_spec)
    errors: list[FieldError] = []
    for kind in ("initContainers", "containers"):
        for i, (a, b) in enumerate(zip(old[kind], new[kind], strict=False)):
            for part, sub in (("resources", "resources.requests"), ("ports", "ports")):
                if a[part] != b[part]:
                    errors.append(invalid(f"{base}.{kind}[{i}].{sub}", b[part], "field is immutable"))
        if len(old[kind]) != len(new[kind]):
            errors.append(invalid(f"{base}.{kind}", len(new[kind]), "the number of containers is immutable"))
    for name in SHAPE_FIELDS:
        if old.get(name) != new.get(name):
            errors.append(invalid(f"{base}.{name}", new.get(name), "field is immutable"))
    return errors


# -- the per-kind contract ------------------------------------------------------------------


class JobWebhook(Protocol):
    """Admission behaviour of one job kind; ``webhook/`` is generic over it."""

    integration: str  # Kueue integration name; disabled integrations are served as no-ops

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        """Return the defaulted object (may be ``obj`` itself, mutated)."""
        ...

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        """Field errors for a create (``old`` None) or an update."""
        ...


def int_or(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def get_path(obj: Mapping[str, Any], *path: str) -> Any:
    node: Any = obj
    for part in path:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def each_template(templates: Iterable[tuple[str, Any]]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    for path, tmpl in templates:
        if isinstance(tmpl, dict):
            yield path, tmpl


Lookup = Callable[[OwnerKey], JSON | None]
