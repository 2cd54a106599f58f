"""Resource vectors for TAS: per-pod requests and node capacity as exact integer amounts.

Kueue compares capacity in int64 "amounts" (cpu in milli-cores, everything else in base
units). Placement runs thousands of times per cycle, so vectors are plain ``dict[str, int]``
and the hot helpers avoid building new objects where they can.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pykueue.api.quantity import Quantity, resource_value

Resources = dict[str, int]

PODS = "pods"


def parse_resource_list(raw: Mapping[str, Any] | None) -> Resources:
    """A Kubernetes ResourceList (``{"cpu": "500m"}``) as amounts."""
    if not raw:
        return {}
    return {name: resource_value(name, Quantity.parse(value)) for name, value in raw.items()}


def _container_requests(container: Mapping[str, Any]) -> Resources:
    # Kubernetes defaults requests to limits when only limits are given.
    res = container.get("resources") or {}
    merged = parse_resource_list(res.get("limits"))
    merged.update(parse_resource_list(res.get("requests")))
    return merged


def add_into(target: Resources, other: Mapping[str, int], factor: int = 1) -> None:
    for name, amount in other.items():
        target[name] = target.get(name, 0) + amount * factor


def max_into(target: Resources, other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        if amount > target.get(name, 0):
            target[name] = amount


def pod_spec_requests(spec: Mapping[str, Any]) -> Resources:
    """Effective requests of a pod spec, as the scheduler computes them.

    max(sum of regular containers, each init container) + overhead. Restartable (sidecar)
    init containers run alongside later ones, so they add to everything after them.
    """
    regular: Resources = {}
    for container in spec.get("containers") or []:
        add_into(regular, _container_requests(container))
    init_peak: Resources = {}
    sidecars: Resources = {}
    for container in spec.get("initContainers") or []:
        req = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            add_into(sidecars, req)
            max_into(init_peak, sidecars)
        else:
            step = dict(sidecars)
            add_into(step, req)
            max_into(init_peak, step)
    add_into(regular, sidecars)
    total = dict(regular)
    max_into(total, init_peak)
    add_into(total, parse_resource_list(spec.get("overhead")))
    return {name: amount for name, amount in total.items() if amount}


def fits(request: Iterable[tuple[str, int]], capacity: Mapping[str, int]) -> int:
    """How many copies of ``request`` fit in ``capacity`` (Kueue's CountIn).

    ``request`` holds only the non-zero entries; a resource missing from capacity has none.
    """
    return fits_or_short(request, capacity)[0]


def fits_or_short(request: Iterable[tuple[str, int]], capacity: Mapping[str, int]) -> tuple[int, str]:
    """:func:`fits`, and when no copy fits, the first resource in the request's order (name
    order, as :func:`nonzero` gives it) that admits none: what placement reports as short."""
    best = -1
    for name, amount in request:
        n = capacity.get(name, 0) // amount
        if n <= 0:
            return 0, name
        if best < 0 or n < best:
            best = n
    return (best, "") if best > 0 else (0, "")


def nonzero(request: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """The request entries that constrain a fit, in a stable order."""
    return tuple(sorted((n, a) for n, a in request.items() if a > 0))
