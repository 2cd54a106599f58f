"""A Deployment has nothing to reconcile (Kueue registers a no-op reconciler for it): each of
its pods, stamped by the webhook, runs as a plain pod under a Workload of its own
(``manager.jobs.pod``), so scaling out adds pods that wait for quota one by one and scaling
in frees the quota of the pods removed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import queue_name
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.integrations import Integration

DEPLOYMENT = Integration("deployment", "apps", "v1", "Deployment", "deployments")


class DeploymentLifecycle:
    integration: Integration = DEPLOYMENT

    def is_managed(self, job: Mapping[str, Any], policy: AdmissionPolicy,
                   namespace_labels: Mapping[str, str]) -> bool:
        return False  # its pods are

    def queue_name(self, job: Mapping[str, Any]) -> str:
        return queue_name(job)

    def workloads(self, job: Mapping[str, Any]) -> list[JSON]:
        return []


LIFECYCLE = DeploymentLifecycle()
