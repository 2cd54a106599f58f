"""A job's ``admission-gated-by`` annotation is copied to the Workload built for it (Kueue's
PropagateAdmissionGatedByAnnotation), so the core holds the Workload back until it is cleared."""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.manager.jobs.registry import workloads_for


def _job(annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u1", "labels": {keys.QUEUE_NAME: "lq"},
                         "annotations": annotations},
            "spec": {"parallelism": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def test_the_gates_go_with_the_workload() -> None:
    (wl,) = workloads_for(_job({keys.ADMISSION_GATED_BY: "example.com/a,example.com/b"}))
    assert wl["metadata"]["annotations"][keys.ADMISSION_GATED_BY] == "example.com/a,example.com/b"


def test_no_gate_no_annotation() -> None:
    for given in ({}, {keys.ADMISSION_GATED_BY: ""}):
        (wl,) = workloads_for(_job(given))
        assert keys.ADMISSION_GATED_BY not in (wl["metadata"].get("annotations") or {})
