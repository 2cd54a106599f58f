"""Admission fair sharing: the usage ledger's arithmetic and its effect on queue order."""

from __future__ import annotations

import math
from typing import Any

import pytest

from pykueue.manager.core.admission_fair_sharing import AfsConfig, UsageLedger, alpha
from pykueue.manager.core.config import ConfigError, config_from
from pykueue.manager.core.engine import QueueingCore


def test_alpha_is_half_after_one_half_life() -> None:
    assert alpha(600, 600) == pytest.approx(0.5)
    assert alpha(1200, 600) == pytest.approx(0.75)
    assert alpha(600, 0) == 0.0


def test_sample_decays_towards_current_usage() -> None:
    ledger = UsageLedger(AfsConfig(half_life=600, sampling_interval=300), now=0)
    ledger.sample(600, {"ns/a": {"cpu": 4.0}}, ["ns/a", "ns/b"])
    assert ledger.usage("ns/a") == pytest.approx(2.0)  # half of 4 after one half-life
    ledger.sample(1200, {}, ["ns/a", "ns/b"])
    assert ledger.usage("ns/a") == pytest.approx(1.0)  # and halves again with nothing running
    assert ledger.usage("ns/b") == 0.0


def test_weights_and_penalty() -> None:
    ledger = UsageLedger(
        AfsConfig(half_life=300, sampling_interval=300, resource_weights={"memory": 0.5}), now=0
    )
    ledger.penalize("ns/a", {"cpu": 2.0, "memory": 4.0})
    # penalty = alpha(300, 300) * request = 0.5 * request; memory weighted by 0.5
    assert ledger.usage("ns/a") == pytest.approx(0.5 * 2.0 + 0.5 * 0.5 * 4.0)
    assert ledger.usage("ns/a", weight=2) == pytest.approx((1.0 + 1.0) / 2)
    assert ledger.usage("ns/a", weight=0) == math.inf
    ledger.sample(300, {}, ["ns/a"])  # a sample folds the penalty away
    assert ledger.usage("ns/a") == 0.0


def test_config_parsing_and_errors() -> None:
    cfg = config_from({"admissionFairSharing": {"usageHalfLifeTime": "10m", "resourceWeights": {"cpu": 2}}})
    assert cfg.admission_fair_sharing == AfsConfig(600.0, 300.0, {"cpu": 2.0})
    assert config_from({}).admission_fair_sharing is None
    with pytest.raises(ConfigError):
        config_from({"admissionFairSharing": {"usageHalfLifeTime": "soon"}})
    with pytest.raises(ConfigError):
        config_from(
            {"fairSharing": {"preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]}}
        )


def _objects(afs: bool) -> list[dict[str, Any]]:
    cq_spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 2}]}],
            }
        ],
    }
    if afs:
        cq_spec["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
    return [
        {"kind": "ResourceFlavor", "metadata": {"name": "f"}},
        {"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": cq_spec},
        {"kind": "LocalQueue", "metadata": {"name": "a", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}},
        {"kind": "LocalQueue", "metadata": {"name": "b", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}},
    ]


def _wl(name: str, lq: str, priority: int) -> dict[str, Any]:
    return {
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "queueName": lq,
            "priority": priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
                    },
                }
            ],
        },
    }


@pytest.mark.parametrize("afs", [True, False])
def test_sampling_clock_moves_with_fire_timers(afs: bool) -> None:
    config = config_from(
        {"admissionFairSharing": {"usageHalfLifeTime": "10m", "usageSamplingInterval": "1m"}}
    )
    core = QueueingCore(config, now=0.0)
    for obj in _objects(afs):
        core.apply(obj)
    core.apply(_wl("first", "a", 0))
    core.run_until_idle()
    assert core.workload("ns/first").holds_quota
    assert core.next_deadline() == 60.0
    core.fire_timers(600)  # one late call takes one sample, not ten
    assert core.next_deadline() == 660.0
    assert core.local_queue_usage("ns/a") > 0
    core.finish("ns/first")
    core.apply(_wl("from-a", "a", 100))
    core.apply(_wl("from-b", "b", 0))
    core.run_until_idle()
    winner = "ns/from-b" if afs else "ns/from-a"
    assert core.workload(winner).holds_quota
