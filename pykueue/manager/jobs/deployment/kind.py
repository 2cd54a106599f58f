"""Deployment (apps/v1): no Workload of its own and nothing to reconcile; its webhook stamps
the pod template so that its pods run as plain pods, one Workload each. It implies the pod
integration for them."""

from __future__ import annotations

from pykueue.manager.jobs.deployment.lifecycle import LIFECYCLE
from pykueue.manager.jobs.deployment.webhook import WEBHOOK
from pykueue.manager.jobs.registry import JobKind, WebhookRules

# A queue label added later is stamped then: the defaulter sees updates too.
KIND = JobKind(LIFECYCLE.integration, LIFECYCLE, WEBHOOK, None,
               webhook_rules=WebhookRules(mutate=("CREATE", "UPDATE")), reconciled=False)
