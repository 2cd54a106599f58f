"""A PodSet's topology assignment and its wire forms.

In memory an assignment is ``levels`` plus an ordered list of ``(values, count)``
domains: values hold one entry per level (for hostname topologies only the hostname).
On the wire it is v1beta2's sliced, columnar ``topologyAssignment`` (common
prefix/suffix extraction, ``universal`` values and counts, hostname-prefix slicing),
v1beta1's flat ``{levels, domains}`` form, or the simple view used by ``simulate``.
Writing never reorders domains; reading accepts any valid layout.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

# Limits from the v1beta2 CRD.
MAX_SLICES = 1000
MAX_DOMAINS_PER_SLICE = 100_000


def _copy_json(value: Any) -> Any:
    """A deep copy of JSON data (dicts, lists, scalars), much faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


class AssignmentError(ValueError):
    """A topologyAssignment that violates the v1beta2 schema."""


@dataclass(frozen=True)
class DomainAssignment:
    values: tuple[str, ...]
    count: int


@dataclass(frozen=True)
class TopologyAssignment:
    levels: tuple[str, ...]
    domains: tuple[DomainAssignment, ...]

    @property
    def total(self) -> int:
        return sum(d.count for d in self.domains)

    def __iter__(self) -> Iterator[DomainAssignment]:
        return iter(self.domains)

    def leaf_values(self) -> list[tuple[str, int]]:
        """(lowest-level value, count) pairs, e.g. (hostname, pods) for hostname topologies."""
        return [(d.values[-1], d.count) for d in self.domains]

    # -- v1beta2 ---------------------------------------------------------------------------
    def to_v1beta2(self) -> dict[str, Any]:
        """A copy of its own for each caller (conversion rewrites it in place), encoded once:
        one placement is written by every head that shares it, and the encoding compares
        two layouts by their JSON length."""
        copied: dict[str, Any] = _copy_json(self._v1beta2)
        return copied

    @cached_property
    def _v1beta2(self) -> dict[str, Any]:
        return encode_v1beta2(self)

    @classmethod
    def from_v1beta2(cls, raw: Mapping[str, Any]) -> TopologyAssignment:
        return decode_v1beta2(raw)

    # -- flat forms ------------------------------------------------------------------------
    def to_simple(self) -> dict[str, Any]:
        """``{"levels": [...], "domains": [{"values": [...], "count": N}]}`` (v1beta1 layout)."""
        return {
            "levels": list(self.levels),
            "domains": [{"values": list(d.values), "count": d.count} for d in self.domains],
        }

    @classmethod
    def from_simple(cls, raw: Mapping[str, Any]) -> TopologyAssignment:
        return cls(
            levels=tuple(raw.get("levels") or ()),
            domains=tuple(
                DomainAssignment(tuple(str(v) for v in d.get("values") or ()), int(d["count"]))
                for d in raw.get("domains") or ()
            ),
        )

    @classmethod
    def from_any(cls, raw: Mapping[str, Any]) -> TopologyAssignment:
        """Read either wire layout (``slices`` for v1beta2, ``domains`` for v1beta1)."""
        return cls.from_v1beta2(raw) if "slices" in raw else cls.from_simple(raw)


# -- decoding ------------------------------------------------------------------------------


def _decode_values(entry: Mapping[str, Any], n: int) -> list[str]:
    if "universal" in entry and entry["universal"] is not None:
        if entry.get("individual") is not None:
            raise AssignmentError("exactly one of the fields in [universal individual] must be set")
        return [str(entry["universal"])] * n
    individual = entry.get("individual")
    if individual is None:
        raise AssignmentError("exactly one of the fields in [universal individual] must be set")
    roots = individual.get("roots") or []
    if len(roots) != n:
        raise AssignmentError("valuesPerLevel.individual roots must have length equal to domainCount")
    prefix = individual.get("prefix") or ""
    suffix = individual.get("suffix") or ""
    return [f"{prefix}{root}{suffix}" for root in roots]


def _decode_counts(entry: Mapping[str, Any], n: int) -> list[int]:
    if entry.get("universal") is not None:
        if entry.get("individual") is not None:
            raise AssignmentError("exactly one of the fields in [universal individual] must be set")
        return [int(entry["universal"])] * n
    individual = entry.get("individual")
    if individual is None:
        raise AssignmentError("exactly one of the fields in [universal individual] must be set")
    if len(individual) != n:
        raise AssignmentError("podCounts.individual must have length equal to domainCount")
    return [int(c) for c in individual]


def decode_v1beta2(raw: Mapping[str, Any]) -> TopologyAssignment:
    levels = tuple(str(level) for level in raw.get("levels") or ())
    domains: list[DomainAssignment] = []
    for piece in raw.get("slices") or []:
        n = int(piece.get("domainCount", 0))
        if n < 1:
            raise AssignmentError("domainCount must be at least 1")
        per_level = piece.get("valuesPerLevel") or []
        if len(per_level) != len(levels):
            raise AssignmentError("valuesPerLevel must have the same length as the number of levels")
        columns = [_decode_values(entry, n) for entry in per_level]
        counts = _decode_counts(piece.get("podCounts") or {}, n)
        for i in range(n):
            domains.append(DomainAssignment(tuple(col[i] for col in columns), counts[i]))
    return TopologyAssignment(levels, tuple(domains))


# -- encoding ------------------------------------------------------------------------------


def _common_prefix(values: Sequence[str]) -> str:
    first, last = min(values), max(values)
    i = 0
    while i < len(first) and i < len(last) and first[i] == last[i]:
        i += 1
    return first[:i]


def _common_suffix(values: Sequence[str]) -> str:
    return _common_prefix([v[::-1] for v in values])[::-1]


def _encode_column(values: Sequence[str]) -> dict[str, Any]:
    if all(v == values[0] for v in values):
        return {"universal": values[0]}
    prefix = _common_prefix(values)
    # Taking the suffix from what the prefix left keeps the two from overlapping.
    suffix = _common_suffix([v[len(prefix) :] for v in values])
    roots = [v[len(prefix) : len(v) - len(suffix)] for v in values]
    individual: dict[str, Any] = {}
    if prefix:
        individual["prefix"] = prefix
    if suffix:
        individual["suffix"] = suffix
    individual["roots"] = roots
    return {"individual": individual}


def _encode_slice(domains: Sequence[DomainAssignment], n_levels: int) -> dict[str, Any]:
    counts = [d.count for d in domains]
    pod_counts: dict[str, Any] = (
        {"universal": counts[0]} if all(c == counts[0] for c in counts) else {"individual": counts}
    )
    return {
        "domainCount": len(domains),
        "valuesPerLevel": [_encode_column([d.values[i] for d in domains]) for i in range(n_levels)],
        "podCounts": pod_counts,
    }


def _dash_prefixes(host: str) -> list[str]:
    """Every ``-``-terminated prefix of a hostname, longest first."""
    return [host[: i + 1] for i in range(len(host) - 1, -1, -1) if host[i] == "-"]


def _group_by_hostname_prefix(
    domains: Sequence[DomainAssignment], max_depth: int
) -> list[list[DomainAssignment]]:
    hosts = [d.values[-1] for d in domains]
    seen: Counter[str] = Counter()
    for host in hosts:
        seen.update(set(_dash_prefixes(host)))
    groups: list[list[DomainAssignment]] = []
    last_key: str | None = None
    for dom, host in zip(domains, hosts, strict=True):
        candidates = [p for p in _dash_prefixes(host) if seen[p] >= 2]
        # max_depth limits how many dashes a key may hold, so backing off merges groups.
        candidates = [p for p in candidates if p.count("-") <= max_depth]
        key = candidates[0] if candidates else ""
        if groups and key == last_key and len(groups[-1]) < MAX_DOMAINS_PER_SLICE:
            groups[-1].append(dom)
        else:
            groups.append([dom])
        last_key = key
    return groups


def _chunks(domains: Sequence[DomainAssignment]) -> list[Sequence[DomainAssignment]]:
    return [domains[i : i + MAX_DOMAINS_PER_SLICE] for i in range(0, len(domains), MAX_DOMAINS_PER_SLICE)]


def encode_v1beta2(assignment: TopologyAssignment) -> dict[str, Any]:
    """The compact v1beta2 form; the smaller of single-slice and hostname-prefix slicing."""
    levels = list(assignment.levels)
    domains = list(assignment.domains)
    if not domains:
        return {"levels": levels, "slices": []}
    n_levels = len(levels)
    single = [_encode_slice(chunk, n_levels) for chunk in _chunks(domains)]
    best = {"levels": levels, "slices": single}
    if n_levels == 1 and levels[0] == "kubernetes.io/hostname":
        depth = max(d.values[-1].count("-") for d in domains)
        groups = _group_by_hostname_prefix(domains, depth)
        while len(groups) > MAX_SLICES and depth > 0:
            depth -= 1
            groups = _group_by_hostname_prefix(domains, depth)
        if 1 < len(groups) <= MAX_SLICES:
            sliced = {"levels": levels, "slices": [_encode_slice(g, n_levels) for g in groups]}
            if len(json.dumps(sliced, separators=(",", ":"))) < len(json.dumps(best, separators=(",", ":"))):
                best = sliced
    return best
