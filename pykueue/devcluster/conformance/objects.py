"""Scenario objects as API requests: which resource, what to create, what to write as status.

Pure: no I/O. The API server ignores a client's creationTimestamp, status on create and
metadata it owns, so an object is split into the body to create and the status to write
afterwards through the status subresource. Creation timestamps have one-second precision
and equal ones are ordered by UID (random) in Kueue's queues, so the harness creates the
objects that queue (Workloads and jobs) in the order of their effective timestamps (the
file's value, or file order as ``simulate`` assumes) one second apart.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pykueue.api import keys
from pykueue.api.conversion import ConversionError, convert
from pykueue.api.quantity import resource_quantity
from pykueue.kube import resources
from pykueue.kube.resources import ResourceRef
from pykueue.manager.core.objects import ObjectError, podset_from
from pykueue.manager.core.tas.assignment import AssignmentError, TopologyAssignment

SCENARIO_START = datetime.fromisoformat("2026-01-01T00:00:00+00:00").timestamp()
# Kinds that enter queues: their relative creation times decide FIFO order.
QUEUED_KINDS = ("Workload", "Job")
_SERVER_OWNED = (
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "managedFields",
    "generation",
    "selfLink",
    "deletionTimestamp",
)

SERVICE_ACCOUNTS = ResourceRef("", "v1", "serviceaccounts", True, "ServiceAccount")
KINDS: dict[str, ResourceRef] = {
    ref.kind: ref
    for ref in (
        resources.WORKLOADS,
        resources.LOCAL_QUEUES,
        resources.CLUSTER_QUEUES,
        resources.RESOURCE_FLAVORS,
        resources.COHORTS,
        resources.ADMISSION_CHECKS,
        resources.TOPOLOGIES,
        resources.WORKLOAD_PRIORITY_CLASSES,
        resources.NODES,
        resources.PODS,
        resources.NAMESPACES,
        resources.JOBS,
    )
}
# Deleted in this order between scenarios: dependants before what they depend on.
RESET_ORDER = (
    "Job",
    "Workload",
    "Pod",
    "LocalQueue",
    "ClusterQueue",
    "Cohort",
    "AdmissionCheck",
    "ResourceFlavor",
    "Topology",
    "WorkloadPriorityClass",
    "Node",
)


class Unsupported(ValueError):
    """An object the harness cannot create faithfully through the API."""


@dataclass(frozen=True)
class Request:
    """One object to create: where, the body, and the status to write after it."""

    ref: ResourceRef
    body: dict[str, Any]
    status: dict[str, Any] | None

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        return str(self.body["metadata"]["namespace"]) if self.ref.namespaced else None

    @property
    def kind(self) -> str:
        return self.ref.kind


def _version_for(obj: dict[str, Any], served: dict[str, str]) -> dict[str, Any]:
    """The object in the version the cluster serves for its kind (Kueue kinds only)."""
    api_version = str(obj.get("apiVersion") or "")
    if not api_version.startswith(f"{keys.GROUP}/"):
        return obj
    want = served.get(str(obj.get("kind")), api_version.split("/", 1)[1])
    if api_version == f"{keys.GROUP}/{want}":
        return obj
    try:
        return convert(obj, f"{keys.GROUP}/{want}")
    except ConversionError as exc:
        raise Unsupported(str(exc)) from exc


def _ref(kind: str, version: str) -> ResourceRef:
    base = KINDS[kind]
    return ResourceRef(base.group, version, base.plural, base.namespaced, base.kind)


PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
# A scenario's verdict on a ProvisioningRequest check is what the cluster autoscaler reports on
# the ProvisioningRequest Kueue created; Kueue's controller turns that into the check's state.
PROVISIONING_VERDICTS = {"Ready": "Provisioned", "Retry": "Failed"}
# Kueue's controller holds a ProvisioningRequest check inactive until it names a
# ProvisioningRequestConfig; Kueue's own scheduler tests run without the controller, so
# their checks name none. The harness gives those this one.
PROVISIONING_CONFIG = "pykueue-conformance"


def provisioning_config(version: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{keys.GROUP}/{version}",
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": PROVISIONING_CONFIG},
        "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io"},
    }


# Scenario pods never run (no kubelet); the API still requires every container to name an image.
PLACEHOLDER_IMAGE = "registry.k8s.io/pause:3.10"


def _with_images(pod_spec: Any) -> None:
    if not isinstance(pod_spec, dict):
        return
    for key in ("initContainers", "containers"):
        for container in pod_spec.get(key) or ():
            if isinstance(container, dict):
                container.setdefault("image", PLACEHOLDER_IMAGE)


def _node_status(status: dict[str, Any] | None) -> dict[str, Any]:
    """A node is schedulable for Kueue's TAS when Ready; capacity stands in for allocatable."""
    out = copy.deepcopy(status or {})
    if "allocatable" not in out and "capacity" in out:
        out["allocatable"] = copy.deepcopy(out["capacity"])
    if "capacity" not in out and "allocatable" in out:
        out["capacity"] = copy.deepcopy(out["allocatable"])
    conditions = out.setdefault("conditions", [])
    if not any(c.get("type") == "Ready" for c in conditions):
        conditions.append(
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready (scenario)"}
        )
    return out


def _admission_check_status(status: dict[str, Any] | None) -> dict[str, Any]:
    """Without a status the check's controller is taken to run: Active, as ``simulate`` does."""
    out = copy.deepcopy(status or {})
    conditions = out.setdefault("conditions", [])
    if not any(c.get("type") == "Active" for c in conditions):
        conditions.append(
            {"type": "Active", "status": "True", "reason": "Active", "message": "active (scenario)"}
        )
    return out


def _has_transition_times(status: dict[str, Any], now: str) -> dict[str, Any]:
    """Conditions need a lastTransitionTime and a reason for the API server's validation.
    An unset time is the moment of creation: timeouts counted from a condition (Kueue's
    PodsReady timeout) start with the scenario, as in ``simulate``."""
    for condition in status.get("conditions") or ():
        condition.setdefault("lastTransitionTime", now)
        condition.setdefault("reason", condition.get("type", "Scenario"))
        condition.setdefault("message", "")
    return status


def _with_resource_usage(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """Kueue counts an admitted workload's quota from ``resourceUsage`` of each PodSet
    assignment (it writes them when it admits); a scenario may leave them out, as
    ``simulate`` derives them from the pod template: fill in the same numbers."""
    podsets = {str(ps.get("name") or "main"): ps for ps in spec.get("podSets") or () if isinstance(ps, dict)}
    for psa in (status.get("admission") or {}).get("podSetAssignments") or ():
        if psa.get("resourceUsage") or str(psa.get("name") or "main") not in podsets:
            continue
        name = str(psa.get("name") or "main")
        try:
            podset = podset_from(podsets[name], f"PodSet {name}")
        except ObjectError as exc:
            raise Unsupported(str(exc)) from exc
        count = int(psa.get("count", podset.count))
        psa["resourceUsage"] = {
            r: str(resource_quantity(r, v * count))
            for r, v in podset.requests.items()
            if r in (psa.get("flavors") or {})
        }
    return status


def _eviction_counted(status: dict[str, Any]) -> dict[str, Any]:
    """Kueue counts an eviction in ``schedulingStats`` when it evicts; a workload the file
    shows already evicted has that count, as ``simulate`` reports it among the evictions."""
    evicted = next((c for c in status.get("conditions") or () if c.get("type") == "Evicted"), None)
    if evicted is None or evicted.get("status") != "True" or status.get("schedulingStats"):
        return status
    reason = str(evicted.get("reason") or "Evicted")
    status["schedulingStats"] = {"evictions": [{"reason": reason, "underlyingCause": "", "count": 1}]}
    return status


def _v1beta2_topology(status: dict[str, Any]) -> dict[str, Any]:
    """A scenario may spell a topology assignment in the flat levels/domains layout; the
    v1beta2 API takes only slices."""
    for psa in (status.get("admission") or {}).get("podSetAssignments") or ():
        raw = psa.get("topologyAssignment")
        if isinstance(raw, dict) and "domains" in raw:
            try:
                psa["topologyAssignment"] = TopologyAssignment.from_simple(raw).to_v1beta2()
            except (AssignmentError, KeyError, ValueError, TypeError) as exc:
                raise Unsupported(f"topologyAssignment: {exc}") from exc
    return status


def request(obj: dict[str, Any], served: dict[str, str], now: str = "2026-01-01T00:00:00Z") -> Request:
    """The create request for a scenario object; raises Unsupported for kinds it cannot do."""
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        raise Unsupported("an object without metadata")
    kind = str(obj.get("kind"))
    if kind not in KINDS:
        raise Unsupported(f"{obj.get('apiVersion')} {kind} (no controller for it in the harness)")
    meta = obj["metadata"]
    if not meta.get("name"):
        raise Unsupported(f"{kind} without a fixed name (generateName)")
    obj = _version_for(obj, served)
    body = {k: copy.deepcopy(v) for k, v in obj.items() if k != "status"}
    body["metadata"] = {k: v for k, v in body["metadata"].items() if k not in _SERVER_OWNED}
    ref = _ref(kind, str(obj["apiVersion"]).rsplit("/", 1)[-1])
    if ref.namespaced:
        body["metadata"]["namespace"] = meta.get("namespace") or "default"
    spec = body.get("spec") or {}
    if (
        kind == "AdmissionCheck"
        and spec.get("controllerName") == PROVISIONING_CONTROLLER
        and not spec.get("parameters")
    ):
        spec["parameters"] = {
            "apiGroup": keys.GROUP,
            "kind": "ProvisioningRequestConfig",
            "name": PROVISIONING_CONFIG,
        }
    if kind == "Pod":
        _with_images(body.get("spec"))
    elif kind == "Job":
        _with_images(((body.get("spec") or {}).get("template") or {}).get("spec"))
    elif kind == "Workload":  # Kueue copies these templates into PodTemplates for ProvisioningRequests
        for pod_set in (body.get("spec") or {}).get("podSets") or ():
            _with_images(((pod_set or {}).get("template") or {}).get("spec"))
    status = obj.get("status")
    out_status: dict[str, Any] | None
    if kind == "Node":
        out_status = _node_status(status)
    elif kind == "AdmissionCheck":
        out_status = _has_transition_times(_admission_check_status(status), now)
    elif kind == "Workload" and status:
        out_status = _eviction_counted(_with_resource_usage(body.get("spec") or {}, copy.deepcopy(status)))
        if ref.version == "v1beta2":
            out_status = _v1beta2_topology(out_status)
        out_status = _has_transition_times(out_status, now)
    elif kind == "Pod" and status:
        out_status = _has_transition_times(copy.deepcopy(status), now)
    else:
        out_status = None
    return Request(ref, body, out_status)


def creation_order(objects: list[dict[str, Any]]) -> list[tuple[dict[str, Any], bool]]:
    """Objects in the order to create them, each with whether it must get a later creation
    second than the queued object before it: everything else in file order first, then the
    queued kinds by effective timestamp (ties keep file order)."""
    others = [o for o in objects if o.get("kind") not in QUEUED_KINDS]
    queued = [o for o in objects if o.get("kind") in QUEUED_KINDS]

    def effective(indexed: tuple[int, dict[str, Any]]) -> tuple[float, int]:
        index, obj = indexed
        stamp = (obj.get("metadata") or {}).get("creationTimestamp")
        if stamp:
            return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp(), index
        return SCENARIO_START + (index + 1) * 1e-6, index

    ordered = [o for _, o in sorted(enumerate(queued), key=effective)]
    return [(o, False) for o in others] + [(o, True) for o in ordered]


def namespaces_of(objects: list[dict[str, Any]]) -> list[str]:
    """Namespaces the objects live in, in first-use order."""
    seen: list[str] = []
    for obj in objects:
        kind = str(obj.get("kind"))
        ref = KINDS.get(kind)
        if ref is None or not ref.namespaced:
            continue
        ns = str((obj.get("metadata") or {}).get("namespace") or "default")
        if ns not in seen:
            seen.append(ns)
    return seen


def finished_eviction(wl: dict[str, Any], now: str) -> dict[str, Any] | None:
    """The status a job controller writes once an evicted workload's job has stopped, for a
    Workload without an owner (no job, so nothing else would): the reservation is dropped
    (QuotaReserved False, no admission) and Admitted follows it. Kueue keeps an evicted
    workload's quota until then, so a scenario's bare Workloads need this to be preempted
    as ``simulate`` (which plays the job controller) sees it. None: nothing to do."""
    if (wl.get("metadata") or {}).get("ownerReferences"):
        return None
    status = copy.deepcopy(wl.get("status") or {})
    conditions = {c.get("type"): c for c in status.get("conditions") or ()}
    evicted = conditions.get("Evicted") or {}
    if evicted.get("status") != "True" or (conditions.get("QuotaReserved") or {}).get("status") != "True":
        return None
    message = str(evicted.get("message") or "evicted")
    replaced = {
        "QuotaReserved": {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": message,
            "lastTransitionTime": now,
        }
    }
    if (conditions.get("Admitted") or {}).get("status") == "True":
        replaced["Admitted"] = {
            "type": "Admitted",
            "status": "False",
            "reason": "NoReservation",
            "message": "The workload has no reservation",
            "lastTransitionTime": now,
        }
    status["conditions"] = [replaced.get(c.get("type"), c) for c in status.get("conditions") or ()]
    status.pop("admission", None)
    return status


def job_pods_follow_suspend(job: dict[str, Any]) -> bool:
    """What kube-controller-manager and kubelets make of a batch Job's status: an unsuspended
    Job gets its pods, running and ready (Kueue derives PodsReady from ``status.ready``); a
    suspended one has none, and no start time. Edits ``job``; False when it is so already."""
    spec = job.get("spec") or {}
    status = job.setdefault("status", {})
    if spec.get("suspend"):
        if not (status.get("active") or status.get("ready") or status.get("startTime")):
            return False
        status.update(active=0, ready=0)
        status.pop("startTime", None)
        return True
    parallelism = int(spec.get("parallelism", 1))
    pods = min(parallelism, int(spec.get("completions") or parallelism))
    if status.get("active") == pods and status.get("ready") == pods and status.get("startTime"):
        return False
    status.update(active=pods, ready=pods)
    status.setdefault("startTime", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    return True


def provisioning_checks(objs: list[dict[str, Any]]) -> set[str]:
    """Names of the scenario's AdmissionChecks that Kueue's ProvisioningRequest controller runs."""
    return {
        str(o["metadata"]["name"])
        for o in objs
        if o.get("kind") == "AdmissionCheck"
        and (o.get("spec") or {}).get("controllerName") == PROVISIONING_CONTROLLER
    }


def autoscaler_verdict(request: dict[str, Any], state: str, now: str) -> bool:
    """Sets on a ProvisioningRequest the condition the cluster autoscaler reports for the
    scenario's check ``state``; False when it is set already. Edits ``request``."""
    kind = PROVISIONING_VERDICTS[state]
    status = request.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or () if c.get("type") != kind]
    if len(conditions) < len(status.get("conditions") or ()):
        return False
    conditions.append(
        {
            "type": kind,
            "status": "True",
            "reason": kind,
            "message": "set by the scenario",
            "lastTransitionTime": now,
        }
    )
    status["conditions"] = conditions
    return True


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name"))


def waiting_cluster_queues(workloads: list[dict[str, Any]], local_queues: list[dict[str, Any]]) -> set[str]:
    """ClusterQueues that have a Workload waiting for quota (no admission, not finished),
    found through the LocalQueue it names."""
    queues = {_key(lq): str((lq.get("spec") or {}).get("clusterQueue") or "") for lq in local_queues}
    waiting: set[str] = set()
    for wl in workloads:
        status = wl.get("status") or {}
        conditions = status.get("conditions") or ()
        if status.get("admission") or any(
            c.get("type") == "Finished" and c.get("status") == "True" for c in conditions
        ):
            continue
        cq = queues.get((_key(wl)[0], str((wl.get("spec") or {}).get("queueName") or "")))
        if cq:
            waiting.add(cq)
    return waiting
