"""The defaults every job kind's mutating webhook applies: suspend, the ``default``
LocalQueue, the ``default`` WorkloadPriorityClass, managedBy under MultiKueue.
"""

from __future__ import annotations

from collections.abc import Callable

from pykueue.api import keys
from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import queue_name
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.job_fields import priority_class_label, set_label
from pykueue.manager.jobs.ownership import (
    direct_owner_managed_kind,
    managed_by_default,
    namespace_selected,
    workload_should_be_suspended,
)


def apply_default_local_queue(obj: JSON, ctx: AdmissionContext) -> None:
    """Label ``queue-name: default`` when LocalQueue ``default`` exists and nothing else decides."""
    if not ctx.facts.default_local_queue or queue_name(obj):
        return
    if direct_owner_managed_kind(obj, ctx.policy):
        return
    if not namespace_selected(ctx.policy, ctx.facts.namespace_labels):
        return
    set_label(obj, keys.QUEUE_NAME, keys.DEFAULT_LOCAL_QUEUE)


def apply_default_priority_class(obj: JSON, ctx: AdmissionContext) -> None:
    if not ctx.gate("WorkloadPriorityClassDefaulting") or not ctx.facts.default_priority_class:
        return
    if priority_class_label(obj) or direct_owner_managed_kind(obj, ctx.policy):
        return
    set_label(obj, keys.PRIORITY_CLASS, keys.DEFAULT_PRIORITY_CLASS)


def apply_job_defaults(
    obj: JSON,
    ctx: AdmissionContext,
    switches: Callable[[JSON], JSON],
    is_suspended: Callable[[JSON], bool],
    own_controller: str,
) -> JSON:
    """Kueue's BaseWebhook defaulting of a kind with a suspend switch: default LocalQueue and
    priority class, ``suspend`` when Kueue manages it, MultiKueue ``managedBy``.

    ``switches`` returns (creating it when absent) the mapping holding ``suspend`` and
    ``managedBy``: ``spec`` of a Job, ``spec.runPolicy`` of a training job. It is called after
    the label defaults, which decide whether the object is managed. Returns that mapping.
    """
    apply_default_local_queue(obj, ctx)
    apply_default_priority_class(obj, ctx)
    holder = switches(obj)
    if workload_should_be_suspended(obj, ctx) and not is_suspended(obj):
        holder["suspend"] = True
    managed_by = managed_by_default(holder.get("managedBy"), own_controller, ctx, obj)
    if managed_by is not None:
        holder["managedBy"] = managed_by
    return holder
