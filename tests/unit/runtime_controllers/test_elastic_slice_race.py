"""The job reconciler and an elastic job whose generation moves before the Workload informer
shows its first slice (KubeRay edits a RayJob's spec right after its creation): the slice it
created counts as existing, so no second slice is made for the new generation."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any, cast

import yaml

from pykueue.api import keys
from pykueue.kube.client import KubeClient
from pykueue.kube.informer import EventType
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.registry import enabled_registry
from pykueue.manager.runtime.controllers.jobs import JobReconciler

from .test_related_objects import _Store

JSON = dict[str, Any]
POLICY = AdmissionPolicy(frameworks=frozenset({"ray.io/raycluster"}))
SAMPLE = Path(__file__).parents[2] / "e2e" / "manifests" / "kueue-examples" / "ray-cluster-sample.yaml"
KEY = "RayCluster:ns/raycluster-complete"


class _Api:
    def __init__(self) -> None:
        self.created: list[JSON] = []

    async def create(self, path: str, body: JSON) -> JSON:
        out = copy.deepcopy(body)
        out["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
        self.created.append(out)
        return out

    async def replace(self, path: str, body: JSON) -> JSON:
        return body


def _cluster(generation: int) -> JSON:
    cluster: JSON = yaml.safe_load(SAMPLE.read_text())
    cluster["metadata"].update({"namespace": "ns", "uid": "rc-uid", "generation": generation,
                                "annotations": {keys.ELASTIC_JOB: "true"}})
    cluster["spec"]["suspend"] = True
    return cluster


def _reconciler(api: _Api, source: _Store) -> JobReconciler:
    informers: dict[str, Any] = {"Namespace": _Store({"metadata": {"name": "ns"}}), "Workload": _Store(),
                                 "ResourceFlavor": _Store(), "WorkloadPriorityClass": _Store()}
    rec = JobReconciler(cast(KubeClient, api), QueueingCore(), informers, enabled_registry(POLICY), POLICY,
                        kick=lambda: None, finished={})
    rec._sources["RayCluster"] = [source]  # type: ignore[list-item]
    rec.active = list(rec.registry)
    return rec


def test_a_new_generation_before_the_informer_shows_the_slice_makes_no_second_slice() -> None:
    api = _Api()
    source = _Store(_cluster(1))
    rec = _reconciler(api, source)
    asyncio.run(rec.reconcile(KEY))
    assert len(api.created) == 1
    source.put(_cluster(2))  # KubeRay wrote the spec; the informer has not shown the slice yet
    asyncio.run(rec.reconcile(KEY))
    assert len(api.created) == 1, "the unseen slice still counts"
    rec.informers["Workload"].put(api.created[0])  # type: ignore[attr-defined]
    rec.on_workload(EventType.ADDED, api.created[0])
    assert not rec._unseen_slices, "forgotten once the informer shows it"
    asyncio.run(rec.reconcile(KEY))
    assert len(api.created) == 1
