"""Pods of a LeaderWorkerSet group: gated until their group's Workload is
admitted. They run under the group's Workload (no Workloads of their own), and only while
the LeaderWorkerSet integration is enabled, as in Kueue."""

from __future__ import annotations

from manager.jobs.pod.lifecycle import LIFECYCLE
from manager.jobs.pod.webhook import WEBHOOK
from manager.jobs.registry import JobKind, RbacRule

KIND = JobKind(
    LIFECYCLE.integration, LIFECYCLE, WEBHOOK, None,
    (RbacRule("", ("pods",), ("get", "list", "watch", "update", "patch", "delete")),
     RbacRule("", ("pods/status",), ("get", "patch", "update")),
     RbacRule("", ("pods/finalizers",), ("update",))),
    enabled_by="leaderworkerset.x-k8s.io/leaderworkerset")
