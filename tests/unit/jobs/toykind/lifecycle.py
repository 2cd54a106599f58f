"""How a ToyJob is suspended, started and finished: ``spec.suspend`` as a Job's."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON, meta
from pykueue.manager.core.jobs_to_workloads import workload_name
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.lifecycle import Action, Finished, PodSetInfo, Replace, TopLevelOwner

TOY = Integration("example.com/toyjob", "example.com", "v1", "ToyJob", "toyjobs", prebuilt=True)


def spec_of(job: Mapping[str, Any]) -> JSON:
    spec: JSON = job.get("spec") or {}
    return spec


class ToyLifecycle(TopLevelOwner):
    integration = TOY

    def workload_name(self, job: Mapping[str, Any]) -> str:
        return workload_name("ToyJob", TOY.group, str(meta(job)["name"]), str(meta(job).get("uid", "")))

    def is_suspended(self, job: Mapping[str, Any]) -> bool:
        return bool(spec_of(job).get("suspend"))

    def is_active(self, job: Mapping[str, Any]) -> bool:
        return not self.is_suspended(job)

    def still_running(self, job: Mapping[str, Any]) -> bool:
        return bool((job.get("status") or {}).get("active"))

    def start(self, job: Mapping[str, Any], workload: Mapping[str, Any],
              infos: list[PodSetInfo]) -> list[Action]:
        started = copy.deepcopy(dict(job))
        started["spec"]["suspend"] = False
        started["spec"]["nodeSelector"] = dict(infos[0].node_selector)
        return [Replace(started)]

    def stop(self, job: Mapping[str, Any]) -> list[Action]:
        stopped = copy.deepcopy(dict(job))
        stopped["spec"]["suspend"] = True
        return [Replace(stopped)]

    def restore(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Action]:
        return []

    def finished(self, job: Mapping[str, Any]) -> Finished | None:
        return Finished(keys.Reason.SUCCEEDED, "done") if (job.get("status") or {}).get("done") else None

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        return True


LIFECYCLE = ToyLifecycle()
