"""Raw Kubernetes objects as they travel: decoded JSON, before (or instead of) a typed model.

Most of pykueue reads objects it does not own (Jobs, Pods, Nodes) and writes them back
with only a few fields changed, so it keeps them as plain dicts. This module names that
shape once, and holds the one lenient accessor for their metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JSON = dict[str, Any]
"""A decoded JSON object: a Kubernetes object, a patch, a review request."""


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object's ``metadata``, or an empty mapping when it is missing or not an object."""
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}
