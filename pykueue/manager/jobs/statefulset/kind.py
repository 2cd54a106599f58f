"""StatefulSet (apps/v1): one Workload for the whole set, one pod set ``main`` of
``spec.replicas`` pods; its pods run through the pod kind as one serving group, which it
enables."""

from __future__ import annotations

from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.manager.jobs.registry import JobKind, WebhookRules
from pykueue.manager.jobs.related import NO_RELATED, Related
from pykueue.manager.jobs.statefulset.lifecycle import LIFECYCLE, group_workloads, replicas
from pykueue.manager.jobs.statefulset.webhook import WEBHOOK


def workloads(sts: JSON, related: Related = NO_RELATED) -> list[JSON]:
    """The Workload a StatefulSet gets (none while scaled to zero)."""
    return group_workloads(sts) if replicas(sts) > 0 else []


# A StatefulSet is never written (its group runs through its pods): adoption stamps each pod
# with its group (a PUT of the pod).
KIND = JobKind(LIFECYCLE.integration, LIFECYCLE, WEBHOOK, workloads, (ApiAccess("", "pods", ("update",)),),
               # A queue label added later is stamped then: the defaulter sees updates too.
               webhook_rules=WebhookRules(mutate=("CREATE", "UPDATE")), cli_aliases=("sts",))
