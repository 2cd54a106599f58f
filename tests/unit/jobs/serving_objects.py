"""Deployments, StatefulSets and their pods as plain objects, built the way Kueue v0.19.2's
test wrappers build them (``pkg/util/testingjobs/{deployment,statefulset}``), for the ported
cases and pykueue's own tests of the serving kinds."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.api import keys
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.gates import FeatureGates

JSON = dict[str, Any]
IMAGE = "registry.k8s.io/pause:3.9"  # any image: only copied around


def _workload(kind: str, name: str, ns: str) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": ns, "annotations": {}},
        "spec": {
            "selector": {"matchLabels": {"app": f"{name}-pod"}},
            "template": {
                "metadata": {"labels": {"app": f"{name}-pod"}},
                "spec": {
                    "containers": [{"name": "c", "image": IMAGE, "resources": {"requests": {}}}],
                    "nodeSelector": {},
                },
            },
        },
    }


def deployment(name: str = "test-pod", ns: str = "") -> JSON:
    """MakeDeployment: one container, no replicas set."""
    return _workload("Deployment", name, ns)


def statefulset(name: str = "test-pod", ns: str = "") -> JSON:
    """MakeStatefulSet: one container, no replicas set."""
    return _workload("StatefulSet", name, ns)


def label(obj: JSON, key: str, value: str) -> JSON:
    obj["metadata"].setdefault("labels", {})[key] = value
    return obj


def queue(obj: JSON, name: str) -> JSON:
    return label(obj, keys.QUEUE_NAME, name)


def annotate(obj: JSON, key: str, value: str) -> JSON:
    obj["metadata"].setdefault("annotations", {})[key] = value
    return obj


def template_label(obj: JSON, key: str, value: str) -> JSON:
    obj["spec"]["template"]["metadata"].setdefault("labels", {})[key] = value
    return obj


def template_annotation(obj: JSON, key: str, value: str) -> JSON:
    obj["spec"]["template"]["metadata"].setdefault("annotations", {})[key] = value
    return obj


def replicas(obj: JSON, n: int) -> JSON:
    obj["spec"]["replicas"] = n
    return obj


def status(obj: JSON, **fields: Any) -> JSON:
    obj.setdefault("status", {}).update(fields)
    return obj


def uid(obj: JSON, value: str) -> JSON:
    obj["metadata"]["uid"] = value
    return obj


def owner(obj: JSON, api_version: str, kind: str, name: str, owner_uid: str) -> JSON:
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": api_version, "kind": kind, "name": name, "uid": owner_uid, "controller": True}
    ]
    return obj


def sts_pod(
    sts: JSON, index: int = 0, *, revision: str = "rev-1", gated: bool = True, phase: str = "Pending"
) -> JSON:
    """A pod as the StatefulSet controller creates it from a template Kueue's webhook stamped,
    after the pod webhook held it."""
    m = sts["metadata"]
    template = copy.deepcopy(sts["spec"]["template"])
    name = f"{m['name']}-{index}"
    labels = {
        **(template["metadata"].get("labels") or {}),
        keys.STATEFULSET_POD_NAME: name,
        keys.POD_INDEX_LABEL: str(index),
        keys.CONTROLLER_REVISION_HASH: revision,
    }
    annotations = dict(template["metadata"].get("annotations") or {})
    spec = template["spec"]
    if gated:
        spec["schedulingGates"] = [{"name": keys.ADMISSION_GATE}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": m["namespace"],
            "uid": f"{name}-uid",
            "resourceVersion": "1",
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": m["name"],
                    "uid": m.get("uid", ""),
                    "controller": True,
                }
            ],
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def ctx(
    gates: dict[str, bool] | None = None,
    *,
    manage_without_queue: bool = False,
    frameworks: tuple[str, ...] = ("deployment", "statefulset"),
    **facts: Any,
) -> AdmissionContext:
    policy = AdmissionPolicy(
        manage_jobs_without_queue_name=manage_without_queue,
        frameworks=frozenset(frameworks),
        gates=FeatureGates(gates or {}),
    )
    facts.setdefault("namespace_labels", {keys.NAMESPACE_NAME_LABEL: "default"})
    return AdmissionContext(policy, ClusterFacts(**facts))


def error_kinds(errors: list[Any]) -> list[tuple[str, str]]:
    """(field, type) of each error: what Kueue's tables compare (BadValue and Detail ignored)."""
    return [(e.path, e.problem.split(":", 1)[0]) for e in errors]


def core_with(wl: JSON) -> QueueingCore:
    """A core with ClusterQueue ``cq`` (4 CPUs of flavor ``default``), LocalQueue ``ns/lq`` and ``wl``."""
    api = keys.API_VERSION
    core = QueueingCore()
    for obj in [
        {"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {
            "apiVersion": api,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}],
                    }
                ],
            },
        },
        {
            "apiVersion": api,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "ns"},
            "spec": {"clusterQueue": "cq"},
        },
        wl,
    ]:
        core.apply(obj)
    return core
