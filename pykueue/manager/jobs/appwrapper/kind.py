"""AppWrapper (workload.codeflare.dev/v1beta2): one Workload, one pod set per pod set of each
wrapped component, named ``<appwrapper>-<index>``."""

from __future__ import annotations

from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import owned_workload
from pykueue.manager.core.objects import ObjectError, named_meta
from pykueue.manager.jobs.registry import JobKind, job_rbac
from pykueue.manager.jobs.related import NO_RELATED, Related

from .components import PathError, pod_sets, replicas
from .lifecycle import LIFECYCLE, podset_name
from .webhook import WEBHOOK


def workloads(aw: JSON, related: Related = NO_RELATED) -> list[JSON]:
    m = named_meta(aw)
    try:
        sets = pod_sets(aw)
    except PathError as exc:
        raise ObjectError(f"AppWrapper {m['name']}: {exc}") from exc
    if not sets:
        raise ObjectError(f"AppWrapper {m['name']}: its components have no pod sets")
    podsets = [{"name": podset_name(aw, i), "count": replicas(ps), "template": template}
               for i, (ps, template) in enumerate(sets)]
    return [owned_workload(aw, LIFECYCLE.workload_name(aw), podsets, controller=True)]


KIND = JobKind(LIFECYCLE.integration, LIFECYCLE, WEBHOOK, workloads,
               job_rbac(LIFECYCLE.integration.group, LIFECYCLE.integration.plural), cli_aliases=("aw",))
