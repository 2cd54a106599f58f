"""A ProvisioningRequest check's configuration: the ProvisioningRequestConfig its
AdmissionCheck names, with the defaults the CRD applies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.api import keys

CONFIG_GROUP = "kueue.x-k8s.io"
CONFIG_KIND = "ProvisioningRequestConfig"
CONFIG_RESOURCE = "provisioningrequestconfigs.kueue.x-k8s.io"


@dataclass(frozen=True)
class CheckConfig:
    class_name: str
    parameters: Mapping[str, str]
    managed_resources: frozenset[str]
    backoff_limit: int
    backoff_base_s: int
    backoff_max_s: int
    # (node selector key, provisioningClassDetails key it takes its value from)
    node_selector_updates: tuple[tuple[str, str], ...] | None
    merge_policy: str | None

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> CheckConfig:
        spec = config.get("spec") or {}
        retry = spec.get("retryStrategy") or {}
        updates = spec.get("podSetUpdates")
        return cls(
            class_name=str(spec.get("provisioningClassName") or ""),
            parameters={str(k): str(v) for k, v in (spec.get("parameters") or {}).items()},
            managed_resources=frozenset(str(r) for r in spec.get("managedResources") or ()),
            backoff_limit=int(retry.get("backoffLimitCount", 3)),
            backoff_base_s=int(retry.get("backoffBaseSeconds", 60)),
            backoff_max_s=int(retry.get("backoffMaxSeconds", 1800)),
            node_selector_updates=None if updates is None else tuple(
                (str(u.get("key")), str(u.get("valueFromProvisioningClassDetail")))
                for u in updates.get("nodeSelector") or ()),
            merge_policy=spec.get("podSetMergePolicy"))


def is_provisioning_check(check: Mapping[str, Any]) -> bool:
    return (check.get("spec") or {}).get("controllerName") == keys.PROVISIONING_REQUEST_CONTROLLER


def config_name(check: Mapping[str, Any]) -> tuple[str | None, str]:
    """The ProvisioningRequestConfig a check names, or None and why it names none (Kueue's
    wording of a bad parameters reference)."""
    ref = (check.get("spec") or {}).get("parameters")
    if not ref:
        return None, "missing parameters reference"
    name, group, kind = str(ref.get("name") or ""), str(ref.get("apiGroup") or ""), str(ref.get("kind") or "")
    if not name:
        return None, "empty name: bad parameters reference"
    if group != CONFIG_GROUP:
        return None, f'wrong group "{group}", expecting "{CONFIG_GROUP}": bad parameters reference'
    if kind != CONFIG_KIND:
        return None, f'wrong kind "{kind}", expecting "{CONFIG_KIND}": bad parameters reference'
    return name, ""


def active_condition(check: Mapping[str, Any],
                     configs: Mapping[str, Mapping[str, Any]]) -> tuple[bool, str, str]:
    """(active, reason, message) of the check's ``Active`` condition: active while its
    parameters name a ProvisioningRequestConfig that exists."""
    name, why = config_name(check)
    if name is None:
        return False, "BadParametersRef", why
    if name not in configs:
        return False, "BadParametersRef", f'{CONFIG_RESOURCE} "{name}" not found'
    return True, "Active", "The admission check is active"
