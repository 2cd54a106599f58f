"""JSON merge patches (RFC 7386) computed from two versions of an object part.

Status writes send only what changed (with the base's resourceVersion as precondition)
instead of the whole object: a Workload's spec carries its pod templates, often most of
its bytes, and a status change need not resend them.
"""

from __future__ import annotations

from typing import Any


def merge_patch(old: Any, new: Any) -> Any:
    """The merge patch that turns ``old`` into ``new``: removed keys map to None, changed
    mappings recurse, anything else (lists included, as merge patches replace them) is
    sent whole. Equal values give ``{}``."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    out: dict[str, Any] = {k: None for k in old if k not in new}
    for k, v in new.items():
        if k not in old:
            out[k] = v
        elif old[k] != v:
            out[k] = merge_patch(old[k], v)
    return out


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """``patch`` applied to ``target`` as kube-apiserver does (for tests and checks)."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = apply_merge_patch(out.get(k), v)
    return out
