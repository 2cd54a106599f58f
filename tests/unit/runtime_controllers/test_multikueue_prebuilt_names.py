"""Where the controllers read a prebuilt Workload's name from and write it to: as Kueue's
PrebuiltWorkloadNameFor and SetMultiKueueMeta under the WorkloadIdentifierAnnotations gate
(on in Kueue v0.19.2). A worker copy made earlier with the label keeps being recognised."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.kube import resources as res
from pykueue.kube.client import KubeClient
from pykueue.kube.resources import ResourceRef
from pykueue.manager.runtime.controllers.manager import QueueManager
from pykueue.manager.runtime.controllers.multikueue.connections import WorkerConnections

PRE = keys.PREBUILT_WORKLOAD_NAME
JOBS = ResourceRef("batch", "v1", "Job", "jobs")


class _NoClient:
    """Never called."""


class _Worker:
    """A worker's API: the Workloads and Jobs of one origin."""

    def __init__(self, jobs: list[dict[str, Any]]) -> None:
        self.jobs = jobs

    async def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        if path == res.WORKLOADS.collection_path():
            return {"items": []}
        return {"items": [dict(j) for j in self.jobs]}


def _remote(name: str, labels: dict[str, str] | None = None,
            annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", "labels": {keys.MULTIKUEUE_ORIGIN: "o", **(labels or {})},
            "annotations": dict(annotations or {})}
    return {"metadata": meta}


def _snapshot(identifier_annotations: bool, *jobs: dict[str, Any]) -> list[str]:
    connections = WorkerConnections(KubeClient(_NoClient()), "kueue-system", "o", [JOBS],
                                    identifier_annotations=identifier_annotations)
    _, found = asyncio.run(connections._snapshot(_Worker(list(jobs))))  # type: ignore[arg-type]
    return sorted(found)


def test_remote_jobs_are_found_by_the_name_kueue_reads() -> None:
    old = _remote("made-with-label", labels={PRE: "wl-old"})
    new = _remote("made-with-annotation", annotations={PRE: "wl-new"})
    both = _remote("both", labels={PRE: "from-label"}, annotations={PRE: "from-annotation"})
    assert _snapshot(True, old, new, both) == ["ns/from-annotation", "ns/wl-new", "ns/wl-old"]
    # Gate off: the label; an annotation only when too long for a label.
    assert _snapshot(False, old, new, both) == ["ns/from-label", "ns/wl-old"]


def test_the_manager_passes_its_gate_to_multikueue() -> None:
    on = QueueManager(KubeClient(_NoClient()))
    config = {"featureGates": {"WorkloadIdentifierAnnotations": False}}
    off = QueueManager(KubeClient(_NoClient()), job_config=config)
    for manager, want in ((on, True), (off, False)):
        assert manager.multikueue is not None
        assert manager.multikueue.identifier_annotations is want
        assert manager.multikueue.connections.identifier_annotations is want


@pytest.mark.parametrize(("gates", "name"), [
    ({}, "from-annotation"),
    ({"WorkloadIdentifierAnnotations": False}, "from-label"),
])
def test_the_job_reconciler_runs_a_copy_under_the_name_kueue_reads(gates: dict[str, bool], name: str) -> None:
    manager = QueueManager(KubeClient(_NoClient()), job_config={"featureGates": gates})
    job = _remote("j", labels={PRE: "from-label"}, annotations={PRE: "from-annotation"})
    assert manager.jobs._prebuilt_name(job) == name
    assert manager.jobs._prebuilt_name(_remote("j", labels={PRE: "old"})) == "old", "a label-made copy"
    assert manager.jobs._prebuilt_name(_remote("j")) is None
