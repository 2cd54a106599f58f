"""objectRetentionPolicies.workloads.afterDeactivatedByKueue in the running system.

The dev cluster's pykueue is swapped for one whose Configuration sets the retention to 1s
(only the leader reconciles jobs; see ``test_manage_without_queue_name``). A Job whose
admission check the test rejects (it plays the check's controller, as in
``test_admission_checks``) is deactivated by pykueue, and a second later deleted with its
Workload; a Job whose Workload the user deactivates stays, as in Kueue.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.devcluster import processes

from .conftest import REPO, DevCluster, dev_pykueue, wait_until
from .jobs_common import condition, workloads_owned_by
from .test_admission_checks import _job, _set_state, checked_queue  # noqa: F401 (a fixture)
from .test_queueing import _stop, _wait_ready

pytestmark = pytest.mark.e2e


@pytest.fixture
def retaining_leader(dev_cluster: DevCluster, tmp_path: Path) -> Iterator[None]:
    """The dev pykueue swapped for one deleting jobs Kueue deactivated after 1s."""
    record, argv = dev_pykueue()
    flags = dict(itertools.pairwise(argv))
    config = yaml.safe_load(Path(flags["--config"]).read_text())
    config["objectRetentionPolicies"] = {"workloads": {"afterDeactivatedByKueue": "1s"}}
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    argv[argv.index("--config") + 1] = str(config_path)
    processes.stop(record)
    log_path = tmp_path / "manager.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_ready(proc, f"http://{flags['--health-probe-bind-address']}/readyz", log_path)
        wait_until("the test's manager to lead", lambda: "became leader" in log_path.read_text(), 60.0)
        yield
    finally:
        code = _stop(proc)
        print(log_path.read_text()[-4000:], file=sys.stderr)
        result = dev_cluster.dev("up")
        assert result.returncode == 0, f"dev up did not restore pykueue: {result.stderr[-2000:]}"
    assert code == 0


def _reserved(dev_cluster: DevCluster, namespace: str, job: str) -> dict[str, Any] | None:
    found = workloads_owned_by(dev_cluster, namespace, "Job", job)
    return found[0] if found and condition(found[0], "QuotaReserved") else None


def _exists(dev_cluster: DevCluster, namespace: str, kind: str, name: str) -> bool:
    return dev_cluster.kubectl("get", kind, name, "-n", namespace, check=False).returncode == 0


def test_a_job_kueue_deactivated_is_deleted_after_the_retention(
        dev_cluster: DevCluster, namespace: str, checked_queue: str,  # noqa: F811
        retaining_leader: None) -> None:
    dev_cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(_job("kept")))
    kept = wait_until("quota reserved for the first Job", lambda: _reserved(dev_cluster, namespace, "kept"),
                      30.0)
    # The user deactivates the first: Evicted with reason Deactivated, never deleted.
    dev_cluster.kubectl("patch", "workloads.kueue.x-k8s.io", kept["metadata"]["name"], "-n", namespace,
                        "--type=merge", "-p", json.dumps({"spec": {"active": False}}))
    dev_cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(_job("refused")))
    refused = wait_until("quota reserved for the second Job",
                         lambda: _reserved(dev_cluster, namespace, "refused"), 30.0)
    _set_state(dev_cluster, namespace, refused, checked_queue, "Rejected")
    wait_until("the Job of the rejected Workload deleted",
               lambda: not _exists(dev_cluster, namespace, "job", "refused"), 20.0)
    wait_until("its Workload deleted with it", lambda: not _exists(
        dev_cluster, namespace, "workloads.kueue.x-k8s.io", refused["metadata"]["name"]), 20.0)
    events = dev_cluster.get_json("events.events.k8s.io", "-n", namespace)["items"]
    assert any(e.get("reason") == "Deleted" and e.get("regarding", {}).get("name") == "refused"
               and e.get("note") == "Deleted job: deactivation retention period expired" for e in events)
    wl = workloads_owned_by(dev_cluster, namespace, "Job", "kept")
    assert _exists(dev_cluster, namespace, "job", "kept") and wl and wl[0]["spec"]["active"] is False
