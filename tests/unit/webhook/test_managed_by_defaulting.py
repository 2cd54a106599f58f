"""MultiKueue ``managedBy`` defaulting of a Job, the facts resolved from informer stores as the
webhook resolves them (Kueue v0.19.2's ApplyDefaultForManagedBy).

Kueue reads the queue-name label (after the default LocalQueue is applied), the LocalQueue's
ClusterQueue, and that ClusterQueue's admission checks from its cache, and hands the Job to
MultiKueue when one of them is of the MultiKueue controller. It does not ask whether the
check is Active: its cache keeps inactive checks with their controller name, and the
defaulting reads only that. Tests named after ``job_webhook_test.go`` take their inputs from
its TestDefault table; the others were run against Kueue v0.19.2's defaulting as well.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy
from pykueue.manager.jobs.batchjob.webhook import OWN_CONTROLLER, WEBHOOK
from pykueue.manager.jobs.gates import FeatureGates
from pykueue.webhook.facts import ApiLookup, resolve_facts

SOURCE = "kueue v0.19.2 job_webhook_test.go TestDefault"


class _Store:
    """A synced informer store holding the given objects."""

    has_synced = True

    def __init__(self, *objs: dict[str, Any]) -> None:
        self.objs = {(o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objs}

    def get_by_name(self, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self.objs.get((namespace, name))


def _check(active: str | None) -> dict[str, Any]:
    conditions = [] if active is None else [{"type": "Active", "status": active}]
    return {"metadata": {"name": "admission-check"}, "spec": {"controllerName": keys.MULTIKUEUE_CONTROLLER},
            "status": {"conditions": conditions}}


def _cluster(active: str | None = "True", lq: str = "local-queue") -> dict[str, list[dict[str, Any]]]:
    return {"LocalQueue": [{"metadata": {"name": lq, "namespace": "default"},
                            "spec": {"clusterQueue": "cluster-queue"}}],
            "ClusterQueue": [{"metadata": {"name": "cluster-queue"},
                              "spec": {"admissionChecks": ["admission-check"]}}],
            "AdmissionCheck": [_check(active)]}


def _job(queue: str | None = "local-queue", managed_by: str | None = None,
         annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"suspend": False, "template": {"spec": {"containers": []}}}
    if managed_by is not None:
        spec["managedBy"] = managed_by
    labels = {} if queue is None else {keys.QUEUE_NAME: queue}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "job", "namespace": "default", "labels": labels,
                         "annotations": dict(annotations or {})}, "spec": spec}


def _defaulted(obj: dict[str, Any], cluster: Mapping[str, list[dict[str, Any]]],
               gates: Mapping[str, bool] | None = None) -> dict[str, Any]:
    stores = {kind: _Store(*cluster.get(kind, ())) for kind in
              ("LocalQueue", "ClusterQueue", "AdmissionCheck", "ResourceFlavor", "WorkloadPriorityClass")}
    stores["Namespace"] = _Store({"metadata": {"name": "default",
                                               "labels": {"kubernetes.io/metadata.name": "default"}}})
    policy = AdmissionPolicy(gates=FeatureGates(dict(gates or {"MultiKueue": True})))
    facts = asyncio.run(resolve_facts(obj, "default", policy, ApiLookup(None, stores)))
    return WEBHOOK.default(obj, AdmissionContext(policy, facts))


@pytest.mark.parametrize(
    ("obj", "cluster", "gates", "want"),
    [
        pytest.param(_job(), _cluster(), None, keys.MULTIKUEUE_CONTROLLER,
                     id=f'{SOURCE} "managed by is defaulted: queue label was set"'),
        pytest.param(_job(managed_by="example.com/foo"), _cluster(), None, "example.com/foo",
                     id=f'{SOURCE} "no change in managed by: user specified managed by"'),
        pytest.param(_job("queue"), _cluster(lq="queue"), {"MultiKueue": False}, None,
                     id=f'{SOURCE} "no change in managed by: features.MultiKueue disabled"'),
        pytest.param(_job("invalid-local-queue"), {}, None, None, id=f'{SOURCE} "invalid queue name"'),
        pytest.param(_job(), _cluster(active="False"), None, keys.MULTIKUEUE_CONTROLLER,
                     id="an inactive MultiKueue check still routes the job"),
        pytest.param(_job(), _cluster(active=None), None, keys.MULTIKUEUE_CONTROLLER,
                     id="a MultiKueue check not yet reporting Active still routes the job"),
        pytest.param(_job(managed_by=OWN_CONTROLLER), _cluster(), None, keys.MULTIKUEUE_CONTROLLER,
                     id="the kind's own controller may be replaced"),
        pytest.param(_job(managed_by=""), _cluster(), None, "",
                     id="an empty managedBy is neither unset nor the own controller"),
        pytest.param(_job(None, annotations={keys.QUEUE_NAME_ANNOTATION: "local-queue"}), _cluster(),
                     None, None,
                     id="a queue named only by the old annotation is not read"),
        pytest.param(_job(None), _cluster(lq="default"), None, keys.MULTIKUEUE_CONTROLLER,
                     id="the default LocalQueue, once applied, is the one read"),
    ],
)
def test_managed_by_defaulting(obj: dict[str, Any], cluster: Mapping[str, list[dict[str, Any]]],
                               gates: Mapping[str, bool] | None, want: str | None) -> None:
    assert _defaulted(obj, cluster, gates)["spec"].get("managedBy") == want
