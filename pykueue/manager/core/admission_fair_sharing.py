"""Admission Fair Sharing: order a ClusterQueue's pending workloads by their LocalQueue's usage.

Enabled for a ClusterQueue when the Configuration has ``admissionFairSharing`` and the
queue's ``spec.admissionScope.admissionMode`` is ``UsageBasedAdmissionFairSharing``. Then
a workload from a LocalQueue that consumed less recently goes first, before priority.

Consumption is an exponentially decayed average of what each LocalQueue's admitted
workloads use, sampled every ``usageSamplingInterval`` on the core's clock (no clock of
its own, so ``advance`` in a scenario moves it):
``consumed = (1 - a) * consumed + a * current`` with ``a = 1 - 0.5 ** (elapsed / usageHalfLifeTime)``
(a half-life of 0 resets consumption to 0). Between samples, each admission adds an
*entry penalty*, ``a(samplingInterval) * request``, so a LocalQueue cannot take several
turns in a row just because no sample was taken yet; a sample folds it into consumption.
A LocalQueue's usage value is ``sum(resourceWeights[r] (default 1) * (consumed_r +
penalty_r)) / weight`` with its ``spec.fairSharing.weight`` (weight <= 0: infinite).

Amounts are in the resource's usual unit (cpu in cores, memory in bytes), as Kueue's
``resourceWeights`` expect.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.api.quantity import resource_quantity

from .objects import FR, format_time

USAGE_BASED = "UsageBasedAdmissionFairSharing"
DEFAULT_SAMPLING_INTERVAL = 300.0


@dataclass(frozen=True)
class AfsConfig:
    half_life: float = 0.0
    sampling_interval: float = DEFAULT_SAMPLING_INTERVAL
    resource_weights: Mapping[str, float] = field(default_factory=dict)


def alpha(elapsed: float, half_life: float) -> float:
    """How much of the newest sample enters the decayed average after ``elapsed`` seconds."""
    if half_life <= 0:
        return 0.0
    return 1.0 - math.pow(0.5, elapsed / half_life)


def as_units(resource: str, amount: int) -> float:
    """Our int64 amount (cpu in milli-cores) as the resource's usual unit."""
    return amount / 1000 if resource == "cpu" else float(amount)


def per_resource(usage: Mapping[FR, int]) -> dict[str, float]:
    """Usage per (flavor, resource) summed per resource, in usual units."""
    out: dict[str, float] = {}
    for (_, res), v in usage.items():
        out[res] = out.get(res, 0.0) + as_units(res, v)
    return out


@dataclass
class LocalQueueUsage:
    consumed: dict[str, float] = field(default_factory=dict)
    penalty: dict[str, float] = field(default_factory=dict)
    last_update: float = 0.0


class UsageLedger:
    """Decayed consumption per LocalQueue key (``namespace/name``)."""

    def __init__(self, config: AfsConfig, now: float) -> None:
        self.config = config
        self.started = now
        self.entries: dict[str, LocalQueueUsage] = {}

    def _entry(self, lq: str) -> LocalQueueUsage:
        e = self.entries.get(lq)
        if e is None:
            e = self.entries[lq] = LocalQueueUsage(last_update=self.started)
        return e

    def usage(self, lq: str, weight: float = 1.0) -> float:
        """The value pending workloads of ``lq`` are ordered by (lower first)."""
        e = self.entries.get(lq)
        if weight <= 0:
            return math.inf
        if e is None:
            return 0.0
        total = 0.0
        for res in sorted(set(e.consumed) | set(e.penalty)):
            w = self.config.resource_weights.get(res, 1.0)
            total += w * (e.consumed.get(res, 0.0) + e.penalty.get(res, 0.0))
        return total / weight

    def penalize(self, lq: str, request: Mapping[str, float]) -> None:
        """An admission from ``lq``: count part of it right away, until the next sample."""
        a = alpha(self.config.sampling_interval, self.config.half_life)
        if a <= 0:
            return
        e = self._entry(lq)
        for res, v in request.items():
            e.penalty[res] = e.penalty.get(res, 0.0) + a * v

    def sample(self, now: float, admitted: Mapping[str, Mapping[str, float]], queues: list[str]) -> None:
        """Fold the current admitted usage of every LocalQueue into its decayed consumption."""
        for lq in set(queues) | set(admitted) | set(self.entries):
            e = self._entry(lq)
            current = admitted.get(lq, {})
            if self.config.half_life <= 0:
                e.consumed = {}
            else:
                a = alpha(max(0.0, now - e.last_update), self.config.half_life)
                consumed: dict[str, float] = {}
                for res in set(e.consumed) | set(current):
                    v = (1 - a) * e.consumed.get(res, 0.0) + a * current.get(res, 0.0)
                    if v > 0:
                        consumed[res] = v
                e.consumed = consumed
            e.penalty = {}
            e.last_update = now

    def status(self, lq: str) -> dict[str, Any]:
        """What a LocalQueue's ``status.fairSharing.admissionFairSharingStatus`` would hold."""
        e = self._entry(lq)
        consumed = {r: _quantity(r, v) for r, v in sorted(e.consumed.items())}
        return {"consumedResources": consumed, "lastUpdate": format_time(e.last_update)}


def _quantity(resource: str, value: float) -> str:
    amount = round(value * 1000) if resource == "cpu" else round(value)
    return str(resource_quantity(resource, amount))


def config_from_dict(obj: Any, parse_duration: Any) -> AfsConfig | None:
    """The Configuration's ``admissionFairSharing`` block (None when absent)."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise ValueError("admissionFairSharing is not a mapping")
    weights: dict[str, float] = {}
    for res, w in (obj.get("resourceWeights") or {}).items():
        try:
            weights[str(res)] = float(w)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"invalid resourceWeights[{res}]: {w!r}") from exc
    sampling = obj.get("usageSamplingInterval")
    config = AfsConfig(
        half_life=parse_duration(obj.get("usageHalfLifeTime") or 0),
        sampling_interval=parse_duration(sampling) if sampling else DEFAULT_SAMPLING_INTERVAL,
        resource_weights=weights,
    )
    if config.sampling_interval <= 0:
        raise ValueError("usageSamplingInterval must be positive")
    return config
