"""objectRetentionPolicies.workloads.afterFinished: configuration and the due-time rule."""

from __future__ import annotations

import pytest

from pykueue.manager.core.config import ConfigError
from pykueue.manager.runtime.controllers.retention import after_finished, deletion_due


def _finished(at: str, status: str = "True") -> dict[str, object]:
    return {"status": {"conditions": [{"type": "Finished", "status": status, "lastTransitionTime": at}]}}


def test_after_finished_from_configuration() -> None:
    assert after_finished({}) is None
    assert after_finished({"objectRetentionPolicies": {"workloads": {}}}) is None
    assert after_finished({"objectRetentionPolicies": {"workloads": {"afterFinished": "1m30s"}}}) == 90.0
    assert after_finished({"objectRetentionPolicies": {"workloads": {"afterFinished": "0s"}}}) == 0.0
    with pytest.raises(ConfigError):
        after_finished({"objectRetentionPolicies": {"workloads": {"afterFinished": "soon"}}})
    with pytest.raises(ConfigError):
        after_finished({"objectRetentionPolicies": {"workloads": {"afterFinished": -5}}})


def test_deletion_is_due_after_the_finished_transition() -> None:
    assert deletion_due(_finished("2026-01-01T00:00:00Z"), 60.0) == 1767225600.0 + 60.0
    assert deletion_due(_finished("2026-01-01T00:00:00Z", status="False"), 60.0) is None
    assert deletion_due({"status": {}}, 0.0) is None
    assert deletion_due({}, 0.0) is None
