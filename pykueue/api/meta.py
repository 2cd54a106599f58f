"""Kubernetes types shared by the Kueue models: object metadata, conditions, selectors,
taints and tolerations, plus the validation patterns the Kueue schemas repeat."""

from __future__ import annotations

from typing import Any

from pykueue.api.fields import Items, Model, Rule, f

DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
QUALIFIED_NAME = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
CONDITION_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"

# The apiserver owns metadata's schema; a CRD may only say it is an object.
_OBJECT = {"type": "object"}


class OwnerReference(Model):
    api_version: str = f(required=True)
    kind: str = f(required=True)
    name: str = f(required=True)
    uid: str = f(required=True)
    controller: bool | None = f()
    block_owner_deletion: bool | None = f()


class ObjectMeta(Model):
    name: str | None = f()
    generate_name: str | None = f()
    namespace: str | None = f()
    labels: dict[str, str] | None = f()
    annotations: dict[str, str] | None = f()
    uid: str | None = f()
    resource_version: str | None = f()
    generation: int | None = f()
    creation_timestamp: str | None = f()
    deletion_timestamp: str | None = f()
    owner_references: list[OwnerReference] | None = f()
    finalizers: list[str] | None = f()


def metadata_field() -> Any:
    return f(schema=_OBJECT)


class Condition(Model):
    """metav1.Condition."""

    type: str = f(required=True, max_length=316, pattern=QUALIFIED_NAME)
    status: str = f(required=True, enum=("True", "False", "Unknown"))
    observed_generation: int | None = f(minimum=0, fmt="int64")
    last_transition_time: str = f(required=True, fmt="date-time")
    reason: str = f(required=True, min_length=1, max_length=1024, pattern=CONDITION_REASON)
    message: str = f(required=True, max_length=32768)


def conditions_field(max_items: int = 16) -> Any:
    return f(max_items=max_items, list_type="map", map_keys=("type",))


class LabelSelectorRequirement(Model):
    key: str = f(required=True)
    operator: str = f(required=True)
    values: list[str] | None = f(list_type="atomic")


class LabelSelector(Model):
    match_expressions: list[LabelSelectorRequirement] | None = f(list_type="atomic")
    match_labels: dict[str, str] | None = f()


class Taint(Model):
    key: str = f(required=True)
    value: str | None = f()
    effect: str = f(required=True)
    time_added: str | None = f(fmt="date-time")


class Toleration(Model):
    key: str | None = f()
    operator: str | None = f()
    value: str | None = f()
    effect: str | None = f()
    toleration_seconds: int | None = f(fmt="int64")


TOLERATION_RULES = (
    Rule("self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
         "operator must be Exists when 'key' is empty, which means 'match all values and all keys'"),
    Rule("self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
         "effect must be 'NoExecute' when 'tolerationSeconds' is set"),
    Rule("self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
         "supported toleration values: 'Equal'(default), 'Exists'"),
    Rule("self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
         "a value must be empty when 'operator' is 'Exists'"),
    Rule("self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
         "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"),
)


def tolerations_field() -> Any:
    return f(max_items=8, list_type="atomic", rules=TOLERATION_RULES)




NAME_ITEMS = Items(max_length=253, pattern=DNS1123_SUBDOMAIN)
