"""Names of ProvisioningRequests and their PodTemplates, as Kueue v0.19.2 makes them.

A request is ``<workload>-<check>-<attempt>``, its pod template per (merged) pod set
``ppt-<request>-<podset>``; a name longer than an object name may be keeps its first 247
characters and gains ``-`` and five hex digits of its SHA-1, so it stays unique. The attempt
number in a request's name is how retries are counted across controller restarts.
"""

from __future__ import annotations

import hashlib
import re

_HASH_LENGTH = 5
_MAX_PREFIX = 252 - _HASH_LENGTH  # 253, the longest object name, minus "-" and the hash
POD_TEMPLATE_PREFIX = "ppt"


def limit_object_name(full: str) -> str:
    if len(full) <= _MAX_PREFIX:
        return full
    digest = hashlib.sha1(full.encode(), usedforsecurity=False).hexdigest()
    return f"{full[:_MAX_PREFIX]}-{digest[:_HASH_LENGTH]}"


def request_name(workload: str, check: str, attempt: int) -> str:
    return limit_object_name(f"{workload}-{check}-{attempt}")


def pod_template_name(request: str, podset: str) -> str:
    return limit_object_name(f"{POD_TEMPLATE_PREFIX}-{request}-{podset}")


def attempt_of(request: str, workload: str, check: str) -> int | None:
    """The attempt number of a request made for this workload and check; None when the
    request is not one of theirs."""
    prefix = limit_object_name(f"{workload}-{check}-")
    match = re.fullmatch(re.escape(prefix) + r"([0-9]+)", request)
    return int(match.group(1)) if match else None
