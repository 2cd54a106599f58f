"""Admission of apps/v1 Deployments (Kueue's ``deployment_webhook.go``; CREATE and UPDATE).

A Deployment has no suspend field and no Workload of its own: when Kueue manages it, its pod
template is stamped with the ``managed`` label, the queue and priority-class labels and the
``pod-suspending-parent: deployment`` annotation, so every pod its ReplicaSets create is gated
by the pod webhook and runs as a plain pod of its own Workload (``manager.jobs.pod``).
Defaulting runs on UPDATE too, so a queue set later is stamped then.
"""

from __future__ import annotations

from pykueue.api import keys
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import queue_name
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_default_local_queue, apply_default_priority_class
from pykueue.manager.jobs.job_fields import priority_class_label, set_annotation, set_label
from pykueue.manager.jobs.ownership import workload_should_be_suspended
from pykueue.manager.jobs.serving_rules import create_errors, pod_template, update_errors

FRAMEWORK = "deployment"
GVK = "apps/v1, Kind=Deployment"


class DeploymentWebhook:
    integration = FRAMEWORK
    group, kind = "apps", "Deployment"

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        apply_default_local_queue(obj, ctx)
        apply_default_priority_class(obj, ctx)
        if not workload_should_be_suspended(obj, ctx):
            return obj
        template = pod_template(obj)
        set_annotation(template, keys.POD_SUSPENDING_PARENT, FRAMEWORK)
        set_label(template, keys.MANAGED, "true")
        if queue := queue_name(obj):
            set_label(template, keys.QUEUE_NAME, queue)
        if priority := priority_class_label(obj):
            set_label(template, keys.PRIORITY_CLASS, priority)
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        if old is None:
            return create_errors(obj, ctx, GVK)
        return update_errors(obj, old, ctx, GVK)


WEBHOOK = DeploymentWebhook()
