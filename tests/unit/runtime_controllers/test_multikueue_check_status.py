"""The MultiKueue AdmissionCheck's Active condition and the Configuration it reads."""

from __future__ import annotations

from pykueue.api import keys
from pykueue.manager.runtime.controllers.multikueue.connections import Worker
from pykueue.manager.runtime.controllers.multikueue.controller import check_active, multikueue_settings

CHECK = {"metadata": {"name": "mk"}, "spec": {"controllerName": keys.MULTIKUEUE_CONTROLLER, "parameters": {
    "apiGroup": keys.GROUP, "kind": "MultiKueueConfig", "name": "cfg"}}}
CONFIGS = {"cfg": {"metadata": {"name": "cfg"}, "spec": {"clusters": ["a", "b"]}}}


def _workers(**active: bool) -> dict[str, Worker]:
    return {name: Worker(name, active=up) for name, up in active.items()}


def test_all_clusters_connected_is_active() -> None:
    assert check_active(CHECK, CONFIGS, _workers(a=True, b=True)) == (
        True, "Active", "The admission check is active")


def test_some_clusters_missing_or_inactive_is_still_active() -> None:
    assert check_active(CHECK, CONFIGS, _workers(a=True)) == (
        True, "SomeActiveClusters", "Missing clusters: [b]")
    assert check_active(CHECK, CONFIGS, _workers(a=True, b=False)) == (
        True, "SomeActiveClusters", "Inactive clusters: [b]")


def test_no_usable_cluster_or_no_config_is_inactive() -> None:
    assert check_active(CHECK, CONFIGS, _workers(a=False))[:2] == (False, "NoUsableClusters")
    active, reason, message = check_active(CHECK, {}, _workers(a=True, b=True))
    assert (active, reason) == (False, "BadConfig") and '"cfg" not found' in message


def test_worker_lost_timeout_and_origin_come_from_the_configuration() -> None:
    assert multikueue_settings({}) == ("multikueue", 900.0)
    assert multikueue_settings({"multiKueue": {"workerLostTimeout": "10s", "origin": "m1"}}) == ("m1", 10.0)
