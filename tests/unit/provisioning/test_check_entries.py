"""The core writes each admission check's state; what its controller wrote beside it stays."""

from __future__ import annotations

from pykueue.manager.core.objects import format_time
from pykueue.manager.core.status import carry_check_details

NOW = 1_800_000_000.0


def test_an_unchanged_state_keeps_its_controllers_message_and_pod_set_updates() -> None:
    stored = [{"name": "prov", "state": "Ready", "message": "provisioned", "lastTransitionTime": "t0",
               "podSetUpdates": [{"name": "main", "nodeSelector": {"pool": "p1"}}]}]
    rendered = [{"name": "prov", "state": "Ready", "message": "", "lastTransitionTime": "now"}]
    assert carry_check_details(stored, rendered, NOW) == stored


def test_an_eviction_resets_to_pending_counting_a_retry() -> None:
    stored = [{"name": "prov", "state": "Retry", "message": "Retrying after failure: x", "retryCount": 1,
               "requeueAfterSeconds": 120, "lastTransitionTime": "t0"},
              {"name": "other", "state": "Ready", "message": "fine", "retryCount": 3}]
    rendered = [{"name": "prov", "state": "Pending", "message": ""},
                {"name": "other", "state": "Pending", "message": ""},
                {"name": "new", "state": "Pending", "message": ""}]
    assert carry_check_details(stored, rendered, NOW) == [
        {"name": "prov", "state": "Pending", "message": "Reset to Pending after eviction. Previously: Retry",
         "lastTransitionTime": format_time(NOW), "requeueAfterSeconds": 120, "retryCount": 2},
        {"name": "other", "state": "Pending", "message": "Reset to Pending after eviction. Previously: Ready",
         "lastTransitionTime": format_time(NOW)},
        {"name": "new", "state": "Pending", "message": ""}]

