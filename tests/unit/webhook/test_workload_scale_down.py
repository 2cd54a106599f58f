"""A Workload holding quota may have its pod set counts lowered (an elastic Job scaled
down, as Kueue's ElasticJobsViaWorkloadSlices allows) and nothing else of its pod sets."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.webhook.crd_rules import validate_workload


def _reserved(count: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "job-sample-elastic-job-1a2b3", "namespace": "default"},
        "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": count, "template": {
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}}]},
        "status": {
            "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                            "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "admission": {"clusterQueue": "cluster-queue", "podSetAssignments": [
                {"name": "main", "count": 5, "flavors": {"cpu": "default-flavor"},
                 "resourceUsage": {"cpu": "500m"}}]}},
    }


def _messages(new: dict[str, Any], old: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_workload(new, old)]


def test_a_lower_count_is_allowed_while_the_quota_is_reserved() -> None:
    assert _messages(_reserved(3), _reserved(5)) == []


def test_a_higher_count_or_another_change_is_not() -> None:
    assert any("immutable while the quota is reserved" in m for m in _messages(_reserved(6), _reserved(5)))
    changed = _reserved(3)
    changed["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["image"] = "other"
    assert any("immutable while the quota is reserved" in m for m in _messages(changed, _reserved(5)))
    more = copy.deepcopy(_reserved(5))
    more["spec"]["podSets"].append({"name": "extra", "count": 1, "template": {"spec": {"containers": []}}})
    assert any("immutable while the quota is reserved" in m for m in _messages(more, _reserved(5)))
