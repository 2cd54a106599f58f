"""``integrations.labelKeysToCopy``: labels of a job that its Workloads carry too.

A job's own label is copied when present (a key it lacks is simply left out). A pod group
has one Workload for several pods: a key is copied from whichever pods carry it, and pods
that disagree on its value make the Workload impossible to build, as in Kueue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pykueue.api.wire import JSON, meta
from pykueue.manager.core.objects import ObjectError

GROUP_MISMATCH = "constructing workload: pods have different label values"


def labels_to_copy(job: Mapping[str, Any], keys: Iterable[str]) -> dict[str, str]:
    """The labels with ``keys`` that the job's Workloads get (raises ObjectError on a group's
    disagreement)."""
    wanted = tuple(keys)
    if not wanted:
        return {}
    members = job.get("pods")
    sources = members if isinstance(members, list) else [job]
    out: dict[str, str] = {}
    for source in sources:
        own = meta(source).get("labels") or {}
        for key in wanted:
            if key not in own:
                continue
            if key in out and out[key] != own[key]:
                raise ObjectError(GROUP_MISMATCH)
            out[key] = str(own[key])
    return out


def with_copied_labels(workloads: list[JSON], job: Mapping[str, Any], keys: Iterable[str]) -> list[JSON]:
    """The Workloads, each with the job's labels of ``keys`` added (in place)."""
    copied = labels_to_copy(job, keys) if workloads else {}
    for wl in workloads:
        if copied:
            wl.setdefault("metadata", {}).setdefault("labels", {}).update(copied)
    return workloads
