"""Kueue's FinishOrphanedWorkloads: which Workloads count as orphaned."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.ownership import is_orphaned


def _wl(**meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "w", "namespace": "ns", **meta}}


@pytest.mark.parametrize(("meta", "orphaned"), [
    ({"labels": {keys.JOB_UID: "u"}}, True),  # its job deleted with --cascade=orphan
    ({"labels": {keys.JOB_UID: "u"}, "ownerReferences": [{"kind": "Job", "name": "j"}]}, False),
    ({"labels": {}}, False),  # a Workload created on its own
    ({"labels": {keys.JOB_UID: "u"}, "deletionTimestamp": "2026-01-01T00:00:00Z"}, False),  # going anyway
])
def test_only_a_job_made_workload_without_owners_is_orphaned(meta: dict[str, Any], orphaned: bool) -> None:
    assert is_orphaned(_wl(**meta)) is orphaned
