"""A Job held by ``kueue.x-k8s.io/admission-gated-by`` (Kueue's AdmissionGatedBy, Beta and on in
v0.19.2): its Workload carries the gate and waits, not queued, with the reason Kueue writes;
once the user removes the annotation from the Job, the Workload follows, is admitted and the
Job runs. Only ``kubectl`` as a user types it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import condition, queues, remove_queues, workloads_owned_by

pytestmark = pytest.mark.e2e

GATE = "example.com/budget-approval"
COMPLETE_AFTER = "pod-complete.stage.kwok.x-k8s.io/delay"


def _job(name: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {keys.QUEUE_NAME: "lq"},
                         "annotations": {keys.ADMISSION_GATED_BY: GATE}},
            "spec": {"template": {
                "metadata": {"annotations": {COMPLETE_AFTER: "1s"}},
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}


def _quota_reserved(wl: dict[str, Any]) -> tuple[str, str, str]:
    conditions = (wl.get("status") or {}).get("conditions") or ()
    c = next((c for c in conditions if c["type"] == "QuotaReserved"), {})
    return str(c.get("status")), str(c.get("reason")), str(c.get("message"))


def test_a_gated_job_waits_until_its_gate_is_removed(dev_cluster: DevCluster, namespace: str) -> None:
    cq = queues(dev_cluster, namespace, "2")
    try:
        dev_cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(_job("gated")))

        def workload() -> dict[str, Any]:
            wls = workloads_owned_by(dev_cluster, namespace, "Job", "gated")
            return wls[0] if wls else {}

        wl = wait_until("the Workload to wait AdmissionGated",
                        lambda: (w := workload()) and _quota_reserved(w)[1] == "AdmissionGated" and w, 60.0)
        assert wl["metadata"]["annotations"][keys.ADMISSION_GATED_BY] == GATE
        assert _quota_reserved(wl) == ("False", "AdmissionGated", f"Admission is gated by: {GATE}")
        job = dev_cluster.get_json("jobs", "gated", "-n", namespace)
        assert job["spec"]["suspend"] is True, "a gated job does not start while there is quota"

        dev_cluster.kubectl("annotate", "-n", namespace, "job", "gated", f"{keys.ADMISSION_GATED_BY}-")
        wait_until("the Job to complete once ungated", lambda: condition(
            dev_cluster.get_json("jobs", "gated", "-n", namespace), "Complete"), 90.0)
        assert keys.ADMISSION_GATED_BY not in (workload()["metadata"].get("annotations") or {})
        events = dev_cluster.get_json("events", "-n", namespace, "--field-selector",
                                      "involvedObject.kind=Job,involvedObject.name=gated")["items"]
        updated = 'Updated workload AdmissionGatedBy to ""'
        assert any(e["reason"] == "UpdatedWorkload" and e["message"] == updated
                   for e in events), [(e["reason"], e["message"]) for e in events]
    finally:
        remove_queues(dev_cluster, namespace, cq)
