"""A live cluster's objects as the input of the scheduling core, and what-if submissions.

Pure: the caller lists the objects (``kubectl get -o json``-style lists, by kind) and this
module turns them into the :class:`~manager.scenario.loader.Scenario` that ``simulate``
runs, in the order the manager's informers would feed them: queues and flavors first, then
ready Nodes and bound Pods (topology-aware placement), then every Workload with its status
(an admission with ``QuotaReserved`` holds quota, as it does in the manager).

A job submitted in a what-if becomes its Workloads the way a real ``kubectl create`` would
make them: the kind's admission webhook defaults it (default LocalQueue, priority class,
suspend) and validates it with facts read from the same lists, then the kind's lifecycle
decides whether it is managed and builds its Workloads, as the job reconciler does. The
objects some kinds' rules read besides the job (a TrainJob's training runtime) come from the
lists too, under their kind's name.
``explain`` and ``simulate --cluster`` both start here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import aggregate
from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import queue_name
from pykueue.manager.core.objects import ObjectError
from pykueue.manager.core.tas.nodes import is_ready
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionDenied, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.integrations import MAX_OWNER_HOPS, OwnerKey, OwnerLookupNeeded
from pykueue.manager.jobs.ownership import find_managed_ancestor
from pykueue.manager.jobs.registry import kind_of, related_kinds
from pykueue.manager.jobs.related import ReadsRelated, RelatedKey, resolve

from .loader import Scenario, ScenarioError
from .runner import Simulation

# The kinds read from the cluster, in the order they are applied to the core.
LISTED_KINDS: tuple[tuple[str, str], ...] = (
    ("v1", "Namespace"),
    (keys.API_VERSION, "ResourceFlavor"),
    (keys.API_VERSION, "Cohort"),
    (keys.API_VERSION, "ClusterQueue"),
    (keys.API_VERSION, "LocalQueue"),
    (keys.API_VERSION, "WorkloadPriorityClass"),
    (keys.API_VERSION, "AdmissionCheck"),
    (keys.API_VERSION, "Topology"),
    ("v1", "Node"),
    ("v1", "Pod"),
    (keys.API_VERSION, "Workload"),
)
WHAT_IF_UID_PREFIX = "what-if-"
SUBMISSION_GAP_S = 0.001


class SubmissionError(ScenarioError):
    """A submitted object that a real submission would not turn into a queued Workload."""


@dataclass(frozen=True)
class ClusterListing:
    """What was read from the cluster: items by kind, the manager's Configuration, the time."""

    items: Mapping[str, Sequence[JSON]]
    config: Mapping[str, Any] = field(default_factory=dict)
    now: float = 0.0


@dataclass(frozen=True)
class Submitted:
    """One submitted object and the Workloads it became."""

    ref: str  # "Kind ns/name"
    owner: str  # the owner string the core reports ("" for a bare Workload)
    workloads: tuple[str, ...]  # ns/name keys


def _with_kind(obj: JSON, api_version: str, kind: str) -> JSON:
    if obj.get("kind") and obj.get("apiVersion"):
        return obj
    return {**obj, "apiVersion": obj.get("apiVersion") or api_version, "kind": kind}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def _bound_running(pod: JSON) -> bool:
    """Bound and not terminated: its requests come off its node (the manager's pod filter)."""
    phase = (pod.get("status") or {}).get("phase")
    return bool((pod.get("spec") or {}).get("nodeName")) and phase not in ("Succeeded", "Failed")


def _created(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("creationTimestamp") or "")


def world_objects(listing: ClusterListing) -> list[JSON]:
    """The listed objects in the order the core takes them (Workloads oldest first)."""
    out: list[JSON] = []
    for api_version, kind in LISTED_KINDS:
        items = [_with_kind(o, api_version, kind) for o in listing.items.get(kind) or ()]
        if kind == "Node":
            items = [n for n in items if is_ready(n)]
        elif kind == "Pod":
            items = [p for p in items if _bound_running(p)]
        elif kind == "Workload":
            items.sort(key=lambda o: (_created(o), str(_meta(o).get("namespace")), str(_meta(o).get("name"))))
        out.extend(items)
    return out


def snapshot_scenario(listing: ClusterListing) -> Scenario:
    """The scenario that reproduces the cluster's queueing state in the core."""
    return Scenario(objects=world_objects(listing), config=dict(listing.config), names=["cluster"])


# -- submissions ---------------------------------------------------------------------------


class _Index:
    """The facts a job admission reads, from the listed objects."""

    def __init__(self, listing: ClusterListing) -> None:
        self.namespaces = {str(_meta(n).get("name")): {str(k): str(v) for k, v in
                                                        (_meta(n).get("labels") or {}).items()}
                           for n in listing.items.get("Namespace") or ()}
        self.local_queues = {(str(_meta(q).get("namespace")), str(_meta(q).get("name"))): q
                             for q in listing.items.get("LocalQueue") or ()}
        self.cluster_queues = {str(_meta(q).get("name")): q for q in listing.items.get("ClusterQueue") or ()}
        self.priority_classes = {str(_meta(p).get("name")) for p in
                                 listing.items.get("WorkloadPriorityClass") or ()}
        self.checks = {str(_meta(c).get("name")): c for c in listing.items.get("AdmissionCheck") or ()}
        # Objects job kinds' rules read besides the job (a TrainJob's training runtime), by key.
        self.related: dict[RelatedKey, JSON] = {
            rk.key_of(o): o for rk in related_kinds() for o in listing.items.get(rk.kind) or ()}

    def uses_multikueue(self, namespace: str, queue: str) -> bool:
        lq = self.local_queues.get((namespace, queue))
        cq = self.cluster_queues.get(str(((lq or {}).get("spec") or {}).get("clusterQueue") or ""))
        spec = (cq or {}).get("spec") or {}
        strategy = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or ()
        names = [c.get("name") for c in strategy if isinstance(c, dict)]
        names += list(spec.get("admissionChecks") or ())
        return any(((self.checks.get(str(n)) or {}).get("spec") or {}).get("controllerName")
                   == keys.MULTIKUEUE_CONTROLLER for n in names)

    def facts(self, obj: JSON, namespace: str, policy: AdmissionPolicy) -> ClusterFacts:
        """What the webhook's lookups would find; owners are not listed, so a job owned by a
        known kind is reported as such rather than guessed at."""
        labels = self.namespaces.get(namespace)
        default_lq = (namespace, keys.DEFAULT_LOCAL_QUEUE) in self.local_queues
        default_wpc = (policy.gates.enabled("WorkloadPriorityClassDefaulting")
                       and keys.DEFAULT_PRIORITY_CLASS in self.priority_classes)
        queue = queue_name(obj) or (keys.DEFAULT_LOCAL_QUEUE if default_lq else "")
        multikueue = (bool(queue) and policy.gates.enabled("MultiKueue")
                      and self.uses_multikueue(namespace, queue))
        owners: dict[OwnerKey, JSON | None] = {}
        kind = kind_of(obj)
        related = resolve(kind.lifecycle if kind is not None else None, obj, self.related)
        for _ in range(MAX_OWNER_HOPS + 2):
            facts = ClusterFacts(labels, default_lq, default_wpc, multikueue, owners, related=related)
            try:
                find_managed_ancestor(obj, AdmissionContext(policy, facts))
            except OwnerLookupNeeded as need:
                owners[need.key] = None
                continue
            except AdmissionDenied:
                pass
            return facts
        return ClusterFacts(labels, default_lq, default_wpc, multikueue, owners, related=related)


# The API server completes a generateName with five characters from this alphabet (no
# vowels, no look-alikes) and keeps at most this much of the prefix.
_GENERATED_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_GENERATED_SUFFIX = 5
_GENERATED_PREFIX_MAX = 63 - _GENERATED_SUFFIX


def generated_name(prefix: str, serial: int) -> str:
    """The name a submission with ``metadata.generateName`` is predicted under: the prefix
    plus a suffix made from its place among the submissions, where the API server would pick
    a random one (so the same files give the same prediction)."""
    suffix = ""
    for _ in range(_GENERATED_SUFFIX):
        serial, digit = divmod(serial, len(_GENERATED_ALPHABET))
        suffix = _GENERATED_ALPHABET[digit] + suffix
    return prefix[:_GENERATED_PREFIX_MAX] + suffix


def _stamp(obj: JSON, uid: str, created: str, serial: int = 0) -> JSON:
    meta = dict(_meta(obj))
    meta.setdefault("namespace", "default")
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = generated_name(str(meta["generateName"]), serial)
    if not meta.get("name"):
        raise SubmissionError(f"a submitted {obj.get('kind')} has no metadata.name nor metadata.generateName")
    meta["uid"] = uid
    meta["creationTimestamp"] = created
    return {**obj, "metadata": meta}


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def submission_workloads(obj: JSON, listing: ClusterListing, policy: AdmissionPolicy,
                         serial: int, index: _Index | None = None) -> tuple[Submitted, list[JSON]]:
    """The Workloads a real submission of ``obj`` would queue, with the webhook's defaulting
    and validation and the job reconciler's rules; raises :class:`SubmissionError` when the
    API server would reject it or pykueue would not queue it."""
    index = index or _Index(listing)
    if not isinstance(obj, dict):
        raise SubmissionError("a submitted document is not a mapping")
    uid = f"{WHAT_IF_UID_PREFIX}{serial}"
    # Submitted one after the other, in the order given: that is their queue order among equals.
    created = _iso(listing.now + serial * SUBMISSION_GAP_S)
    obj = _stamp(copy.deepcopy(obj), uid, created, serial)
    meta = _meta(obj)
    namespace, name, kind_name = str(meta["namespace"]), str(meta["name"]), str(obj.get("kind"))
    ref = f"{kind_name} {namespace}/{name}"
    if namespace not in index.namespaces:
        raise SubmissionError(f"{ref}: namespace {namespace} not found")
    if kind_name == "Workload":
        wl = {**obj, "status": {}}
        return Submitted(ref, "", (f"{namespace}/{name}",)), [wl]
    kind = kind_of(obj)
    if kind is None:
        raise SubmissionError(f"{ref}: not a job kind pykueue runs ({obj.get('apiVersion')} {kind_name})")
    if kind.to_workloads is None:
        # Pods: their Workload comes from their whole group (or their LWS), not one manifest.
        raise SubmissionError(f"{ref}: pykueue cannot predict a {kind_name} on its own yet "
                              f"({obj.get('apiVersion')} {kind_name})")
    if not kind.enabled(policy):
        raise SubmissionError(f"{ref}: the {kind.name} integration is not enabled")
    facts = index.facts(obj, namespace, policy)
    ctx = AdmissionContext(policy, facts)
    try:
        if kind.webhook is not None:
            obj = kind.webhook.default(obj, ctx)
            errors = kind.webhook.validate(obj, None, ctx)
            if errors:
                raise SubmissionError(f"{ref}: the admission webhook would deny it: {aggregate(errors)}")
    except AdmissionDenied as exc:
        raise SubmissionError(f"{ref}: the admission webhook would deny it: {exc}") from exc
    labels = facts.namespace_labels or {}
    if not kind.lifecycle.is_managed(obj, policy, labels):
        raise SubmissionError(f"{ref}: pykueue would not manage it (no queue name, or its namespace "
                              "is not selected)")
    lifecycle = kind.lifecycle
    if isinstance(lifecycle, ReadsRelated):
        lifecycle = lifecycle.bind(facts.related)
    try:
        made = lifecycle.workloads(obj)
    except ObjectError as exc:
        raise SubmissionError(f"{ref}: pykueue could not make its Workload: {exc}") from exc
    workloads = []
    for i, wl in enumerate(made):
        wl_meta = dict(_meta(wl))
        wl_meta["uid"] = f"{uid}-{i}"
        wl_meta["creationTimestamp"] = created
        workloads.append({**wl, "metadata": wl_meta})
    if not workloads:
        raise SubmissionError(f"{ref}: it would make no Workload")
    owner = f"{obj.get('apiVersion')}/{kind_name} {namespace}/{name}"
    keys_ = tuple(f"{_meta(w).get('namespace') or namespace}/{_meta(w).get('name')}" for w in workloads)
    return Submitted(ref, owner, keys_), workloads


def what_if_scenario(listing: ClusterListing, submissions: Sequence[JSON],
                     policy: AdmissionPolicy) -> tuple[Scenario, list[Submitted]]:
    """The cluster's scenario with the submissions' Workloads applied after everything else."""
    scenario = snapshot_scenario(listing)
    index = _Index(listing)
    submitted: list[Submitted] = []
    taken = {f"{_meta(o).get('namespace')}/{_meta(o).get('name')}" for o in scenario.objects
             if o.get("kind") == "Workload"}
    for serial, obj in enumerate(submissions):
        sub, workloads = submission_workloads(obj, listing, policy, serial, index)
        for key in sub.workloads:
            if key in taken:
                raise SubmissionError(f"{sub.ref}: Workload {key} already exists")
            taken.add(key)
        scenario.objects.extend(workloads)
        submitted.append(sub)
    return scenario, submitted


def apply_snapshot(sim: Simulation, objects: Sequence[JSON],
                   submitted: Sequence[Submitted] = ()) -> list[str]:
    """Apply a snapshot's objects and settle. An object of the cluster the core cannot read is
    left out, as the manager ignores it (its one-line reasons are returned); a submitted one
    that fails is an error."""
    ours = {key for sub in submitted for key in sub.workloads}
    ignored: list[str] = []
    for obj in objects:
        meta = _meta(obj)
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        try:
            sim.apply(obj)
        except ScenarioError as exc:
            if obj.get("kind") == "Workload" and key in ours:
                raise
            ignored.append(f"{obj.get('kind')} {key if meta.get('namespace') else meta.get('name')}: {exc}")
    sim.settle()
    return ignored
