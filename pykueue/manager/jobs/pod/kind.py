"""Kueue's pod integration: plain pods and pod groups (enabled by ``pod``) and the pods of
LeaderWorkerSet groups (implied by the LWS integration), gated until their Workload is
admitted."""

from __future__ import annotations

from pykueue.api.access import ApiAccess
from pykueue.manager.jobs.pod.lifecycle import LIFECYCLE
from pykueue.manager.jobs.pod.webhook import WEBHOOK
from pykueue.manager.jobs.registry import JobKind

# Start ungates pods and the end of a group releases their finalizer (PUTs); stop deletes them.
KIND = JobKind(LIFECYCLE.integration, LIFECYCLE, WEBHOOK, None,
               (ApiAccess("", "pods", ("update", "delete")),))
