"""The install's admission webhook configurations, generated from what the webhook serves.

Every job kind in the registry contributes its mutating and validating hook (paths as
Kueue's, operations from its ``WebhookRules``); pykueue's own kinds add theirs. The result is
``manifests/06-webhooks.yaml`` (``make manifests`` writes it; a unit test fails when the file
and the registry drift apart), which the dev cluster also registers, with URLs instead of the
Service. The chart's template lists the same rows and is checked against :func:`rows`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import yaml

from pykueue.api import keys
from pykueue.manager.jobs.registry import kinds, webhook_path

SERVICE = {"name": "pykueue-webhook-service", "namespace": "pykueue-system"}
# Job kinds are never queued in these namespaces (the system's own pods must not wait).
SYSTEM_NAMESPACES = ("kube-system", "pykueue-system")
TIMEOUT_S = 10
HEADER = """\
# Admission webhooks served by `pykueue run` (paths as Kueue's), generated from the job kind
# registry by `make manifests`: do not edit by hand. failurePolicy Fail: nothing managed is
# created unseen. Job-kind webhooks skip kube-system and pykueue-system. The caBundle is
# injected by pykueue at start-up from its self-managed CA.
"""


@dataclass(frozen=True)
class HookRow:
    """The hooks of one kind: empty operations mean no such hook."""

    name: str  # lower-case kind: the hook is ``m<name>.pykueue.x-k8s.io`` / ``v<name>...``
    group: str
    version: str
    kind: str
    resources: tuple[str, ...]  # the mutating hook watches the first only (never status)
    mutate: tuple[str, ...]
    validate: tuple[str, ...]
    job_kind: bool

    def operations(self, verb: str) -> tuple[str, ...]:
        return self.mutate if verb == "mutate" else self.validate


_CREATE, _CREATE_UPDATE = ("CREATE",), ("CREATE", "UPDATE")
OWN_KINDS: tuple[HookRow, ...] = (
    HookRow("clusterqueue", keys.GROUP, keys.V1BETA2, "ClusterQueue", ("clusterqueues",),
            _CREATE, _CREATE_UPDATE, False),
    HookRow("cohort", keys.GROUP, keys.V1BETA2, "Cohort", ("cohorts",), (), _CREATE_UPDATE, False),
    HookRow("resourceflavor", keys.GROUP, keys.V1BETA2, "ResourceFlavor", ("resourceflavors",),
            _CREATE, _CREATE_UPDATE, False),
    HookRow("workload", keys.GROUP, keys.V1BETA2, "Workload", ("workloads", "workloads/status"),
            _CREATE, _CREATE_UPDATE, False),
)


def rows() -> list[HookRow]:
    """Every kind's hooks: the registered job kinds that have a webhook, then pykueue's own."""
    jobs = [HookRow(k.integration.kind.lower(), k.integration.group, k.integration.version,
                    k.integration.kind, (k.integration.plural,), k.webhook_rules.mutate,
                    k.webhook_rules.validate, True)
            for k in kinds() if k.webhook is not None]
    return [*jobs, *OWN_KINDS]


def _hook(row: HookRow, verb: str) -> dict[str, Any]:
    resources = row.resources[:1] if verb == "mutate" else row.resources
    path = webhook_path(verb, (row.group, row.version, row.kind))
    hook: dict[str, Any] = {
        "name": f"{verb[0]}{row.name}.pykueue.x-k8s.io",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": TIMEOUT_S,
        "clientConfig": {"service": {**SERVICE, "path": path}},
        "rules": [{"apiGroups": [row.group], "apiVersions": [row.version],
                   "operations": list(row.operations(verb)), "resources": list(resources)}],
    }
    if row.job_kind:
        hook["namespaceSelector"] = {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(SYSTEM_NAMESPACES)}]}
    return hook


def configurations() -> list[dict[str, Any]]:
    """The Mutating- and ValidatingWebhookConfiguration of the install."""
    docs = []
    for kind, verb in (("Mutating", "mutate"), ("Validating", "validate")):
        docs.append({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": f"{kind}WebhookConfiguration",
            "metadata": {"name": f"pykueue-{kind.lower()}-webhook-configuration",
                         "labels": {"app.kubernetes.io/name": "pykueue"}},
            "webhooks": [_hook(row, verb) for row in rows() if row.operations(verb)],
        })
    return docs


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def render() -> str:
    """``manifests/06-webhooks.yaml`` as it should read."""
    return HEADER + yaml.dump_all(configurations(), Dumper=_NoAliases, sort_keys=False)


if __name__ == "__main__":
    sys.stdout.write(render())
