"""Kueue's Workloads read back, in the shape of ``simulate --json``, and their differences.

Pure. Only what both sides decide is compared: whether each workload exists, its status,
and while it holds quota its ClusterQueue, pod counts, flavors and topology placement
(as the multiset of lowest-level domains with their pod counts: Kueue writes only the
levels it must, ``simulate`` spells out every level); plus the eviction history as a
multiset of reasons. Pending reasons are prose on both sides and are not compared.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pykueue.manager.core.tas.assignment import AssignmentError, decode_v1beta2

HOLDING = ("QuotaReserved", "Admitted")


def _conditions(wl: dict[str, Any]) -> dict[str, str]:
    return {
        str(c.get("type")): str(c.get("status")) for c in (wl.get("status") or {}).get("conditions") or ()
    }


def status_of(wl: dict[str, Any]) -> str:
    conditions = _conditions(wl)
    for kind in ("Finished", "Admitted", "QuotaReserved"):
        if conditions.get(kind) == "True":
            return kind
    return "Pending"


def _owner(wl: dict[str, Any]) -> str:
    meta = wl.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller"):
            return f"{ref.get('apiVersion')}/{ref.get('kind')} {meta.get('namespace')}/{ref.get('name')}"
    return ""


def _leaves(assignment: dict[str, Any] | None) -> list[list[Any]]:
    """[[lowest-level value, pods], ...] sorted; the comparable part of a placement."""
    if not assignment:
        return []
    if "slices" in assignment:
        try:
            domains = [(d.values[-1], d.count) for d in decode_v1beta2(assignment).domains]
        except AssignmentError as exc:
            return [[f"undecodable: {exc}", 0]]
    else:
        domains = [(d["values"][-1], int(d["count"])) for d in assignment.get("domains") or ()]
    merged: Counter[str] = Counter()
    for value, count in domains:
        merged[str(value)] += count
    return [[v, c] for v, c in sorted(merged.items())]


def kueue_view(wl: dict[str, Any]) -> dict[str, Any]:
    """One Kueue Workload as the ``simulate --json`` entry (the compared fields)."""
    status = wl.get("status") or {}
    state = status_of(wl)
    admission = status.get("admission") or {}
    podsets: dict[str, Any] = {}
    if state in HOLDING and admission:
        for psa in admission.get("podSetAssignments") or ():
            podsets[str(psa.get("name"))] = {
                "count": int(psa.get("count") or 0),
                "flavors": dict(sorted((psa.get("flavors") or {}).items())),
                "topology": _leaves(psa.get("topologyAssignment")),
            }
    evictions: list[str] = []
    for entry in (status.get("schedulingStats") or {}).get("evictions") or ():
        evictions += [str(entry.get("reason"))] * int(entry.get("count") or 0)
    return {
        "status": state,
        "clusterQueue": str(admission.get("clusterQueue") or "") if state in HOLDING else "",
        "owner": _owner(wl),
        "podSets": podsets,
        "evictions": sorted(evictions),
    }


def ours_view(entry: dict[str, Any]) -> dict[str, Any]:
    """One ``simulate --json`` workload reduced to the compared fields."""
    state = str(entry.get("status"))
    podsets: dict[str, Any] = {}
    if state in HOLDING:
        for name, ps in (entry.get("podSets") or {}).items():
            podsets[name] = {
                "count": int(ps.get("count") or 0),
                "flavors": dict(sorted((ps.get("flavors") or {}).items())),
                "topology": _leaves(ps.get("topologyAssignment")),
            }
    return {
        "status": state,
        "clusterQueue": str(entry.get("clusterQueue") or "") if state in HOLDING else "",
        "owner": str(entry.get("owner") or ""),
        "podSets": podsets,
        "evictions": sorted(str(e) for e in entry.get("evictions") or ()),
    }


def kueue_views(workloads: list[dict[str, Any]], ours: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Kueue's workloads by key; one made for a job is keyed like ours for the same job
    (workload names of jobs carry a hash that need not match)."""
    ours_by_owner: dict[str, list[str]] = {}
    for key, entry in ours.items():
        if entry.get("owner"):
            ours_by_owner.setdefault(str(entry["owner"]), []).append(key)
    views: dict[str, dict[str, Any]] = {}
    by_owner: dict[str, list[str]] = {}
    for wl in workloads:
        meta = wl.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        views[key] = kueue_view(wl)
        if views[key]["owner"]:
            by_owner.setdefault(views[key]["owner"], []).append(key)
    for owner, keys in by_owner.items():
        theirs = ours_by_owner.get(owner, [])
        if len(keys) == 1 and len(theirs) == 1 and keys[0] != theirs[0] and theirs[0] not in views:
            views[theirs[0]] = views.pop(keys[0])
    return views


def differences(kueue: dict[str, dict[str, Any]], ours: dict[str, Any]) -> list[str]:
    """One line per difference, ``key: what: kueue=... pykueue=...``; empty when they agree."""
    out: list[str] = []
    for key in sorted(set(kueue) | set(ours)):
        if key not in ours:
            out.append(f"{key}: only Kueue has it ({kueue[key]['status']})")
            continue
        if key not in kueue:
            out.append(f"{key}: only pykueue has it ({ours[key].get('status')})")
            continue
        k, o = kueue[key], ours_view(ours[key])
        if k["status"] != o["status"]:
            out.append(f"{key}: status: kueue={k['status']} pykueue={o['status']}")
        elif k["status"] in HOLDING:
            if k["clusterQueue"] != o["clusterQueue"]:
                out.append(f"{key}: clusterQueue: kueue={k['clusterQueue']} pykueue={o['clusterQueue']}")
            for name in sorted(set(k["podSets"]) | set(o["podSets"])):
                kp, op = k["podSets"].get(name), o["podSets"].get(name)
                for field in ("count", "flavors", "topology"):
                    kv, ov = (kp or {}).get(field), (op or {}).get(field)
                    if kv != ov:
                        out.append(f"{key}: podSet {name} {field}: kueue={_short(kv)} pykueue={_short(ov)}")
        if k["evictions"] != o["evictions"]:
            out.append(f"{key}: evictions: kueue={k['evictions']} pykueue={o['evictions']}")
    return out


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{v}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(f"{v[0]}={v[1]}" if isinstance(v, list) else str(v) for v in value) + "]"
    return str(value)
