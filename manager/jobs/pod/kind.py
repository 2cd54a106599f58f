"""Kueue's pod integration: plain pods and pod groups (enabled by ``pod``) and the pods of
LeaderWorkerSet groups (implied by the LWS integration), gated until their Workload is
admitted."""

from __future__ import annotations

from manager.jobs.pod.lifecycle import LIFECYCLE
from manager.jobs.pod.webhook import WEBHOOK
from manager.jobs.registry import JobKind, RbacRule

KIND = JobKind(
    LIFECYCLE.integration, LIFECYCLE, WEBHOOK, None,
    (RbacRule("", ("pods",), ("get", "list", "watch", "update", "patch", "delete")),
     RbacRule("", ("pods/status",), ("get", "patch", "update")),
     RbacRule("", ("pods/finalizers",), ("update",))))
