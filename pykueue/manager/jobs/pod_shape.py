"""The shape of a pod spec that a group's pods must share: what the role hash covers and
which template changes are refused as immutable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pykueue.api.field_errors import invalid
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON

SHAPE_FIELDS = (
    "nodeSelector",
    "affinity",
    "tolerations",
    "runtimeClassName",
    "priority",
    "topologySpreadConstraints",
    "overhead",
    "resourceClaims",
    "resources",
)


def _container_shape(containers: Any) -> list[JSON]:
    out = []
    for c in containers if isinstance(containers, list) else ():
        if isinstance(c, dict):
            out.append(
                {"resources": (c.get("resources") or {}).get("requests") or {}, "ports": c.get("ports") or []}
            )
    return out


def pod_spec_shape(spec: Mapping[str, Any]) -> JSON:
    """The scheduling-relevant part of a pod spec: what makes two pods interchangeable."""
    shape: JSON = {
        "initContainers": _container_shape(spec.get("initContainers")),
        "containers": _container_shape(spec.get("containers")),
    }
    for name in SHAPE_FIELDS:
        if spec.get(name) not in (None, {}, []):
            shape[name] = spec.get(name)
    return shape


def role_hash(spec: Mapping[str, Any]) -> str:
    blob = json.dumps(pod_spec_shape(spec), sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:8]


def shape_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any], base: str) -> list[FieldError]:
    """Field errors naming where two pod specs differ in shape (first difference per field)."""
    old, new = pod_spec_shape(old_spec), pod_spec_shape(new_spec)
    errors: list[FieldError] = []
    for kind in ("initContainers", "containers"):
        for i, (a, b) in enumerate(zip(old[kind], new[kind], strict=False)):
            for part, sub in (("resources", "resources.requests"), ("ports", "ports")):
                if a[part] != b[part]:
                    errors.append(invalid(f"{base}.{kind}[{i}].{sub}", b[part], "field is immutable"))
        if len(old[kind]) != len(new[kind]):
            errors.append(invalid(f"{base}.{kind}", len(new[kind]), "the number of containers is immutable"))
    for name in SHAPE_FIELDS:
        if old.get(name) != new.get(name):
            errors.append(invalid(f"{base}.{name}", new.get(name), "field is immutable"))
    return errors
