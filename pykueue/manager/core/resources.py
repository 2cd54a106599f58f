"""Per-pod resource requests of a pod template, as Kueue counts them for quota.

Requests of regular containers are summed; an init container's request counts when it
is larger than that sum (init containers run one at a time, before the others);
restartable ("sidecar") init containers run alongside and are added. Limits stand in
for missing requests, as the API server defaults them. Pod overhead is added.
Resource transformations and excluded prefixes of the Configuration are applied
afterwards (:func:`transform_requests`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pykueue.api.quantity import Quantity, parse_quantity, resource_quantity, resource_value

NANO = 10**9


def _container(c: Mapping[str, Any]) -> dict[str, int]:
    res = c.get("resources") or {}
    merged = dict(res.get("limits") or {})
    merged.update(res.get("requests") or {})
    return {str(k): resource_value(str(k), parse_quantity(v)) for k, v in merged.items()}


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, int]:
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
    _add(total, {str(k): resource_value(str(k), parse_quantity(v)) for k, v in overhead.items()})
    # A resource requested at 0 stays: Kueue still assigns it a flavor (and in v0.12 a
    # zero request of a resource the ClusterQueue does not cover keeps the workload out).
    return total


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


def transform_requests(requests: Mapping[str, int], transformations: Mapping[str, Transformation],
                       excluded_prefixes: tuple[str, ...] = ()) -> dict[str, int]:
    """Apply resource transformations and exclusions to per-pod requests (amounts).

    Each output is ``factor x input quantity``, computed exactly and rounded up to the
    output's unit; outputs of several inputs add up.
    """
    out: dict[str, int] = {}
    for name, value in requests.items():
        if any(name.startswith(p) for p in excluded_prefixes):
            continue
        tr = transformations.get(name)
        if tr is None:
            out[name] = out.get(name, 0) + value
            continue
        if not tr.replace:
            out[name] = out.get(name, 0) + value
        in_nano = resource_quantity(name, value).nano
        for out_name, factor in tr.outputs:
            nano = -(-factor.nano * in_nano // NANO)
            out[out_name] = out.get(out_name, 0) + resource_value(out_name, Quantity(nano))
    return out
