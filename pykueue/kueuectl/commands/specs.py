"""The compact specs ``create`` takes on the command line, with kueuectl's rules and errors.

``--nominal-quota "alpha:cpu=9;memory=36Gi,beta:cpu=18"`` (and ``--borrowing-limit``,
``--lending-limit``) become resource groups: one entry per flavor, the three flags merged
per flavor and resource, then flavors covering the same resources grouped. Taints are
``KEY[=VALUE]:EFFECT``, tolerations ``KEY[=VALUE][:EFFECT]`` or ``:EFFECT``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pykueue.api.quantity import Quantity, QuantityError

NOMINAL = "nominalQuota"
BORROWING = "borrowingLimit"
LENDING = "lendingLimit"


class SpecError(Exception):
    """An unusable spec; the message is kueuectl's."""


# Go's \w is ASCII. A quota spec is FLAVOR:ITEM;ITEM...[;] and an item NAME=VALUE, where the
# name is word runs joined by single '.' or '-', optionally after a domain and one '/'.
_WORD = "[0-9A-Za-z_]"
_FLAVOR = re.compile(r"[a-z0-9][a-z0-9\-.]{0,252}")
_ITEM = re.compile(rf"(?:(?:{_WORD}+[.-])*{_WORD}*/{_WORD}+|(?:{_WORD}+[.-])*{_WORD}+)={_WORD}+")


def _valid_quota_spec(spec: str) -> bool:
    flavor, colon, body = spec.partition(":")
    if not colon or not _FLAVOR.fullmatch(flavor):
        return False
    body = body[:-1] if body.endswith(";") else body
    return bool(body) and all(_ITEM.fullmatch(item) for item in body.split(";"))


def _key_value(text: str, sep: str) -> tuple[str, str]:
    key, found, value = text.partition(sep)
    return key.strip(), value.strip() if found else ""


@dataclass
class _Quota:
    name: str
    values: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, **self.values}


@dataclass
class _Group:
    covered: list[str]
    flavors: list[tuple[str, list[_Quota]]]


def _group(spec: str, kind: str) -> _Group:
    flavor, resources = _key_value(spec, ":")
    items = resources.split(";")
    quotas: list[_Quota] = []
    for item in items:
        name, value = _key_value(item, "=")
        try:
            quantity = Quantity.parse(value)
        except QuantityError:
            raise SpecError("invalid resource quota") from None
        quotas.append(_Quota(name, {kind: str(quantity)}))
    return _Group([_key_value(item, "=")[0] for item in items], [(flavor, quotas)])


def _merge_quotas(first: list[_Quota], second: list[_Quota]) -> list[_Quota]:
    """Each resource of the flavor's first spec takes the values only the other spec sets;
    both specs must list the first one's resources."""
    merged: list[_Quota] = []
    for quota in first:
        other = next((q for q in second if q.name == quota.name), None)
        if other is None:
            raise SpecError("invalid flavor")
        values = dict(quota.values)
        nominal = values.get(NOMINAL, "0")
        if (nominal == "0" or Quantity.parse(nominal).is_zero()) and NOMINAL in other.values:
            values[NOMINAL] = other.values[NOMINAL]
        for kind in (BORROWING, LENDING):
            if kind not in values and kind in other.values:
                values[kind] = other.values[kind]
        merged.append(_Quota(quota.name, values))
    return merged


def resource_groups(nominal: list[str], borrowing: list[str], lending: list[str]) -> list[dict[str, Any]]:
    """The ClusterQueue's ``spec.resourceGroups`` for the three quota flags."""
    groups: list[_Group] = []
    for specs, kind in ((nominal, NOMINAL), (borrowing, BORROWING), (lending, LENDING)):
        for spec in specs:
            if not _valid_quota_spec(spec):
                raise SpecError("invalid resources specification")
            groups.append(_group(spec, kind))

    by_flavor: list[_Group] = []
    index: dict[str, int] = {}
    for group in groups:
        flavor, quotas = group.flavors[0]
        if flavor not in index:
            index[flavor] = len(by_flavor)
            by_flavor.append(group)
            continue
        existing = by_flavor[index[flavor]]
        existing.flavors[0] = (flavor, _merge_quotas(existing.flavors[0][1], quotas))

    merged: list[_Group] = []
    ids: dict[str, int] = {}
    for group in by_flavor:
        group_id = ".".join(sorted(group.covered))
        if group_id in ids:
            merged[ids[group_id]].flavors.extend(group.flavors)
            continue
        # kueuectl only rejects a group whose resources are a substring of an earlier one's.
        if any(group_id in known for known in ids):
            raise SpecError("invalid resource group")
        ids[group_id] = len(merged)
        merged.append(group)

    return [{"coveredResources": g.covered,
             "flavors": [{"name": name, "resources": [q.to_json() for q in quotas]}
                         for name, quotas in g.flavors]}
            for g in merged]


# -- taints and tolerations ---------------------------------------------------------------------

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                  "with an alphanumeric character")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
                    "or '.', and must start and end with an alphanumeric character")
_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                  "'.', and must start and end with an alphanumeric character")
_KEY_EXAMPLES = ("MyName", "my.name", "123-abc")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def label_key_errors(value: str) -> list[str]:
    """Kubernetes' qualified-name rules for a label (or taint) key."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        return ["a valid label key " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, *_KEY_EXAMPLES)
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errors.append("prefix part must be no more than 253 bytes")
            if not re.fullmatch(_SUBDOMAIN_FMT, prefix):
                errors.append("prefix part " + _regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 bytes")
    if not re.fullmatch(_LABEL_KEY_FMT, name):
        errors.append("name part " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, *_KEY_EXAMPLES))
    return errors


def label_value_errors(value: str) -> list[str]:
    errors: list[str] = []
    if len(value) > 63:
        errors.append("must be no more than 63 bytes")
    if not re.fullmatch(f"({_LABEL_KEY_FMT})?", value):
        errors.append(_regex_error(_LABEL_VALUE_MSG, f"({_LABEL_KEY_FMT})?", "MyValue", "my_value", "12345"))
    return errors


def _split_item(text: str) -> tuple[str, str, str] | None:
    """KEY[=VALUE][:EFFECT] into its parts; None when it has too many separators."""
    parts = text.split(":")
    if len(parts) > 2:
        return None
    key_value = parts[0].split("=")
    if len(key_value) > 2:
        return None
    return key_value[0], key_value[1] if len(key_value) > 1 else "", parts[1] if len(parts) > 1 else ""


def _check_effect(effect: str) -> None:
    if effect not in EFFECTS:
        raise SpecError(f"invalid taint effect: {effect}, unsupported taint effect")


def _check_key_value(spec: str, key: str, value: str) -> None:
    if key and (errors := label_key_errors(key)):
        raise SpecError(f"invalid {spec}, {'; '.join(errors)}")
    if value and (errors := label_value_errors(value)):
        raise SpecError(f"invalid {spec}, {'; '.join(errors)}")


def taints(specs: list[str]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for text in specs:
        if not text:
            raise SpecError("invalid taint spec")
        parts = _split_item(text)
        if parts is None or not parts[2]:
            raise SpecError(f"invalid taint spec: {text}")
        key, value, effect = parts
        _check_effect(effect)
        if errors := label_key_errors(key):
            raise SpecError(f"invalid taint spec: {text}, {'; '.join(errors)}")
        _check_key_value(f"taint spec: {text}", "", value)
        if (effect, key) in seen:
            raise SpecError("duplicated taints with the same key and effect: "
                            f"{{{key} {value} {effect} <nil>}}")
        seen.add((effect, key))
        taint = {"key": key, "value": value, "effect": effect}
        out.append({k: v for k, v in taint.items() if v or k != "value"})
    return out


def tolerations(specs: list[str]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for text in specs:
        if not text:
            raise SpecError("invalid toleration spec")
        parts = _split_item(text)
        if parts is None:
            raise SpecError(f"invalid toleration spec: {text}")
        key, value, effect = parts
        if not key and value:
            raise SpecError(f"invalid toleration spec: {text}")
        if effect:
            _check_effect(effect)
        _check_key_value(f"toleration spec: {text}", key, value)
        operator = "Equal" if key and value else "Exists"
        toleration = {"key": key, "operator": operator, "value": value, "effect": effect}
        out.append({k: v for k, v in toleration.items() if v})
    return out
