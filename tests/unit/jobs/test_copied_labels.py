"""``integrations.labelKeysToCopy``: the job's labels its Workloads carry (Kueue v0.19.2's
NewWorkload and the pod group's getByKey)."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api.wire import JSON
from pykueue.manager.core.objects import ObjectError
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.copied_labels import GROUP_MISMATCH, labels_to_copy, with_copied_labels


def _obj(**labels: str) -> JSON:
    return {"metadata": {"name": "x", "labels": dict(labels)}}


def test_the_configured_keys_are_read_from_the_configuration() -> None:
    policy = AdmissionPolicy.from_config({"integrations": {"frameworks": ["batch/job"],
                                                           "labelKeysToCopy": ["team", "cost-center"]}})
    assert policy.label_keys_to_copy == ("team", "cost-center")
    assert AdmissionPolicy.from_config({}).label_keys_to_copy == ()


def test_a_job_gives_the_keys_it_has_and_skips_those_it_lacks() -> None:
    job = _obj(team="ml", other="x")
    assert labels_to_copy(job, ["team", "cost-center"]) == {"team": "ml"}
    (wl,) = with_copied_labels([{"metadata": {"labels": {"kueue.x-k8s.io/job-uid": "u"}}}], job, ["team"])
    assert wl["metadata"]["labels"] == {"kueue.x-k8s.io/job-uid": "u", "team": "ml"}


def test_nothing_is_copied_without_keys() -> None:
    wl: dict[str, Any] = {"metadata": {"name": "w"}}
    assert with_copied_labels([wl], _obj(team="ml"), []) == [{"metadata": {"name": "w"}}]


def test_a_pod_group_copies_from_any_member_and_agreeing_members_are_fine() -> None:
    group = {"kind": "PodGroup", "pods": [_obj(team="ml"), _obj(team="ml", tier="a"), _obj()]}
    assert labels_to_copy(group, ["team", "tier"]) == {"team": "ml", "tier": "a"}


def test_a_pod_group_whose_members_disagree_has_no_workload() -> None:
    group = {"kind": "PodGroup", "pods": [_obj(team="ml"), _obj(team="infra")]}
    with pytest.raises(ObjectError, match=GROUP_MISMATCH):
        with_copied_labels([{"metadata": {}}], group, ["team"])
