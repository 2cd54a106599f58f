"""Bind claims: how several extender replicas agree on the last slot of a domain.

Between "the domain has room" and the Binding landing, another replica could make the
same decision for another pod. Each bind therefore first records a claim
``{pod UID: {"node", "expires"}}`` in a Workload annotation, written with the Workload's
resourceVersion: of two replicas that read the same version only one write succeeds, and
the loser re-reads and sees the winner's claim counted as an occupied slot.

A claim stops counting once its pod is bound (the pod itself is then counted), gone,
terminated, or when it expires (a replica died between claim and Binding). Expired and
settled claims are dropped on the next write, so the annotation stays as small as the
number of binds in flight. Pure: the clock is passed in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.api import keys
from pykueue.extender.domains import bound_node, is_terminated, pod_uid


@dataclass(frozen=True)
class Claim:
    node: str
    expires: float  # unix seconds


def read_claims(workload: Mapping[str, Any]) -> dict[str, Claim]:
    raw = ((workload.get("metadata") or {}).get("annotations") or {}).get(keys.TAS_BIND_CLAIMS)
    if not raw:
        return {}
    try:
        decoded = json.loads(raw)
    except ValueError:
        return {}  # someone else's garbage must not wedge binding; it is replaced on write
    claims: dict[str, Claim] = {}
    if isinstance(decoded, dict):
        for uid, entry in decoded.items():
            if isinstance(entry, dict) and isinstance(entry.get("node"), str):
                expires = entry.get("expires")
                if isinstance(expires, int | float):
                    claims[str(uid)] = Claim(entry["node"], float(expires))
    return claims


def pending_claims(
    claims: Mapping[str, Claim], pods: Iterable[Mapping[str, Any]], now: float, *, exclude_uid: str = ""
) -> dict[str, Claim]:
    """Claims that still hold a slot: unexpired, for an existing, unbound, live pod."""
    unbound = {pod_uid(p) for p in pods if not bound_node(p) and not is_terminated(p)}
    return {
        uid: claim
        for uid, claim in claims.items()
        if uid != exclude_uid and uid in unbound and claim.expires > now
    }


def encode_claims(claims: Mapping[str, Claim]) -> str:
    return json.dumps(
        {uid: {"node": c.node, "expires": round(c.expires, 3)} for uid, c in sorted(claims.items())},
        separators=(",", ":"),
    )
