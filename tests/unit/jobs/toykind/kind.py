"""The ToyJob kind: one pod set ``main`` of ``spec.replicas`` pods of one CPU each."""

from __future__ import annotations

from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import owned_workload, workload_name
from pykueue.manager.core.objects import named_meta
from pykueue.manager.jobs.registry import JobKind, job_rbac
from pykueue.manager.jobs.related import NO_RELATED, Related

from .lifecycle import LIFECYCLE, TOY, spec_of
from .webhook import WEBHOOK


def workloads(job: JSON, related: Related = NO_RELATED) -> list[JSON]:
    m = named_meta(job)
    podset = {"name": "main", "count": int(spec_of(job).get("replicas", 1)),
              "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}
    return [owned_workload(job, workload_name("ToyJob", TOY.group, m["name"], str(m.get("uid", ""))),
                           [podset], controller=True)]


KIND = JobKind(TOY, LIFECYCLE, WEBHOOK, workloads, job_rbac(TOY.group, TOY.plural), cli_aliases=("toy",))
