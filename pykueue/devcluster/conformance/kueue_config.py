"""A scenario's ``spec.config`` as the Configuration file real Kueue starts with.

Scenario configs follow pykueue's reading of Kueue's Configuration, which also accepts the
v1beta1 spelling ``enable: false|true`` of ``fairSharing`` and ``waitForPodsReady``; v1beta2
has no ``enable`` field. ``fairSharing`` is on when present; ``waitForPodsReady`` is on in
Kueue v0.19.2 even when absent, so a scenario that turns it off gets Kueue's
``DisableWaitForPodsReady`` gate. A scenario's ``featureGates`` are passed as they are
(Kueue's defaults otherwise, as ``simulate`` takes them). Keys Kueue's Configuration does
not have are reported, so the scenario is skipped rather than run with a configuration
that silently differs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_API = "config.kueue.x-k8s.io/v1beta2"
NAMESPACE = "kueue-system"
WEBHOOK_SERVICE = "kueue-webhook-service"
WEBHOOK_SECRET = "kueue-webhook-server-cert"
# Job kinds whose controllers the harness runs Kueue with; other kinds need their CRDs and
# operators, which the private control plane does not have.
FRAMEWORKS = ("batch/job",)

FAIR_SHARING_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
DISABLE_WAIT_FOR_PODS_READY = "DisableWaitForPodsReady"
# Sections a scenario may set, passed through after the renames below.
_PASSED = (
    "waitForPodsReady",
    "fairSharing",
    "admissionFairSharing",
    "resources",
    "manageJobsWithoutQueueName",
    "objectRetentionPolicies",
    "featureGates",
)
# Sections the harness owns: a scenario setting them cannot be run faithfully.
_OWNED = (
    "namespace",
    "health",
    "metrics",
    "webhook",
    "leaderElection",
    "internalCertManagement",
    "clientConnection",
    "integrations",
    "visibilityServer",
    "pprofBindAddress",
    "controller",
    "tls",
    "multiKueue",
    "managedJobsNamespaceSelector",
)


@dataclass(frozen=True)
class Listeners:
    """Where the Kueue process listens (loopback ports chosen per run)."""

    webhook_port: int
    health_port: int
    cert_dir: Path


def _without_enable(section: Any) -> dict[str, Any] | None:
    """A v1beta1-style section; None when it says ``enable: false`` (the feature is off)."""
    if not isinstance(section, dict):
        return {}
    if section.get("enable") is False:
        return None
    return {k: v for k, v in section.items() if k != "enable"}


def scenario_sections(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The Kueue sections a scenario config asks for, and the keys that cannot be expressed."""
    sections: dict[str, Any] = {}
    unsupported: list[str] = []
    for key, value in config.items():
        if key in ("fairSharing", "waitForPodsReady"):
            section = _without_enable(value)
            if section is None and key == "waitForPodsReady":
                # Absent, Kueue v0.19.2 still waits for pods ready (30 minutes): off takes its gate.
                gates = sections.setdefault("featureGates", {})
                gates.setdefault(DISABLE_WAIT_FOR_PODS_READY, True)
            if section is not None:
                if key == "fairSharing" and not section.get("preemptionStrategies"):
                    # v1beta2 requires them; these are the defaults the scenario relies on.
                    section["preemptionStrategies"] = list(FAIR_SHARING_STRATEGIES)
                sections[key] = section
        elif key == "featureGates":
            sections.setdefault("featureGates", {}).update(copy.deepcopy(value) or {})
        elif key in _PASSED:
            sections[key] = copy.deepcopy(value)
        elif key in _OWNED:
            unsupported.append(f"config.{key} (set by the harness)")
        else:
            unsupported.append(f"config.{key} (not a Kueue Configuration field)")
    return sections, unsupported


def configuration(config: dict[str, Any], listeners: Listeners) -> tuple[dict[str, Any], list[str]]:
    """The full Configuration document, and the keys of ``config`` left out."""
    sections, unsupported = scenario_sections(config)
    gates = {"VisibilityOnDemand": False}  # its API server would need a port and an APIService
    gates.update(sections.pop("featureGates", None) or {})
    document: dict[str, Any] = {
        "apiVersion": CONFIG_API,
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{listeners.health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": listeners.webhook_port, "certDir": str(listeners.cert_dir)},
        "leaderElection": {"leaderElect": False},
        # Kueue then makes its own serving certificate for the webhook Service name and injects
        # its CA; without it Kueue insists on certificate files under /etc.
        "internalCertManagement": {
            "enable": True,
            "webhookServiceName": WEBHOOK_SERVICE,
            "webhookSecretName": WEBHOOK_SECRET,
        },
        "clientConnection": {"qps": 500, "burst": 1000},
        "integrations": {"frameworks": list(FRAMEWORKS)},
        "featureGates": gates,
    }
    document.update(sections)
    return document, unsupported
