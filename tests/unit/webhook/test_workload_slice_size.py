"""Kueue v0.19's validateTASSliceSize on Workloads: a slice topology and its size come
together, and sizes are positive (the ported TAS tables once held Workloads that broke it)."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.webhook import crd_rules

PATH = "spec.podSets[0].topologyRequest"


def _workload(request: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"queueName": "lq", "podSets": [{
                "name": "main", "count": 2, "topologyRequest": request,
                "template": {"spec": {"containers": [{"name": "c"}]}}}]}}


@pytest.mark.parametrize("request_,want", [
    ({"required": "rack", "podSetSliceRequiredTopology": "host", "podSetSliceSize": 2}, []),
    ({"required": "rack"}, []),
    ({"required": "rack", "podSetSliceRequiredTopology": "host"},
     [f"{PATH}.podSetSliceSize: Required value: must be set when podSetSliceRequiredTopology is specified"]),
    ({"required": "rack", "podSetSliceSize": 1},
     [f"{PATH}.podSetSliceSize: Forbidden: may not be set when podSetSliceRequiredTopology is not "
      "specified"]),
    ({"required": "rack", "podSetSliceRequiredTopology": "host", "podSetSliceSize": 0},
     [f"{PATH}.podSetSliceSize: Invalid value: 0: must be greater than 0"]),
])
def test_slice_size_rules(request_: dict[str, Any], want: list[str]) -> None:
    errors = [str(e) for e in crd_rules.validate_workload(_workload(request_), None)]
    assert [e for e in errors if "podSetSlice" in e] == want
