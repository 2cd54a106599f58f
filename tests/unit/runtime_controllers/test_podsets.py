"""Starting and stopping a Job on admission and eviction (pure template edits)."""

from __future__ import annotations

from typing import Any

from api import keys
from manager.runtime.controllers import podsets

TEMPLATE: dict[str, Any] = {"metadata": {"labels": {"app": "x"}},
                            "spec": {"nodeSelector": {"zone": "a"},
                                     "containers": [{"name": "c", "image": "busybox"}]}}
FLAVORS = {"on-demand": {"spec": {"nodeLabels": {"instance-type": "on-demand"},
                                  "tolerations": [{"key": "spot", "operator": "Exists"}]}}}


def _job(suspend: bool = True, template: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "resourceVersion": "7",
                         "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {"suspend": suspend, "template": template or TEMPLATE}}


def _workload(admitted: bool = True) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if admitted:
        status = {"admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {"cpu": "on-demand", "memory": "on-demand"}}]},
            "conditions": [{"type": "Admitted", "status": "True"}]}
    return {"spec": {"podSets": [{"name": "main", "count": 1, "template": TEMPLATE}]}, "status": status}


def test_start_unsuspends_and_merges_flavor_labels_tolerations_and_podset_label() -> None:
    started = podsets.start_job(_job(), _workload(), FLAVORS)
    spec = started["spec"]["template"]["spec"]
    assert started["spec"]["suspend"] is False
    assert started["metadata"]["resourceVersion"] == "7"  # the write is a compare-and-swap
    assert spec["nodeSelector"] == {"zone": "a", "instance-type": "on-demand"}
    assert spec["tolerations"] == [{"key": "spot", "operator": "Exists"}]
    assert started["spec"]["template"]["metadata"]["labels"] == {"app": "x", keys.PODSET: "main"}
    assert TEMPLATE["spec"]["nodeSelector"] == {"zone": "a"}  # inputs untouched


def test_stop_then_restore_brings_back_the_original_template() -> None:
    started = podsets.start_job(_job(), _workload(), FLAVORS)
    stopped = podsets.stop_job(started)
    assert stopped["spec"]["suspend"] is True
    assert podsets.template_started(stopped)
    restored = podsets.restore_template(stopped, _workload(admitted=False))
    assert restored is not None
    assert restored["spec"]["template"] == TEMPLATE
    assert podsets.restore_template(restored, _workload(admitted=False)) is None


def test_finished_and_admitted_read_conditions() -> None:
    job = _job()
    assert podsets.job_finished(job) is None
    job["status"] = {"conditions": [{"type": "Failed", "status": "True"}]}
    assert podsets.job_finished(job) == keys.Reason.FAILED
    job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    assert podsets.job_finished(job) == keys.Reason.SUCCEEDED
    assert podsets.is_admitted(_workload())
    assert not podsets.is_admitted(_workload(admitted=False))
    assert podsets.queue_name(job) == "lq"
