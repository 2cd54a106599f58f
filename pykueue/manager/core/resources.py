"""Per-pod resource requests of a pod template, as Kueue counts them for quota.

Requests of regular containers are summed; an init container's request counts when it
is larger than that sum (init containers run one at a time, before the others);
restartable ("sidecar") init containers run alongside and are added. Limits stand in
for missing requests, as the API server defaults them. Pod overhead is added. The sums are
exact (nano-units) and turned into Kueue's int64 amounts only at the end, as Kueue does.
Excluded prefixes and resource transformations of the Configuration are applied to the
exact sums before that (:func:`transform_requests`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pykueue.api.quantity import CPU, Quantity, parse_quantity

NANO = 10**9
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


def _container(c: Mapping[str, Any]) -> dict[str, int]:
    res = c.get("resources") or {}
    merged = dict(res.get("limits") or {})
    merged.update(res.get("requests") or {})
    return {str(k): parse_quantity(v).nano for k, v in merged.items()}


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def pod_requests_exact(pod_spec: Mapping[str, Any]) -> dict[str, int]:
    """Kueue's PodRequests: per resource, the pod's request in nano-units, exactly."""
    total: dict[str, int] = {}
    for c in pod_spec.get("containers") or ():
        _add(total, _container(c))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for c in pod_spec.get("initContainers") or ():
        req = _container(c)
        if c.get("restartPolicy") == "Always":
            _add(sidecars, req)
            continue
        # An init container runs together with the sidecars started before it.
        for k, v in req.items():
            init_peak[k] = max(init_peak.get(k, 0), v + sidecars.get(k, 0))
    _add(total, sidecars)
    for k, v in init_peak.items():
        total[k] = max(total.get(k, 0), v)
    overhead = pod_spec.get("overhead") or {}
    _add(total, {str(k): parse_quantity(v).nano for k, v in overhead.items()})
    # A resource requested at 0 stays: Kueue still assigns it a flavor when the
    # ClusterQueue covers it (one it does not cover is skipped at 0, see flavor_assigner).
    return total


def amount(resource: str, units: Fraction) -> int:
    """Kueue's int64 amount of an exact quantity (in units of the resource): cpu in
    milli-cores, anything else in whole units, rounded away from zero and clamped to the
    int64 range (Kueue's SafeMilliValue / SafeValue)."""
    scaled = units * 1000 if resource == CPU else units
    whole = -((-scaled.numerator) // scaled.denominator) if scaled >= 0 else \
        scaled.numerator // scaled.denominator
    return max(INT64_MIN, min(INT64_MAX, whole))


def _nano_amount(resource: str, nano: int) -> int:
    """:func:`amount` of a quantity in nano-units, in integers (the common case)."""
    unit = 10**6 if resource == CPU else NANO
    whole = -(-nano // unit) if nano >= 0 else nano // unit
    return max(INT64_MIN, min(INT64_MAX, whole))


def amounts(exact: Mapping[str, int]) -> dict[str, int]:
    """Exact per-pod requests (nano-units) as Kueue's amounts."""
    return {name: _nano_amount(name, nano) for name, nano in exact.items()}


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, int]:
    """Per resource, the pod's request as Kueue's amount (see :func:`amount`)."""
    return amounts(pod_requests_exact(pod_spec))


def requests_over_limits(podsets: Sequence[Mapping[str, Any]]) -> str:
    """Kueue's ValidateResources: no container may request more of a resource than its limit.

    Returns "" or the error list as Kueue prints it (field path, offending resource names,
    several errors bracketed), for the pending message "resources validation failed: ...".
    """
    errors: list[str] = []
    for i, ps in enumerate(podsets):
        spec = (ps.get("template") or {}).get("spec") or {}
        for kind in ("initContainers", "containers"):
            for j, c in enumerate(spec.get(kind) or ()):
                res = c.get("resources") or {}
                limits = res.get("limits") or {}
                over = sorted(str(k) for k, v in (res.get("requests") or {}).items()
                              if k in limits and parse_quantity(v) > parse_quantity(limits[k]))
                if over:
                    names = ", ".join(f'"{n}"' for n in over)
                    errors.append(f"spec.podSets[{i}].template.spec.{kind}[{j}]: Invalid value: "
                                  f"[]v1.ResourceName{{{names}}}: requests must not exceed its limits")
    return errors[0] if len(errors) == 1 else (f"[{', '.join(errors)}]" if errors else "")


@dataclass(frozen=True)
class Transformation:
    """Configuration ``resources.transformations[]``: one input resource mapped to outputs."""

    input: str
    replace: bool  # strategy Replace drops the input; Retain keeps it
    outputs: tuple[tuple[str, Quantity], ...]
    # ``multiplyBy``: the outputs are computed from the input times the quantity the pod
    # requests of this resource ("" or not requested: from the input alone).
    multiply_by: str = ""


def transform_requests(requests: Mapping[str, int], transformations: Mapping[str, Transformation],
                       excluded_prefixes: tuple[str, ...] = ()) -> dict[str, int]:
    """Exact per-pod requests (nano-units) after exclusions and transformations, as amounts.

    Kueue v0.19.2's arithmetic: resources under an excluded prefix are dropped first. Each
    transformed input generates ``factor x input`` per output (the input first multiplied
    by the request of its ``multiplyBy`` resource, when the pod has one); what is generated
    is summed exactly per output name, across inputs, apart from what is retained (inputs
    without a transformation, and a Retain input as it was requested). A negative total
    generated for a name (a negative factor writes an allowance) counts as 0, so it never
    reduces a retained request; generated and retained are then added and rounded.
    """
    kept = {name: Fraction(nano, NANO) for name, nano in requests.items()
            if not any(name.startswith(p) for p in excluded_prefixes)}
    retained: dict[str, Fraction] = {}
    generated: dict[str, Fraction] = {}
    for name, value in kept.items():
        tr = transformations.get(name)
        if tr is None:
            retained[name] = value
            continue
        base = value * kept[tr.multiply_by] if tr.multiply_by and tr.multiply_by in kept else value
        for out_name, factor in tr.outputs:
            generated[out_name] = generated.get(out_name, Fraction(0)) + base * Fraction(factor.nano, NANO)
        if not tr.replace:
            retained[name] = value
    total = dict(retained)
    for name, value in generated.items():
        total[name] = total.get(name, Fraction(0)) + max(value, Fraction(0))
    return {name: amount(name, value) for name, value in total.items()}
