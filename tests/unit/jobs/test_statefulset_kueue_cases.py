"""Kueue v0.19.2's unit tables for StatefulSet, ported: the webhook
(``pkg/controller/jobs/statefulset/statefulset_webhook_test.go``: TestDefault,
TestValidateCreate, TestValidateUpdate), the pod reconciler (``statefulset_pod_reconciler_test.go``
TestPodReconciler), the reconciler (``statefulset_reconciler_test.go``: TestReconciler,
TestGetWorkloadName, TestHandle, TestReconciler_ClearOnHoldSetsReason) and the scale-down
release (``statefulset_release_test.go`` TestReleaseScaleDownReservation). Each case's id is
Kueue's test and case name; webhook errors are compared as Kueue's tables compare them, by
field and type.

How pykueue splits the work shows in how the reconciler cases are asked: Kueue's reconcilers
patch pods and Workloads through a client, pykueue's lifecycle says what to write (the pods
adopted, the Workloads wanted, whether they are on hold) and the core releases a held
Workload's quota. The pod cases run with the WorkloadIdentifierAnnotations gate at its
default (on: the group and prebuilt names are annotations), where Kueue's set it off (labels).
A pod here is adopted only when it names its StatefulSet as controller and carries the
``pod-suspending-parent: statefulset`` annotation, as every pod of a managed StatefulSet does;
Kueue's tables leave these out where they call a reconciler directly, so those cases add them.

Not ported, and why:

* the legacy Workload name (without the StatefulSet's UID) and its fallbacks ("should adopt
  legacy workload instead of creating duplicate", "should list pods by legacy workload name",
  "shouldn't relabel pod with legacy workload name when legacy workload exists", "should label
  new pod with legacy name when legacy workload exists"): Workloads made by Kueue releases
  before v0.19, which pykueue never made;
* the Workload owner references Kueue adds back ("should add StatefulSet to Workload owner
  references if replicas > 0", "shouldn't add StatefulSet to Workload owner references if
  replicas = 0"): releases before OnHold dropped the reference on a scale to zero; pykueue's
  Workloads keep it from their creation;
* the AdmissionGatedBy annotation copied to the Workload (the seven "...AdmissionGatedBy..."
  cases of TestReconciler): pykueue copies it from no job kind to its Workload;
* "statefulset not found" (TestReconciler): nothing to check, a missing object is not
  reconciled;
* "scale up from zero blocked by existing workload" (TestValidateUpdate): pykueue's webhook
  reads no Workloads; it refuses the scale-up while pods of the scale-down remain
  (``status.replicas``), and a Workload on hold, as pykueue keeps it, is let through in
  Kueue too;
* "not a statefulset" and "statefulset" of TestHandle: they check Go type assertions (the
  second hands the test wrapper, not a StatefulSet);
* TestReconcileDoesNotCancelTheWorkloadBranch: Go context cancellation between goroutines.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.jobs_to_workloads import workload_name
from pykueue.manager.core.status import workload_status
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.lifecycle import HoldsWorkloads
from pykueue.manager.jobs.statefulset.kind import workloads as sts_workloads
from pykueue.manager.jobs.statefulset.lifecycle import LIFECYCLE, ON_HOLD_MESSAGE, group_workload_name
from pykueue.manager.jobs.statefulset.webhook import WEBHOOK

from .serving_objects import (
    annotate,
    core_with,
    ctx,
    error_kinds,
    label,
    owner,
    queue,
    replicas,
    statefulset,
    status,
    template_annotation,
    uid,
)
from .test_deployment_kueue_cases import (
    ELASTIC_PATH,
    FORBIDDEN,
    GATED_CREATE,
    GATED_ON,
    GATED_PATH,
    INVALID,
    PRIORITY_PATH,
    QUEUE_PATH,
)

JSON = dict[str, Any]
Build = Callable[[], JSON]
PARENT = keys.POD_SUSPENDING_PARENT
REPLICAS_PATH = "spec.replicas"
NS_LABELS = {keys.NAMESPACE_NAME_LABEL: "ns"}


def _held(sts: JSON) -> JSON:
    """What the defaulter adds to a managed StatefulSet: the template's parent annotation."""
    return template_annotation(sts, PARENT, "statefulset")


# -- statefulset_webhook_test.go TestDefault -----------------------------------------------------

DEFAULT: list[tuple[str, Build, dict[str, Any], Build]] = [
    (
        "statefulset without queue with manageJobsWithoutQueueName",
        lambda: replicas(statefulset("test-pod", "test-ns"), 10),
        {"manage_without_queue": True},
        lambda: _held(replicas(statefulset("test-pod", "test-ns"), 10)),
    ),
    (
        "statefulset with queue",
        lambda: queue(replicas(statefulset(), 10), "test-queue"),
        {},
        lambda: _held(queue(replicas(statefulset(), 10), "test-queue")),
    ),
    (
        "statefulset managed by another framework",
        lambda: template_annotation(
            queue(replicas(statefulset(), 10), "test-queue"), PARENT, "test-framework"
        ),
        {},
        lambda: template_annotation(
            queue(replicas(statefulset(), 10), "test-queue"), PARENT, "test-framework"
        ),
    ),
    (
        "statefulset with queue and priority class",
        lambda: label(queue(replicas(statefulset(), 10), "test-queue"), keys.PRIORITY_CLASS, "test"),
        {},
        lambda: _held(label(queue(replicas(statefulset(), 10), "test-queue"), keys.PRIORITY_CLASS, "test")),
    ),
    (
        "statefulset without replicas",
        lambda: queue(statefulset(), "test-queue"),
        {},
        lambda: _held(queue(statefulset(), "test-queue")),
    ),
    (
        "default lq is created, job doesn't have queue label",
        lambda: statefulset("test-pod", "default"),
        {"default_local_queue": True},
        lambda: _held(queue(statefulset("test-pod", "default"), "default")),
    ),
    (
        "default lq is created, job has queue label",
        lambda: queue(statefulset(), "test-queue"),
        {"default_local_queue": True},
        lambda: _held(queue(statefulset(), "test-queue")),
    ),
    (
        "default lq isn't created, job doesn't have queue label",
        lambda: statefulset(),
        {},
        lambda: statefulset(),
    ),
]


@pytest.mark.parametrize("case,given,context,want", DEFAULT, ids=[c[0] for c in DEFAULT])
def test_default(case: str, given: Build, context: dict[str, Any], want: Build) -> None:
    # kueue v0.19.2 statefulset_webhook_test.go TestDefault (the case named in the id)
    assert WEBHOOK.default(given(), ctx(**context)) == want()


# -- statefulset_webhook_test.go TestValidateCreate ----------------------------------------------


def _gated(value: str) -> JSON:
    return annotate(queue(statefulset("test-sts", "default"), "queue"), keys.ADMISSION_GATED_BY, value)


CREATE: list[tuple[str, Build, dict[str, bool], list[tuple[str, str]]]] = [
    ("without queue", lambda: statefulset(), {}, []),
    ("valid queue name", lambda: queue(statefulset(), "test-queue"), {}, []),
    ("invalid queue name", lambda: queue(statefulset(), "test/queue"), {}, [(QUEUE_PATH, INVALID)]),
    (
        "statefulset managed by another framework",
        lambda: template_annotation(queue(statefulset(), "test/queue"), PARENT, "test-framework"),
        {},
        [],
    ),
    *[(case, (lambda v=value: _gated(v)), gates, want) for case, value, gates, want in GATED_CREATE],
    (
        "elastic job annotation is rejected",
        lambda: annotate(queue(statefulset("test-sts", "default"), "queue"), keys.ELASTIC_JOB, "true"),
        {"ElasticJobsViaWorkloadSlices": True},
        [(ELASTIC_PATH, FORBIDDEN)],
    ),
]


@pytest.mark.parametrize("case,obj,gates,want", CREATE, ids=[c[0] for c in CREATE])
def test_validate_create(case: str, obj: Build, gates: dict[str, bool], want: list[tuple[str, str]]) -> None:
    # kueue v0.19.2 statefulset_webhook_test.go TestValidateCreate (the case named in the id)
    assert error_kinds(WEBHOOK.validate(obj(), None, ctx(gates))) == want


# -- statefulset_webhook_test.go TestValidateUpdate ----------------------------------------------


def _bare(labels: dict[str, str] | None = None, ready: int = 0, n: int | None = None) -> JSON:
    """A StatefulSet given as a literal in Kueue's table: only the fields it sets."""
    obj: JSON = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"labels": dict(labels or {})},
        "spec": {},
    }
    if n is not None:
        obj["spec"]["replicas"] = n
    if ready:
        obj["status"] = {"readyReplicas": ready}
    return obj


def _no_changes() -> JSON:
    obj = _bare({keys.QUEUE_NAME: "queue1", keys.POD_GROUP_NAME: "group1"}, n=3)
    obj["spec"]["template"] = {"metadata": {"labels": {keys.QUEUE_NAME: "queue1"}}}
    return obj


def _sts(
    q: str | None = None,
    *,
    n: int | None = None,
    status_replicas: int | None = None,
    ready: int = 0,
    gated: str | None = None,
    name: str = "test-sts",
    ns: str = "test-ns",
) -> JSON:
    obj = statefulset(name, ns)
    if q is not None:
        queue(obj, q)
    if n is not None:
        replicas(obj, n)
    if status_replicas is not None:
        status(obj, replicas=status_replicas)
    if ready:
        status(obj, readyReplicas=ready)
    if gated is not None:
        annotate(obj, keys.ADMISSION_GATED_BY, gated)
    return obj


def _dq(gated: str | None = None) -> JSON:
    return _sts("queue", gated=gated, ns="default")


def _container_requests(cpu: str | None) -> Build:
    def build() -> JSON:
        obj = queue(statefulset("test-sts", "test-ns"), "test-queue")
        requests = {"cpu": cpu} if cpu else {}
        obj["spec"]["template"] = {
            "spec": {
                "containers": [{"name": "c", "image": "pause:0.1.1", "resources": {"requests": requests}}],
                "initContainers": [{"name": "ic", "image": "pause:0.1.1", "resources": {"requests": {}}}],
            }
        }
        return obj

    return build


AW = ("workload.codeflare.dev/v1beta2", "AppWrapper", "workload.codeflare.dev/appwrapper")
LWS = ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "leaderworkerset.x-k8s.io/leaderworkerset")


def _owned(by: tuple[str, str, str], **kw: Any) -> Build:
    name = "test-app-wrapper" if by is AW else "test-lws"
    return lambda: owner(_sts("test-queue", **kw), by[0], by[1], name, name)


def _owner_facts(by: tuple[str, str, str]) -> dict[str, Any]:
    name = "test-app-wrapper" if by is AW else "test-lws"
    obj = {
        "apiVersion": by[0],
        "kind": by[1],
        "metadata": {
            "name": name,
            "namespace": "test-ns",
            "uid": name,
            "labels": {keys.QUEUE_NAME: "test-queue"},
        },
    }
    return {"owners": {(by[0], by[1], "test-ns", name): obj}, "frameworks": ("statefulset", by[2])}


UPDATE: list[tuple[str, Build, Build, dict[str, Any], list[tuple[str, str]]]] = [
    ("no changes", _no_changes, _no_changes, {}, []),
    ("change in queue label", lambda: _sts("test-queue"), lambda: _sts("test-queue-new"), {}, []),
    (
        "change in queue label (ReadyReplicas > 0)",
        lambda: _sts("test-queue", ready=1),
        lambda: _sts("test-queue-new", ready=1),
        {},
        [(QUEUE_PATH, INVALID)],
    ),
    ("set queue label", lambda: _sts(), lambda: _sts("test-queue"), {}, []),
    (
        "set queue label (ReadyReplicas > 0)",
        lambda: _sts(ready=1),
        lambda: _sts("test-queue", ready=1),
        {},
        [(QUEUE_PATH, INVALID)],
    ),
    ("delete queue name", lambda: _sts("test-queue"), lambda: _sts(), {}, [(QUEUE_PATH, INVALID)]),
    (
        "statefulset managed by another framework",
        lambda: template_annotation(_sts("test-queue"), PARENT, "test-framework"),
        lambda: template_annotation(_sts(), PARENT, "test-framework"),
        {},
        [],
    ),
    (
        "change in priority class label when suspended",
        lambda: _bare({keys.QUEUE_NAME: "queue1", keys.PRIORITY_CLASS: "priority1"}),
        lambda: _bare({keys.QUEUE_NAME: "queue1", keys.PRIORITY_CLASS: "priority2"}),
        {},
        [],
    ),
    (
        "set in priority class label when replicas ready",
        lambda: _bare({keys.QUEUE_NAME: "queue1"}, ready=1),
        lambda: _bare({keys.QUEUE_NAME: "queue1", keys.PRIORITY_CLASS: "priority2"}, ready=1),
        {},
        [(PRIORITY_PATH, INVALID)],
    ),
    (
        "change in priority class label when replicas ready",
        lambda: _bare({keys.QUEUE_NAME: "queue1", keys.PRIORITY_CLASS: "priority1"}, ready=1),
        lambda: _bare({keys.QUEUE_NAME: "queue1", keys.PRIORITY_CLASS: "priority2"}, ready=1),
        {},
        [],
    ),
    (
        "delete in priority class label when replicas ready",
        lambda: _bare({keys.QUEUE_NAME: "queue1", keys.PRIORITY_CLASS: "priority1"}, ready=1),
        lambda: _bare({keys.QUEUE_NAME: "queue1"}, ready=1),
        {},
        [(PRIORITY_PATH, INVALID)],
    ),
    (
        "set in priority class label when replicas not ready",
        lambda: _bare({keys.QUEUE_NAME: "queue1"}),
        lambda: _bare({keys.QUEUE_NAME: "queue1", keys.PRIORITY_CLASS: "priority2"}),
        {},
        [],
    ),
    (
        "change in priority class label when replicas not ready",
        lambda: _bare({keys.QUEUE_NAME: "queue1", keys.PRIORITY_CLASS: "priority1"}),
        lambda: _bare({keys.QUEUE_NAME: "queue1", keys.PRIORITY_CLASS: "priority2"}),
        {},
        [],
    ),
    (
        "delete in priority class label when replicas not ready",
        lambda: _bare({keys.QUEUE_NAME: "queue1", keys.PRIORITY_CLASS: "priority1"}),
        lambda: _bare({keys.QUEUE_NAME: "queue1"}),
        {},
        [(PRIORITY_PATH, INVALID)],
    ),
    ("change in replicas (scale down to zero)", lambda: _bare(n=3), lambda: _bare(n=0), {}, []),
    ("change in replicas (scale up from zero)", lambda: _bare(n=0), lambda: _bare(n=3), {}, []),
    (
        "change in replicas (scale up while the previous scaling operation is still in progress)",
        lambda: _sts("test-queue", n=0, status_replicas=3),
        lambda: _sts("test-queue", n=3, status_replicas=1),
        {},
        [(REPLICAS_PATH, FORBIDDEN)],
    ),
    (
        "change in replicas (scale up)",
        lambda: _sts("test-queue", n=3),
        lambda: _sts("test-queue", n=4),
        {},
        [(REPLICAS_PATH, INVALID)],
    ),
    (
        "change in replicas (scale up without queue-name while the previous scaling operation is still in "
        "progress)",
        lambda: _sts(n=0, status_replicas=3),
        lambda: _sts(n=3, status_replicas=1),
        {},
        [],
    ),
    ("change in replicas (scale up without queue-name)", lambda: _sts(n=3), lambda: _sts(n=4), {}, []),
    (
        "change in replicas (scale up with AppWrapper ownerReference while the previous scaling operation is "
        "still in progress)",
        lambda: _sts("test-queue", n=0, status_replicas=3),
        _owned(AW, n=3, status_replicas=1),
        _owner_facts(AW),
        [],
    ),
    (
        "change in replicas (scale up with AppWrapper ownerReference)",
        lambda: _sts("test-queue", n=3),
        _owned(AW, n=4),
        _owner_facts(AW),
        [],
    ),
    (
        "change in replicas (scale up with LeaderWorkerSet ownerReference while the previous scaling "
        "operation is still in progress)",
        lambda: _sts("test-queue", n=0, status_replicas=3),
        _owned(LWS, n=3, status_replicas=1),
        _owner_facts(LWS),
        [],
    ),
    (
        "change in replicas (scale up with LeaderWorkerSet ownerReference)",
        lambda: _sts("test-queue", n=3),
        _owned(LWS, n=4),
        _owner_facts(LWS),
        [],
    ),
    (
        "attempt to change resources in container",
        _container_requests(None),
        _container_requests("1"),
        {},
        [("spec.template.spec.containers[0].resources.requests", INVALID)],
    ),
    # Kueue's case of this name changes the container's requests too (not the init container's).
    (
        "attempt to change resources in init container",
        _container_requests(None),
        _container_requests("1"),
        {},
        [("spec.template.spec.containers[0].resources.requests", INVALID)],
    ),
    (
        "scale up from zero allowed when workload does not exist",
        lambda: uid(_sts("test-queue", n=0, name="test-sts"), "test-sts-uid"),
        lambda: uid(_sts("test-queue", n=3, name="test-sts"), "test-sts-uid"),
        {},
        [],
    ),
    (
        "reject adding AdmissionGatedBy annotation after StatefulSet creation",
        lambda: _dq(),
        lambda: _dq("example.com/controller1"),
        {"gates": GATED_ON},
        [(GATED_PATH, FORBIDDEN)],
    ),
    (
        "allow removing AdmissionGatedBy annotation with single gate",
        lambda: _dq("example.com/controller1"),
        lambda: _dq(),
        {"gates": GATED_ON},
        [],
    ),
    (
        "allow removing AdmissionGatedBy annotation with multiple gates",
        lambda: _dq("example.com/controller1,example.com/controller2"),
        lambda: _dq(),
        {"gates": GATED_ON},
        [],
    ),
    (
        "allow removing one gate from AdmissionGatedBy annotation",
        lambda: _dq("example.com/controller1,example.com/controller2"),
        lambda: _dq("example.com/controller2"),
        {"gates": GATED_ON},
        [],
    ),
    (
        "reject injecting new gate in AdmissionGatedBy annotation",
        lambda: _dq("example.com/controller1,example.com/controller2"),
        lambda: _dq("example.com/controller3"),
        {"gates": GATED_ON},
        [(GATED_PATH, FORBIDDEN)],
    ),
    (
        "allow reordering gates in AdmissionGatedBy annotation",
        lambda: _dq("example.com/controller1,example.com/controller2"),
        lambda: _dq("example.com/controller2,example.com/controller1"),
        {"gates": GATED_ON},
        [],
    ),
    (
        "elastic job annotation is rejected on update",
        lambda: _dq(),
        lambda: annotate(_dq(), keys.ELASTIC_JOB, "true"),
        {"gates": {"ElasticJobsViaWorkloadSlices": True}},
        [(ELASTIC_PATH, FORBIDDEN)],
    ),
]


@pytest.mark.parametrize("case,old,new,context,want", UPDATE, ids=[c[0] for c in UPDATE])
def test_validate_update(
    case: str, old: Build, new: Build, context: dict[str, Any], want: list[tuple[str, str]]
) -> None:
    # kueue v0.19.2 statefulset_webhook_test.go TestValidateUpdate (the case named in the id)
    context = dict(context)
    gates = context.pop("gates", None)
    assert error_kinds(WEBHOOK.validate(new(), old(), ctx(gates, **context))) == want


# -- statefulset_pod_reconciler_test.go TestPodReconciler ----------------------------------------

STS_UID = "sts-uid"


def _k_sts(q: str | None = "queue", n: int | None = 3, priority: str | None = None) -> JSON:
    sts = uid(statefulset("sts", "ns"), STS_UID)
    if q:
        queue(sts, q)
    if n is not None:
        replicas(sts, n)
    if priority:
        label(sts, keys.PRIORITY_CLASS, priority)
    return sts


def _k_pod(
    *,
    owned: bool = True,
    parent: bool = True,
    phase: str | None = None,
    finalizer: bool = False,
    deleted: bool = False,
) -> JSON:
    """MakePod("pod", "ns") with what the case gives it."""
    pod: JSON = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pod", "namespace": "ns", "annotations": {}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {}, "limits": {}}}],
        },
    }
    if owned:
        pod["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "name": "sts",
                "uid": "sts",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    if parent:
        pod["metadata"]["annotations"][PARENT] = "statefulset"
    if phase:
        pod["status"] = {"phase": phase}
    if finalizer:
        pod["metadata"]["finalizers"] = [keys.MANAGED_POD_FINALIZER]
    if deleted:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return pod


def _adopted(pod: JSON, q: str | None = "queue", total: str = "3", priority: str | None = None) -> JSON:
    """The pod as the pod reconciler's setDefault leaves it."""
    out = copy.deepcopy(pod)
    labels = out["metadata"].setdefault("labels", {})
    labels[keys.MANAGED] = "true"
    if q:
        labels[keys.QUEUE_NAME] = q
    if priority:
        labels[keys.PRIORITY_CLASS] = priority
    name = group_workload_name(_k_sts())
    out["metadata"]["annotations"].update(
        {
            keys.PREBUILT_WORKLOAD_NAME: name,
            keys.POD_GROUP_NAME: name,
            keys.POD_GROUP_TOTAL_COUNT: total,
            keys.POD_GROUP_FAST_ADMISSION: "true",
            keys.POD_GROUP_SERVING: "true",
            keys.POD_GROUP_POD_INDEX_LABEL: keys.POD_INDEX_LABEL,
            keys.ROLE_HASH: "main",
        }
    )
    return out


def _labeled(q: str) -> JSON:
    """A pod already in the group (as the case labels it: queue, managed, group, total count)."""
    pod = _k_pod()
    pod["metadata"]["labels"] = {keys.QUEUE_NAME: q, keys.MANAGED: "true"}
    pod["metadata"]["annotations"].update(
        {keys.POD_GROUP_NAME: group_workload_name(_k_sts()), keys.POD_GROUP_TOTAL_COUNT: "3"}
    )
    return pod


def _without_finalizer(pod: JSON) -> JSON:
    out = copy.deepcopy(pod)
    out["metadata"]["finalizers"] = []
    return out


POD_CASES: list[tuple[str, Build, Build, Callable[[JSON], JSON | None]]] = [
    (
        "should finalize succeeded pod",
        lambda: _k_sts(None, None),
        lambda: _k_pod(phase="Succeeded", finalizer=True),
        _without_finalizer,
    ),
    (
        "should finalize failed pod",
        lambda: _k_sts(None, None),
        lambda: _k_pod(phase="Failed", finalizer=True),
        _without_finalizer,
    ),
    (
        "should finalize deleted pod",
        lambda: _k_sts(None, None),
        lambda: _k_pod(deleted=True, finalizer=True),
        _without_finalizer,
    ),
    (
        "shouldn't set default values without controller reference",
        lambda: _k_sts(None, None),
        lambda: _k_pod(owned=False),
        lambda pod: None,
    ),
    ("should set default values", lambda: _k_sts(), lambda: _k_pod(), _adopted),
    (
        "should set default values with priority class",
        lambda: _k_sts(priority="high-priority"),
        lambda: _k_pod(),
        lambda pod: _adopted(pod, priority="high-priority"),
    ),
    (
        "shouldn't update pod if already labeled",
        lambda: _k_sts(),
        lambda: _labeled("queue"),
        lambda pod: None,
    ),
    (
        "should sync queue label on already labeled pod",
        lambda: _k_sts("new-queue"),
        lambda: _labeled("old-queue"),
        lambda pod: _labeled("new-queue"),
    ),
    (
        "should set default values without queue name when manageJobsWithoutQueueName",
        lambda: _k_sts(None),
        lambda: _k_pod(),
        lambda pod: _adopted(pod, q=None),
    ),
]


@pytest.mark.parametrize("case,sts,pod,want", POD_CASES, ids=[c[0] for c in POD_CASES])
def test_pod_reconciler(case: str, sts: Build, pod: Build, want: Callable[[JSON], JSON | None]) -> None:
    # kueue v0.19.2 statefulset_pod_reconciler_test.go TestPodReconciler (the case named in the id)
    given = pod()
    assert LIFECYCLE.adopt(sts(), given) == want(given)


def test_pod_reconciler_without_queue_name() -> None:
    # kueue v0.19.2 statefulset_pod_reconciler_test.go TestPodReconciler "shouldn't set default
    # values without queue name": such a StatefulSet is not managed, so pykueue's reconciler never
    # adopts its pods (with manageJobsWithoutQueueName it is, as the last case above shows).
    sts = _k_sts(None)
    assert not LIFECYCLE.is_managed(sts, AdmissionPolicy(frameworks=frozenset({"statefulset"})), NS_LABELS)
    mjwqn = AdmissionPolicy(manage_jobs_without_queue_name=True, frameworks=frozenset({"statefulset"}))
    assert LIFECYCLE.is_managed(sts, mjwqn, NS_LABELS)


# -- statefulset_reconciler_test.go TestReconciler ------------------------------------------------


def _group_pod(
    name: str,
    *,
    phase: str | None = None,
    revision: str | None = None,
    gated: bool = False,
    deleted: bool = False,
) -> JSON:
    pod = _k_pod(phase=phase, finalizer=True, deleted=deleted)
    pod["metadata"]["name"] = name
    pod["metadata"]["annotations"][keys.POD_GROUP_NAME] = group_workload_name(_k_sts())
    pod["metadata"]["labels"] = {keys.QUEUE_NAME: "lq", keys.MANAGED: "true"}
    if revision:
        pod["metadata"]["labels"][keys.CONTROLLER_REVISION_HASH] = revision
    if gated:
        pod["spec"]["schedulingGates"] = [{"name": keys.ADMISSION_GATE}]
    return pod


def _written(sts: JSON, pods: list[JSON]) -> dict[str, JSON | None]:
    return {p["metadata"]["name"]: LIFECYCLE.adopt(sts, p) for p in pods}


def test_reconciler_statefulset_with_finished_pods() -> None:
    # kueue v0.19.2 statefulset_reconciler_test.go TestReconciler "statefulset with finished pods"
    sts = _k_sts("lq", 0)
    pods = [_group_pod("pod1", phase="Succeeded"), _group_pod("pod2", phase="Failed"), _group_pod("pod3")]
    written = _written(sts, pods)
    assert written["pod1"] == _without_finalizer(pods[0])
    assert written["pod2"] == _without_finalizer(pods[1])
    assert written["pod3"] is None  # keeps its finalizer
    assert sts_workloads(sts) == []  # scaled to zero: nothing created


def test_reconciler_statefulset_with_update_revision() -> None:
    # kueue v0.19.2 statefulset_reconciler_test.go TestReconciler "statefulset with update revision"
    sts = status(_k_sts("lq", None), currentRevision="1", updateRevision="2")
    pods = [
        _group_pod("pod1", revision="1", gated=True),
        _group_pod("pod2", revision="1"),
        _group_pod("pod3", revision="2", gated=True),
    ]
    written = _written(sts, pods)
    want1 = _without_finalizer(pods[0])
    del want1["spec"]["schedulingGates"]
    assert written["pod1"] == want1  # the current revision's pods run without waiting
    assert written["pod2"] == _without_finalizer(pods[1])
    assert written["pod3"] is None  # the update revision's wait for admission


def test_reconciler_should_finalize_deleted_pod() -> None:
    # kueue v0.19.2 statefulset_reconciler_test.go TestReconciler "should finalize deleted pod"
    pod = _group_pod("pod1", deleted=True)
    assert LIFECYCLE.adopt(_k_sts("lq", 0), pod) == _without_finalizer(pod)


def test_reconciler_should_keep_statefulset_in_workload_owner_references_if_replicas_0() -> None:
    # kueue v0.19.2 statefulset_reconciler_test.go TestReconciler "should keep StatefulSet in
    # Workload owner references if replicas = 0": scaled to zero, the StatefulSet still names its
    # Workload (so the reconciler keeps it, owned as it was) and holds it, creating nothing.
    sts = _k_sts("lq", 0)
    [kept] = LIFECYCLE.workloads(sts)
    assert kept["metadata"]["name"] == group_workload_name(sts)
    assert kept["metadata"]["ownerReferences"][0]["uid"] == STS_UID
    assert isinstance(LIFECYCLE, HoldsWorkloads) and LIFECYCLE.on_hold(sts) == ON_HOLD_MESSAGE
    assert LIFECYCLE.on_hold(_k_sts("lq", 1)) is None


def _want_workload(sts: JSON, topology: dict[str, str] | None = None) -> JSON:
    template: JSON = {"spec": copy.deepcopy(sts["spec"]["template"]["spec"])}
    podset: JSON = {"name": "main", "count": 1, "template": template}
    if topology:
        template["metadata"] = {"annotations": dict(topology)}
        podset["topologyRequest"] = {"required": next(iter(topology.values()))}
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": group_workload_name(sts),
            "namespace": "ns",
            "labels": {keys.JOB_UID: STS_UID},
            "annotations": {
                keys.IS_GROUP_WORKLOAD: "true",
                keys.JOB_OWNER_GVK: "apps/v1, Kind=StatefulSet",
                keys.JOB_OWNER_NAME: "sts",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": "sts",
                    "uid": STS_UID,
                    "controller": False,
                }
            ],
        },
        "spec": {"queueName": "lq", "podSets": [podset]},
    }


def test_reconciler_should_create_workload_when_replicas_gt_0_and_workload_doesnt_exist() -> None:
    # kueue v0.19.2 statefulset_reconciler_test.go TestReconciler "should create workload when
    # replicas > 0 and workload doesn't exist" (the resource-in-use finalizer and priority 0 are
    # the webhook's and the API's in pykueue)
    sts = _k_sts("lq", None)
    assert sts_workloads(sts) == [_want_workload(sts)]


def test_reconciler_should_create_workload_with_tas_topology_request_when_tas_enabled() -> None:
    # kueue v0.19.2 statefulset_reconciler_test.go TestReconciler "should create workload with TAS
    # topology request when TAS enabled" (less podIndexLabel: pykueue's requests carry none)
    topology = {keys.PODSET_REQUIRED_TOPOLOGY: "cloud.com/block"}
    sts = template_annotation(_k_sts("lq", None), keys.PODSET_REQUIRED_TOPOLOGY, "cloud.com/block")
    assert sts_workloads(sts) == [_want_workload(sts, topology)]


def test_reconciler_should_not_create_workload_when_replicas_0() -> None:
    # kueue v0.19.2 statefulset_reconciler_test.go TestReconciler "should not create workload when
    # replicas == 0"
    assert sts_workloads(_k_sts("lq", 0)) == []


def test_reconciler_should_not_create_workload_when_queue_name_is_empty() -> None:
    # kueue v0.19.2 statefulset_reconciler_test.go TestReconciler "should not create workload when
    # queue name is empty": not managed, so not reconciled
    policy = AdmissionPolicy(frameworks=frozenset({"statefulset"}))
    assert not LIFECYCLE.is_managed(_k_sts(None, None), policy, NS_LABELS)


# -- statefulset_reconciler_test.go TestGetWorkloadName, TestHandle -------------------------------

NAMES = [
    (
        "same name, different UIDs should produce different workload names",
        "uid-aaa",
        "prefix-abc12",
        "uid-bbb",
        "prefix-abc12",
        False,
    ),
    (
        "different names, different UIDs should produce different workload names",
        "uid-aaa",
        "sts-one",
        "uid-bbb",
        "sts-two",
        False,
    ),
    ("same name, same UID should produce same workload name", "uid-aaa", "sts", "uid-aaa", "sts", True),
]


@pytest.mark.parametrize("case,uid1,name1,uid2,name2,equal", NAMES, ids=[c[0] for c in NAMES])
def test_get_workload_name(case: str, uid1: str, name1: str, uid2: str, name2: str, equal: bool) -> None:
    # kueue v0.19.2 statefulset_reconciler_test.go TestGetWorkloadName (the case named in the id)
    def name(u: str, n: str) -> str:
        return group_workload_name(uid(statefulset(n, "ns"), u))

    assert (name(uid1, name1) == name(uid2, name2)) is equal
    assert name("uid-aaa", "sts") == workload_name("StatefulSet", "apps", "sts", "uid-aaa")


def test_handle_statefulset_managed_by_another_framework() -> None:
    # kueue v0.19.2 statefulset_reconciler_test.go TestHandle "statefulset managed by another framework"
    sts = template_annotation(queue(statefulset("sts", "default"), "lq"), PARENT, "test-framework")
    policy = AdmissionPolicy(frameworks=frozenset({"statefulset"}))
    assert not LIFECYCLE.is_managed(sts, policy, NS_LABELS)
    assert LIFECYCLE.is_managed(queue(statefulset("sts", "default"), "lq"), policy, NS_LABELS)


# -- statefulset_release_test.go and TestReconciler_ClearOnHoldSetsReason -------------------------


def _sts_workload(conditions: list[JSON], admitted: bool = False) -> JSON:
    wl = sts_workloads(_k_sts("lq", 1))[0]
    wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1"}
    wl["status"] = {"conditions": conditions}
    if admitted:
        wl["status"]["admission"] = {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": "main", "count": 1, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}}
            ],
        }
    return wl


def _reserved(core: QueueingCore) -> dict[str, Any]:
    key = f"ns/{group_workload_name(_k_sts())}"
    rec = core.workload(key)
    assert rec is not None
    status = workload_status(rec, core.now)
    return {
        "condition": next(c for c in status["conditions"] if c["type"] == "QuotaReserved"),
        "admission": status.get("admission"),
    }


def test_release_scale_down_reservation_releases_admitted_workload() -> None:
    # kueue v0.19.2 statefulset_release_test.go TestReleaseScaleDownReservation "releases admitted workload"
    core = core_with(
        _sts_workload(
            [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}],
            admitted=True,
        )
    )
    key = f"ns/{group_workload_name(_k_sts())}"
    assert core.usage_of("cq") == {("default", "cpu"): 1000}
    assert core.hold(key, ON_HOLD_MESSAGE)
    got = _reserved(core)
    assert (got["condition"]["status"], got["condition"]["reason"]) == ("False", "OnHold")
    assert got["condition"]["message"] == ON_HOLD_MESSAGE and got["admission"] is None
    assert core.usage_of("cq") == {("default", "cpu"): 0}
    core.run_until_idle()
    assert not core.workload(key).holds_quota  # not queued again while on hold


def test_release_scale_down_reservation_ignores_workload_without_active_reservation() -> None:
    # kueue v0.19.2 statefulset_release_test.go TestReleaseScaleDownReservation "ignores workload
    # without active reservation" (it is put on hold all the same: not queued while scaled to zero)
    core = core_with(_sts_workload([]))
    core.hold(f"ns/{group_workload_name(_k_sts())}", ON_HOLD_MESSAGE)
    assert _reserved(core)["admission"] is None
    core.run_until_idle()
    assert _reserved(core)["admission"] is None


def test_release_scale_down_reservation_ignores_finished_workload() -> None:
    # kueue v0.19.2 statefulset_release_test.go TestReleaseScaleDownReservation "ignores finished workload"
    core = core_with(
        _sts_workload(
            [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "True"},
                {"type": "Finished", "status": "True", "reason": "Succeeded"},
            ],
            admitted=True,
        )
    )
    assert not core.hold(f"ns/{group_workload_name(_k_sts())}", ON_HOLD_MESSAGE)


@pytest.mark.parametrize(
    "tiered,reason",
    [(False, "Pending"), (True, "PendingEvaluation")],
    ids=["UnadmittedWorkloadsObservability enabled: false", "UnadmittedWorkloadsObservability enabled: true"],
)
def test_reconciler_clear_on_hold_sets_reason(tiered: bool, reason: str) -> None:
    # kueue v0.19.2 statefulset_reconciler_test.go TestReconciler_ClearOnHoldSetsReason (the
    # scenario in the id)
    core = core_with(_sts_workload([{"type": "QuotaReserved", "status": "False", "reason": "OnHold"}]))
    key = f"ns/{group_workload_name(_k_sts())}"
    rec = core.workload(key)
    assert rec is not None and rec.on_hold is not None  # read back on hold
    assert core.unhold(key)
    status = workload_status(rec, core.now, tiered=tiered)
    cond = next(c for c in status["conditions"] if c["type"] == "QuotaReserved")
    assert (cond["status"], cond["reason"]) == ("False", reason)
    core.run_until_idle()
    assert rec.holds_quota  # queued again, and admitted
