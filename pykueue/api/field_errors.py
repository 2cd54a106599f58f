"""Validation errors worded as Kubernetes' ``field.Error`` prints them.

Denials name the field and say what is wrong in the apiserver's words ("Invalid value",
"Required value", ...), so a user reads the same message from pykueue as from a built-in
validation. Each constructor returns an ``api.fields.FieldError``; ``aggregate`` joins
several the way Kubernetes aggregates errors.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pykueue.api.fields import FieldError


def _show(value: Any) -> str:
    if isinstance(value, str | bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"), default=str)


def _error(path: str, body: str, detail: str = "") -> FieldError:
    return FieldError(path, f"{body}: {detail}" if detail else body)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return _error(path, f"Invalid value: {_show(value)}", detail)


def invalid_unshown(path: str, detail: str) -> FieldError:
    """An invalid value left out of the message (Kubernetes' ``field.OmitValueType``)."""
    return _error(path, "Invalid value", detail)


def required(path: str, detail: str = "") -> FieldError:
    return _error(path, "Required value", detail)


def forbidden(path: str, detail: str) -> FieldError:
    return _error(path, "Forbidden", detail)


def duplicate(path: str, value: Any) -> FieldError:
    return _error(path, f"Duplicate value: {_show(value)}")


def not_found(path: str, value: Any) -> FieldError:
    return _error(path, f"Not found: {_show(value)}")


def not_supported(path: str, value: Any, detail: str = "") -> FieldError:
    return _error(path, f"Unsupported value: {_show(value)}", detail)


def too_long(path: str, detail: str) -> FieldError:
    return _error(path, "Too long", detail)


def too_many(path: str, detail: str) -> FieldError:
    # Worded as pykueue always has ("TooMany"), which webhook tests compare.
    return _error(path, "TooMany", detail)


def too_many_items(path: str, actual: int, limit: int) -> FieldError:
    """Kubernetes' ``field.TooMany`` of a list: how many there are and the most allowed."""
    return _error(path, f"Too many: {actual}", f"must have at most {limit} items")


def aggregate(errors: Iterable[FieldError]) -> str:
    """Kubernetes' aggregate (ErrorList.ToAggregate): an error printed the same as an
    earlier one is dropped; one error as is, several inside ``[...]`` joined by ``, ``."""
    texts = list(dict.fromkeys(str(e) for e in errors))
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
