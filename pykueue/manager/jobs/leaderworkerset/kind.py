"""LeaderWorkerSet (leaderworkerset.x-k8s.io/v1): one Workload per group, with
``leader``/``worker`` pod sets (``main`` without a leader template). Its pods run through
the pod kind, which it enables."""

from __future__ import annotations

from pykueue.api import keys
from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import owned_workload, workload_name
from pykueue.manager.core.objects import named_meta
from pykueue.manager.jobs.leaderworkerset.lifecycle import GROUP, LIFECYCLE
from pykueue.manager.jobs.leaderworkerset.webhook import WEBHOOK
from pykueue.manager.jobs.registry import JobKind, WebhookRules
from pykueue.manager.jobs.related import NO_RELATED, Related


def workloads(lws: JSON, related: Related = NO_RELATED) -> list[JSON]:
    meta, spec = named_meta(lws), lws.get("spec") or {}
    lwt = spec.get("leaderWorkerTemplate") or {}
    size = int(lwt.get("size", 1))
    if lwt.get("leaderTemplate"):
        podsets = [{"name": "leader", "count": 1, "template": lwt["leaderTemplate"]},
                   {"name": "worker", "count": size - 1, "template": lwt.get("workerTemplate") or {}}]
    else:
        podsets = [{"name": "main", "count": size, "template": lwt.get("workerTemplate") or {}}]
    out = []
    for i in range(int(spec.get("replicas", 1))):
        name = workload_name("LeaderWorkerSet", GROUP, f"{meta['name']}-{i}", str(meta.get("uid", "")))
        annotations = {keys.IS_GROUP_WORKLOAD: "true",
                       keys.JOB_OWNER_GVK: f"{GROUP}/v1, Kind=LeaderWorkerSet",
                       keys.JOB_OWNER_NAME: meta["name"], keys.COMPONENT_WORKLOAD_INDEX: str(i)}
        out.append(owned_workload(lws, name, [dict(p) for p in podsets], controller=False,
                                  extra_annotations=annotations))
    return out


# A LeaderWorkerSet is never written (its groups run through their pods): adoption stamps
# each pod with its group (a PUT of the pod).
KIND = JobKind(LIFECYCLE.integration, LIFECYCLE, WEBHOOK, workloads, (ApiAccess("", "pods", ("update",)),),
               # Scaling a LeaderWorkerSet changes its groups: the defaulter sees updates too.
               webhook_rules=WebhookRules(mutate=("CREATE", "UPDATE")), cli_aliases=("lws",))
