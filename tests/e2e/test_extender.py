"""The TAS extender inside a real kube-scheduler, on the dev cluster.

A second kube-scheduler serves the profile ``pykueue-tas-scheduler`` with the shipped
configuration (``manifests/09-tas-scheduler.yaml``) and calls ``pykueue extender`` running in a
subprocess on loopback (``devcluster.tas_scheduler``). The dev cluster's default
scheduler is left alone, so other tests on the same cluster are not affected.

Covered: pods without Kueue markers schedule normally through the extender-wired
scheduler; an unreachable extender fails pods closed (``ignorable: false``) and they bind
once it is back. These need an extender of their own (one is stopped), so they use a
profile of their own; topology-aware Jobs through the dev cluster's own TAS scheduler, as
a user submits them, are in ``test_tas_manager``; the extender's trust in
``test_extender_trust``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from pykueue.devcluster.tas_scheduler import Started, start_extender, start_tas_scheduler

from .conftest import DevCluster, wait_until

pytestmark = pytest.mark.e2e

# This module's own scheduler profile and extender: the dev cluster's TAS scheduler serves
# the shipped "pykueue-tas-scheduler" profile, and these tests stop their extender.
TAS_SCHEDULER = "pykueue-tas-scheduler-e2e"


@dataclass
class TasScheduling:
    """The extender and the scheduler wired to it; the extender can be restarted in place."""

    work_dir: Path
    extender: Started
    scheduler: Started

    def stop_extender(self) -> None:
        self.extender.stop()

    def restart_extender(self) -> None:
        port = urlparse(self.extender.url).port
        self.extender = start_extender(self.work_dir, port=port, profile=TAS_SCHEDULER)


@pytest.fixture(scope="module")
def tas(dev_cluster: DevCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TasScheduling]:
    work_dir = tmp_path_factory.mktemp("tas-scheduler")
    extender = start_extender(work_dir, profile=TAS_SCHEDULER)
    try:
        assert extender.tls is not None
        scheduler = start_tas_scheduler(work_dir, extender.url, extender.tls, TAS_SCHEDULER)
    except BaseException:
        extender.stop()
        raise
    wiring = TasScheduling(work_dir, extender, scheduler)
    try:
        yield wiring
    finally:
        wiring.scheduler.stop()
        wiring.extender.stop()


def plain_pod(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "plain"}},
        "spec": {
            "schedulerName": TAS_SCHEDULER,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m"}}}],
        },
    }


def pods(dev_cluster: DevCluster, namespace: str, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = dev_cluster.get_json("pods", "-n", namespace, "-l", selector)["items"]
    return items


def node_of(pod: dict[str, Any]) -> str:
    return str(pod["spec"].get("nodeName") or "")


def scheduled_by(dev_cluster: DevCluster, namespace: str, pod: str) -> set[str]:
    """Which schedulers reported a Scheduled event for the pod."""
    events = dev_cluster.get_json("events.v1.events.k8s.io", "-n", namespace,
                                  "--field-selector", f"regarding.name={pod}")["items"]
    return {str(e.get("reportingController")) for e in events if e.get("reason") == "Scheduled"}


def test_unmanaged_pods_schedule_through_the_extender_wired_scheduler(
    dev_cluster: DevCluster, namespace: str, tas: TasScheduling
) -> None:
    names = [f"plain-{i}" for i in range(6)]
    for name in names:
        dev_cluster.apply(plain_pod(name, namespace))

    def all_running() -> list[dict[str, Any]] | None:
        items = pods(dev_cluster, namespace, "app=plain")
        ok = len(items) == len(names) and all(node_of(p) and p["status"].get("phase") == "Running"
                                               for p in items)
        return items if ok else None

    items = wait_until("6 plain pods bound and Running", all_running, 60.0)
    assert {node_of(p) for p in items} <= {f"kwok-node-{i}" for i in range(8)}

    # The Scheduled events name the TAS profile: these pods went through the extender.
    def all_scheduled_by_tas() -> bool:
        return all(TAS_SCHEDULER in scheduled_by(dev_cluster, namespace, name) for name in names)

    wait_until("Scheduled events from the TAS profile", all_scheduled_by_tas, 30.0)


def test_unreachable_extender_fails_closed_and_pods_bind_when_it_is_back(
    dev_cluster: DevCluster, namespace: str, tas: TasScheduling
) -> None:
    tas.stop_extender()
    try:
        dev_cluster.apply(plain_pod("waits", namespace))

        def failed_scheduling() -> bool:
            events = dev_cluster.get_json("events.v1.events.k8s.io", "-n", namespace,
                                          "--field-selector", "regarding.name=waits")["items"]
            return any(e.get("reason") == "FailedScheduling" and e.get("reportingController") == TAS_SCHEDULER
                       for e in events)

        wait_until("FailedScheduling of the pod while the extender is down", failed_scheduling, 60.0)
        # Not ignorable: the scheduler did not place the pod without the extender.
        assert node_of(dev_cluster.get_json("pod", "waits", "-n", namespace)) == ""
    finally:
        tas.restart_extender()
    wait_until("the pod to bind once the extender is back",
               lambda: node_of(dev_cluster.get_json("pod", "waits", "-n", namespace)), 90.0)
