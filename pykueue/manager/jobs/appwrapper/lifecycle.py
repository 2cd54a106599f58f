"""workload.codeflare.dev/v1beta2 AppWrapper, as Kueue v0.19.2 runs it.

``spec.suspend`` is the switch. The AppWrapper controller creates the wrapped objects once it
sees an AppWrapper unsuspended, and deletes them when it is suspended again; the objects it
creates are controlled by the AppWrapper, so they run under its Workload and get none of
their own (the ancestor rule of ``manager.jobs.ownership``).

The Workload has one pod set per pod set of every component (``components``), named
``<appwrapper>-<index>`` in order. Start writes each pod set's admission into the component's
``podSetInfos`` (labels, annotations, node selector, tolerations; the AppWrapper controller
merges them into the wrapped object's pod templates when it creates it) and unsuspends, in one
write; restore empties every ``podSetInfos``. The AppWrapper reports its own progress in
``status``: quota is still held while its ``QuotaReserved`` condition is true (the controller
clears it once the wrapped objects are gone), the pods are ready with its ``PodsReady``
condition, and it is finished in phase ``Succeeded``, or ``Failed`` once its resources are
deleted.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON, meta
from pykueue.manager.core.jobs_to_workloads import workload_name
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.lifecycle import (
    Action,
    Finished,
    PodSetInfo,
    Replace,
    StartConflict,
    SuspendedBySpec,
    TopLevelOwner,
    condition_true,
)
from pykueue.manager.jobs.multikueue.adapter import SpecCopyAdapter

from .components import component_pod_sets, components

GROUP = "workload.codeflare.dev"
VERSION = "v1beta2"
KIND = "AppWrapper"
# The AppWrapper controller's name in spec.managedBy (the value MultiKueue may replace).
OWN_CONTROLLER = "workload.codeflare.dev/appwrapper-controller"
QUOTA_RESERVED, PODS_READY, RESOURCES_DEPLOYED = "QuotaReserved", "PodsReady", "ResourcesDeployed"


def podset_name(aw: Mapping[str, Any], index: int) -> str:
    return f"{meta(aw).get('name')}-{index}"


def _pod_set_info(info: PodSetInfo) -> JSON:
    out: JSON = {}
    if info.annotations:
        out["annotations"] = dict(info.annotations)
    if info.labels:
        out["labels"] = dict(info.labels)
    if info.node_selector:
        out["nodeSelector"] = dict(info.node_selector)
    if info.tolerations:
        out["tolerations"] = [dict(t) for t in info.tolerations]
    return out


class AppWrapperLifecycle(SuspendedBySpec, TopLevelOwner):
    integration: Integration = Integration("workload.codeflare.dev/appwrapper", GROUP, VERSION, KIND,
                                           "appwrappers", prebuilt=True)
    # The AppWrapper controller leaves an AppWrapper alone whose spec.managedBy names another.
    multikueue: SpecCopyAdapter = SpecCopyAdapter(("spec",))

    def workload_name(self, job: Mapping[str, Any]) -> str:
        m = meta(job)
        return workload_name(KIND, GROUP, str(m.get("name")), str(m.get("uid", "")))

    def still_running(self, job: Mapping[str, Any]) -> bool:
        # Kueue's IsActive: the controller holds the quota until the wrapped objects are gone.
        return condition_true(job, QUOTA_RESERVED)

    def start(self, job: Mapping[str, Any], workload: Mapping[str, Any],
              infos: list[PodSetInfo]) -> list[Action]:
        out = copy.deepcopy(dict(job))
        sets = component_pod_sets(out)
        wanted = sum(len(s) for s in sets)
        if len(infos) != wanted:
            raise StartConflict(f"invalid podset infos: expecting {wanted} podsets, got {len(infos)}")
        given = iter(infos)
        for comp, comp_sets in zip(components(out), sets, strict=True):
            comp["podSetInfos"] = [_pod_set_info(next(given)) for _ in comp_sets]
        out.setdefault("spec", {})["suspend"] = False
        return [Replace(out)]

    def restore(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Action]:
        if not self.is_suspended(job):
            return []
        out = copy.deepcopy(dict(job))
        changed = False
        for comp in components(out):
            if "podSetInfos" in comp:
                del comp["podSetInfos"]
                changed = True
        return [Replace(out)] if changed else []

    def finished(self, job: Mapping[str, Any]) -> Finished | None:
        phase = (job.get("status") or {}).get("phase")
        if phase == "Succeeded":
            return Finished(keys.Reason.SUCCEEDED, "AppWrapper finished successfully")
        if phase == "Failed" and not condition_true(job, RESOURCES_DEPLOYED):
            return Finished(keys.Reason.FAILED, "AppWrapper failed")
        return None  # (a Failed one still deleting its resources keeps its quota)

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        return condition_true(job, PODS_READY)


LIFECYCLE = AppWrapperLifecycle()
