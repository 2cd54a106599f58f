"""JobSet admission: defaulting (suspend, default LocalQueue, MultiKueue managedBy) and
validation on create and update.

The tests named after Kueue's ``pkg/controller/jobs/jobset/jobset_webhook_test.go`` (v0.19.2)
take their inputs and expected outcomes from that file's tables; denials are compared as
Kubernetes' field.Error prints them (path, then type, value and detail).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.api.fields import FieldError
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.gates import FeatureGates
from pykueue.manager.jobs.jobset.lifecycle import OWN_CONTROLLER
from pykueue.manager.jobs.jobset.webhook import WEBHOOK
from pykueue.webhook.facts import ApiLookup, resolve_facts

from .jobset_objects import jobset, replicated_job

SOURCE = "kueue v0.19.2 jobset_webhook_test.go"
DEFAULT_NS = {"kubernetes.io/metadata.name": "default"}
JOBSETS = frozenset({"batch/job", "jobset.x-k8s.io/jobset"})
REQ, PREF = keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_PREFERRED_TOPOLOGY
GROUP, SLICE, SLICE_SIZE = keys.PODSET_GROUP_NAME, keys.PODSET_SLICE_REQUIRED_TOPOLOGY, keys.PODSET_SLICE_SIZE


def _ctx(gates: Mapping[str, bool] | None = None, facts: ClusterFacts | None = None,
         **policy: Any) -> AdmissionContext:
    admission = AdmissionPolicy(frameworks=JOBSETS, gates=FeatureGates(dict(gates or {})), **policy)
    return AdmissionContext(admission, facts or ClusterFacts(namespace_labels=DEFAULT_NS))


def _annotations_path(i: int) -> str:
    return f"spec.replicatedJobs[{i}].template.spec.template.metadata.annotations"


# -- defaulting -------------------------------------------------------------------------------


def test_a_queued_jobset_is_suspended() -> None:
    out = WEBHOOK.default(jobset("js", "default", replicated_job("rj"), queue="lq", suspend=None), _ctx())
    assert out["spec"]["suspend"] is True
    out = WEBHOOK.default(jobset("js", "default", replicated_job("rj"), queue="lq", suspend=False), _ctx())
    assert out["spec"]["suspend"] is True


def test_a_jobset_without_queue_is_left_running() -> None:
    obj = jobset("js", "default", replicated_job("rj"), suspend=False)
    assert WEBHOOK.default(copy.deepcopy(obj), _ctx()) == obj


def test_without_queue_under_manage_jobs_without_queue_name_it_is_suspended() -> None:
    obj = jobset("js", "default", replicated_job("rj"), suspend=False)
    out = WEBHOOK.default(obj, _ctx(manage_jobs_without_queue_name=True))
    assert out["spec"]["suspend"] is True
    assert keys.QUEUE_NAME not in out["metadata"]["labels"]


def test_the_default_local_queue_is_named_when_it_exists() -> None:
    facts = ClusterFacts(namespace_labels={}, default_local_queue=True)
    out = WEBHOOK.default(jobset("js", "default", replicated_job("rj"), suspend=False), _ctx(facts=facts))
    assert out["metadata"]["labels"][keys.QUEUE_NAME] == "default" and out["spec"]["suspend"] is True
    out = WEBHOOK.default(jobset("js", "default", replicated_job("rj"), queue="mine"), _ctx(facts=facts))
    assert out["metadata"]["labels"][keys.QUEUE_NAME] == "mine"


def test_managed_by_goes_to_multikueue_when_the_queue_dispatches() -> None:
    facts = ClusterFacts(namespace_labels={}, queue_uses_multikueue=True)
    out = WEBHOOK.default(jobset("js", "default", replicated_job("rj"), queue="lq"), _ctx(facts=facts))
    assert out["spec"]["managedBy"] == keys.MULTIKUEUE_CONTROLLER
    out = WEBHOOK.default(jobset("js", "default", replicated_job("rj"), queue="lq",
                                 managed_by=OWN_CONTROLLER), _ctx(facts=facts))
    assert out["spec"]["managedBy"] == keys.MULTIKUEUE_CONTROLLER
    out = WEBHOOK.default(jobset("js", "default", replicated_job("rj"), queue="lq",
                                 managed_by="example.com/x"), _ctx(facts=facts))
    assert out["spec"]["managedBy"] == "example.com/x"
    out = WEBHOOK.default(jobset("js", "default", replicated_job("rj"), queue="lq"),
                          _ctx(gates={"MultiKueue": False}, facts=facts))
    assert "managedBy" not in out["spec"]


# -- validation -------------------------------------------------------------------------------


def test_topology_annotations_are_checked_on_every_replicated_job() -> None:
    obj = jobset("js", "default",
                 replicated_job("ok", pod_annotations={REQ: "cloud.com/rack"}),
                 replicated_job("bad", pod_annotations={REQ: "cloud.com/rack", SLICE: "cloud.com/host"}))
    errors = WEBHOOK.validate(obj, None, _ctx())
    assert [e.path for e in errors] == [f"{_annotations_path(1)}[{SLICE_SIZE}]"]
    assert errors[0].problem.startswith("Required value")
    assert WEBHOOK.validate(obj, None, _ctx(gates={"TopologyAwareScheduling": False})) == []


def test_slice_size_is_bounded_by_the_pod_set_count_of_replicas_times_pods() -> None:
    ann = {REQ: "cloud.com/block", SLICE: "cloud.com/rack", SLICE_SIZE: "6"}
    ok = jobset("js", "default", replicated_job("rj", replicas=2, parallelism=3, completions=3,
                                                pod_annotations=ann))
    assert WEBHOOK.validate(ok, None, _ctx()) == []
    too_big = jobset("js", "default", replicated_job("rj", replicas=2, parallelism=3, completions=2,
                                                     pod_annotations=ann))
    assert WEBHOOK.validate(too_big, None, _ctx()) == [FieldError(
        f"{_annotations_path(0)}[{SLICE_SIZE}]",
        'Invalid value: "6": must not be greater than pod set count 4')]


def test_queue_name_is_immutable_while_running() -> None:
    old = jobset("js", "default", replicated_job("rj"), queue="a", suspend=False)
    new = jobset("js", "default", replicated_job("rj"), queue="b", suspend=False)
    assert WEBHOOK.validate(new, old, _ctx()) == [FieldError(
        f"metadata.labels[{keys.QUEUE_NAME}]", 'Invalid value: "b": field is immutable')]
    new["spec"]["suspend"] = True
    assert WEBHOOK.validate(new, old, _ctx()) == []


def test_update_reruns_the_creation_rules() -> None:
    old = jobset("js", "default", replicated_job("rj"), queue="q")
    new = jobset("js", "default", replicated_job("rj"), queue="bad_queue")
    [error] = WEBHOOK.validate(new, old, _ctx())
    assert error.path == f"metadata.labels[{keys.QUEUE_NAME}]"
    assert error.problem.startswith('Invalid value: "bad_queue": a lowercase RFC 1123 subdomain')


# -- Kueue's TestValidateCreate ---------------------------------------------------------------

RFC1123 = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
           "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
           r"validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
MORE_THAN_ONE = ('Invalid value: must not contain more than one topology annotation: '
                 '["kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology", '
                 '"kueue.x-k8s.io/podset-unconstrained-topology"]')
TAS = {"TopologyAwareScheduling": True}


def _a(**pairs: str) -> dict[str, str]:
    names = {"req": REQ, "pref": PREF, "group": GROUP, "slice": SLICE, "size": SLICE_SIZE}
    return {names[k]: v for k, v in pairs.items()}


def _rja(name: str, replicas: int, parallelism: int, completions: int, **pairs: str) -> dict[str, Any]:
    """A replicated job as Kueue's table writes it: numbers it leaves out are Go's zero."""
    return replicated_job(name, replicas=replicas, parallelism=parallelism, completions=completions,
                          pod_annotations=_a(**pairs))


def _named(function: str, cases: list[Any]) -> list[Any]:
    """``cases`` with ids naming Kueue's source: file, test function and case name."""
    return [pytest.param(*c.values, id=f'{SOURCE} {function} "{c.id}"') for c in cases]


def _group_mismatch(group: str = "groupname") -> list[FieldError]:
    template = (f"Invalid value: must specify '{REQ}' or '{PREF}' topology consistent with '%s' "
                f"in group '{group}'")
    return [FieldError(_annotations_path(0), template % _annotations_path(1)),
            FieldError(_annotations_path(1), template % _annotations_path(0))]


CREATE_CASES = _named("TestValidateCreate", [
    pytest.param(jobset("job", "default", queue="queue"), {}, [], id="simple"),
    pytest.param(jobset("job", "default", queue="queue_name"), {},
                 [FieldError(f"metadata.labels[{keys.QUEUE_NAME}]",
                             f'Invalid value: "queue_name": {RFC1123}')],
                 id="invalid queue-name label"),
    pytest.param(jobset("job", "default", queue="queue",
                        labels={keys.PREBUILT_WORKLOAD_NAME: "prebuilt-workload"}),
                 {}, [], id="with prebuilt workload"),
    pytest.param(jobset("job", "default", queue="queue",
                        annotations={keys.PREBUILT_WORKLOAD_NAME: "prebuilt-workload"}),
                 {"WorkloadIdentifierAnnotations": True}, [],
                 id="valid prebuilt workload annotation, WorkloadIdentifierAnnotations enabled"),
    pytest.param(jobset("job", "default", queue="queue",
                        labels={keys.PREBUILT_WORKLOAD_NAME: "prebuilt-workload-label"},
                        annotations={keys.PREBUILT_WORKLOAD_NAME: "prebuilt-workload-annotation"}),
                 {"WorkloadIdentifierAnnotations": True}, [],
                 id="different prebuilt workload label and annotation, label ignored, "
                    "WorkloadIdentifierAnnotations enabled"),
    pytest.param(jobset("job", "default", _rja("launcher", 0, 0, 0, req="cloud.com/block"),
                        _rja("worker", 0, 0, 0, req="cloud.com/block")),
                 TAS, [], id="valid topology request"),
    pytest.param(jobset("job", "default", _rja("launcher", 0, 0, 0, req="cloud.com/block"),
                        _rja("worker", 0, 0, 0, pref="cloud.com/block", req="cloud.com/block")),
                 TAS, [FieldError(_annotations_path(1), MORE_THAN_ONE)], id="invalid topology request"),
    pytest.param(jobset("jobset", "default", _rja("job1", 2, 1, 1, req="cloud.com/block",
                                                  slice="cloud.com/block", size="20")),
                 TAS, [FieldError(f"{_annotations_path(0)}[{SLICE_SIZE}]",
                                  'Invalid value: "20": must not be greater than pod set count 2')],
                 id="invalid slice topology request - slice size larger than number of podsets"),
    pytest.param(jobset("job", "default", _rja("launcher", 1, 1, 1, group="groupname", req="cloud.com/block"),
                        _rja("worker", 4, 1, 1, group="groupname", req="cloud.com/block")),
                 TAS, [], id="valid PodSet grouping request"),
    pytest.param(jobset("jobset", "default",
                        _rja("job1", 1, 1, 1, req="cloud.com/block", group="1podset"),
                        _rja("job2", 1, 1, 1, req="cloud.com/block", group="3podsets"),
                        _rja("job3", 2, 1, 1, req="cloud.com/block", group="3podsets"),
                        _rja("job4", 2, 2, 1, req="cloud.com/block", group="3podsets")),
                 TAS,
                 [FieldError(f"{_annotations_path(0)}[{GROUP}]",
                             'Invalid value: "1podset": can only define groups of exactly 2 pod sets, '
                             "got: 1 pod set(s)"),
                  *(FieldError(f"{_annotations_path(i)}[{GROUP}]",
                               'Invalid value: "3podsets": can only define groups of exactly 2 pod sets, '
                               "got: 3 pod set(s)")
                    for i in (1, 2, 3))],
                 id="invalid PodSet grouping request - groups of size other than 2"),
    pytest.param(jobset("jobset", "default",
                        _rja("job1", 2, 1, 1, req="cloud.com/block", group="groupname"),
                        _rja("job2", 1, 3, 3, req="cloud.com/block", group="groupname")),
                 TAS,
                 [FieldError(f"{_annotations_path(i)}[{GROUP}]",
                             'Invalid value: "groupname": can only define groups where at least one pod set '
                             "has only 1 replica, got: 2 replica(s) and 3 replica(s) in the group")
                  for i in (0, 1)],
                 id="invalid PodSet grouping request - no leader in group"),
    pytest.param(jobset("jobset", "default",
                        _rja("job1", 1, 1, 1, req="cloud.com/rack", group="groupname"),
                        _rja("job2", 2, 1, 1, req="cloud.com/block", group="groupname")),
                 TAS, _group_mismatch(),
                 id="invalid PodSet grouping request - required topology does not match"),
    pytest.param(jobset("jobset", "default",
                        _rja("job1", 1, 1, 1, pref="cloud.com/rack", group="groupname"),
                        _rja("job2", 2, 1, 1, pref="cloud.com/block", group="groupname")),
                 TAS, _group_mismatch(),
                 id="invalid PodSet grouping request - preferred topology does not match"),
    pytest.param(jobset("jobset", "default",
                        _rja("job1", 1, 1, 1, req="cloud.com/rack", group="groupname"),
                        _rja("job2", 2, 1, 1, group="groupname", pref="cloud.com/block")),
                 TAS, _group_mismatch(),
                 id="invalid PodSet grouping request - different topology annotations within group"),
])


@pytest.mark.parametrize(("obj", "gates", "want"), CREATE_CASES)
def test_kueue_validate_create(obj: dict[str, Any], gates: dict[str, bool], want: list[FieldError]) -> None:
    assert WEBHOOK.validate(obj, None, _ctx(gates)) == want


# -- Kueue's TestValidateUpdate ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("new_annotations", "want"),
    [
        pytest.param(_a(pref="cloud.com/block"), [],
                     id=f'{SOURCE} TestValidateUpdate "set valid topology request"'),
        pytest.param(_a(pref="cloud.com/block", req="cloud.com/block"),
                     [FieldError(_annotations_path(0), MORE_THAN_ONE)],
                     id=f'{SOURCE} TestValidateUpdate "attempt to set invalid topology request"'),
    ],
)
def test_kueue_validate_update(new_annotations: dict[str, str], want: list[FieldError]) -> None:
    old = jobset("job", "default", replicated_job("worker", replicas=0, parallelism=0, completions=0,
                                                  pod_annotations={}))
    new = jobset("job", "default", replicated_job("worker", replicas=0, parallelism=0, completions=0,
                                                  pod_annotations=new_annotations))
    assert WEBHOOK.validate(new, old, _ctx(TAS)) == want


# -- Kueue's TestDefault ----------------------------------------------------------------------


class _Store:
    """An informer store that has synced, holding the given objects."""

    has_synced = True

    def __init__(self, *objs: dict[str, Any]) -> None:
        self.objs = {(o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objs}

    def get_by_name(self, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self.objs.get((namespace, name))


def _lq(name: str, cq: str = "cluster-queue") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"clusterQueue": cq}}


def _cq(*checks: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"admissionChecks": list(checks)} if checks else {}
    return {"metadata": {"name": "cluster-queue"}, "spec": spec}


MULTIKUEUE_CHECK = {"metadata": {"name": "admission-check"},
                    "spec": {"controllerName": keys.MULTIKUEUE_CONTROLLER},
                    "status": {"conditions": [{"type": "Active", "status": "True"}]}}
WITH_CHECK = {"LocalQueue": [_lq("local-queue")], "ClusterQueue": [_cq("admission-check")],
              "AdmissionCheck": [MULTIKUEUE_CHECK]}


def _defaulted(obj: dict[str, Any], cluster: Mapping[str, list[dict[str, Any]]],
               gates: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """``obj`` through the JobSet defaulter, the facts resolved from ``cluster`` as the webhook does."""
    stores = {kind: _Store(*cluster.get(kind, ())) for kind in
              ("LocalQueue", "ClusterQueue", "AdmissionCheck", "ResourceFlavor", "WorkloadPriorityClass")}
    stores["Namespace"] = _Store({"metadata": {"name": "default",
                                               "labels": {"kubernetes.io/metadata.name": "default"}}})
    policy = AdmissionPolicy(frameworks=JOBSETS, gates=FeatureGates(dict(gates or {})))
    facts = asyncio.run(resolve_facts(obj, "default", policy, ApiLookup(None, stores)))
    return WEBHOOK.default(obj, AdmissionContext(policy, facts))


def _bare(queue: str | None = None, managed_by: str | None = None) -> dict[str, Any]:
    """A JobSet as Kueue's TestDefault writes most of them: no spec but managedBy."""
    labels = {} if queue is None else {keys.QUEUE_NAME: queue}
    spec = {} if managed_by is None else {"managedBy": managed_by}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"namespace": "default", "labels": labels}, "spec": spec}


MK = {"MultiKueue": True}


@pytest.mark.parametrize(
    ("obj", "cluster", "gates", "want_managed_by"),
    _named("TestDefault", [
        pytest.param(_bare("local-queue", OWN_CONTROLLER), WITH_CHECK, MK, keys.MULTIKUEUE_CONTROLLER,
                     id="TestDefault_JobSetManagedBy_jobsetapi.JobSetControllerName"),
        pytest.param(_bare("local-queue"), WITH_CHECK, MK, keys.MULTIKUEUE_CONTROLLER,
                     id="TestDefault_WithQueueLabel"),
        pytest.param(_bare(), {}, MK, None, id="TestDefault_WithoutQueueLabel"),
        pytest.param(_bare("invalid-queue"), {}, MK, None, id="TestDefault_InvalidQueueName"),
        pytest.param(_bare("non-existent-queue"), {}, MK, None, id="TestDefault_QueueNotFound"),
        pytest.param(_bare("local-queue"), {"LocalQueue": [_lq("local-queue")],
                                            "ClusterQueue": [_cq("non-existent-admission-check")]},
                     MK, None, id="TestDefault_AdmissionCheckNotFound"),
        pytest.param(_bare("local-queue"), WITH_CHECK, {"MultiKueue": False}, None,
                     id="TestDefault_MultiKueueFeatureDisabled"),
        pytest.param(_bare("local-queue", "example.com/foo"), WITH_CHECK, MK, "example.com/foo",
                     id="TestDefault_UserSpecifiedManagedBy"),
        pytest.param(_bare("local-queue"), {"LocalQueue": [_lq("local-queue")], "ClusterQueue": [_cq()]},
                     MK, None, id="TestDefault_ClusterQueueWithoutAdmissionCheck"),
    ]),
)
def test_kueue_default_managed_by(obj: dict[str, Any], cluster: Mapping[str, list[dict[str, Any]]],
                                  gates: Mapping[str, bool], want_managed_by: str | None) -> None:
    out = _defaulted(obj, cluster, gates)
    assert out["spec"].get("managedBy") == want_managed_by


@pytest.mark.parametrize(
    ("queue", "default_lq", "want_queue"),
    [
        pytest.param(None, True, "default",
                     id=f'{SOURCE} TestDefault "default lq is created, job doesn\'t have queue label"'),
        pytest.param("queue", True, "queue",
                     id=f'{SOURCE} TestDefault "default lq is created, job has queue label"'),
        pytest.param(None, False, None,
                     id=f'{SOURCE} TestDefault "default lq isn\'t created, job doesn\'t have queue label"'),
    ],
)
def test_kueue_default_local_queue(queue: str | None, default_lq: bool, want_queue: str | None) -> None:
    obj = jobset("test-js", "default", queue=queue)  # suspended, as Kueue's MakeJobSet
    want = jobset("test-js", "default", queue=want_queue)
    cluster = {"LocalQueue": [_lq("default")]} if default_lq else {}
    assert _defaulted(obj, cluster) == want
