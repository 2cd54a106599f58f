"""The topology annotations of a pod template (Kueue's ValidateTASPodSetRequest): which may
be combined, their formats, and slice sizes against the pod set's count.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import forbidden, invalid, invalid_omitted, required
from pykueue.api.fields import FieldError
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.job_fields import str_map
from pykueue.manager.jobs.names import annotation_path, label_key_problems


def tas_podset_errors(
    template_meta: Mapping[str, Any], base: str, ctx: AdmissionContext, podset_count: int | None = None
) -> list[FieldError]:
    """Topology annotation rules on one pod template's metadata at path ``base``."""
    if not ctx.gate("TopologyAwareScheduling"):
        return []
    ann = str_map(template_meta.get("annotations"))
    errors: list[FieldError] = []
    req, pref = ann.get(keys.PODSET_REQUIRED_TOPOLOGY), ann.get(keys.PODSET_PREFERRED_TOPOLOGY)
    unconstrained = ann.get(keys.PODSET_UNCONSTRAINED_TOPOLOGY)
    present = [
        k
        for k in (
            keys.PODSET_REQUIRED_TOPOLOGY,
            keys.PODSET_PREFERRED_TOPOLOGY,
            keys.PODSET_UNCONSTRAINED_TOPOLOGY,
        )
        if k in ann
    ]
    if len(present) > 1:
        exclusive = (keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_PREFERRED_TOPOLOGY,
                     keys.PODSET_UNCONSTRAINED_TOPOLOGY)
        named = ", ".join(json.dumps(k) for k in exclusive)
        errors.append(invalid_omitted(f"{base}.annotations",
                                      f"must not contain more than one topology annotation: [{named}]"))
    for key in (
        keys.PODSET_REQUIRED_TOPOLOGY,
        keys.PODSET_PREFERRED_TOPOLOGY,
        keys.PODSET_SLICE_REQUIRED_TOPOLOGY,
    ):
        value = ann.get(key)
        if value is not None:
            problems = label_key_problems(value)
            if problems:
                errors.append(invalid(annotation_path(key, base), value, "; ".join(problems)))
    if unconstrained is not None and unconstrained.lower() not in ("true", "false", "1", "0", "t", "f"):
        errors.append(
            invalid(
                annotation_path(keys.PODSET_UNCONSTRAINED_TOPOLOGY, base), unconstrained, "must be a boolean"
            )
        )
    slice_topology = ann.get(keys.PODSET_SLICE_REQUIRED_TOPOLOGY)
    slice_size = ann.get(keys.PODSET_SLICE_SIZE)
    size_path = annotation_path(keys.PODSET_SLICE_SIZE, base)
    size_value: int | None = None
    if slice_size is not None:
        try:
            size_value = int(slice_size)
        except ValueError:
            errors.append(invalid(size_path, slice_size, "must be an integer"))
        else:
            if size_value < 1:
                errors.append(invalid(size_path, slice_size, "must be greater than or equal to 1"))
        if slice_topology is None:
            errors.append(
                forbidden(
                    size_path, f"cannot be set when {keys.PODSET_SLICE_REQUIRED_TOPOLOGY} is not present"
                )
            )
    if slice_topology is not None and slice_size is None:
        errors.append(
            required(size_path, f"slice size is required if {keys.PODSET_SLICE_REQUIRED_TOPOLOGY} is present")
        )
    group = ann.get(keys.PODSET_GROUP_NAME)
    gpath = annotation_path(keys.PODSET_GROUP_NAME, base)
    if group is not None:
        if group.isdigit():
            errors.append(invalid(gpath, group, "must not be a number"))
        if slice_size is not None or slice_topology is not None:
            errors.append(forbidden(gpath, "may not be set together with a slice topology request"))
        if req is None and pref is None:
            errors.append(forbidden(gpath, "may be set only with a required or preferred topology"))
    constraints = ann.get(keys.PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS)
    if constraints is not None:
        errors += _slice_constraint_errors(constraints, ann, base, ctx)
        size_value = _first_constraint_size(constraints)
    if podset_count is not None and size_value is not None and size_value > podset_count:
        errors.append(
            invalid(size_path, str(size_value), f"must not be greater than pod set count {podset_count}")
        )
    return errors


def _first_constraint_size(raw: str) -> int | None:
    try:
        items = json.loads(raw)
        size = items[0]["size"]
        return size if isinstance(size, int) else None
    except (ValueError, LookupError, TypeError):
        return None


def _slice_constraint_errors(
    raw: str, ann: Mapping[str, str], base: str, ctx: AdmissionContext
) -> list[FieldError]:
    path = annotation_path(keys.PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS, base)
    if not ctx.gate("TASMultiLayerTopology"):
        return [forbidden(path, "requires the TASMultiLayerTopology feature gate")]
    errors: list[FieldError] = []
    if any(
        k in ann
        for k in (keys.PODSET_SLICE_REQUIRED_TOPOLOGY, keys.PODSET_SLICE_SIZE, keys.PODSET_GROUP_NAME)
    ):
        errors.append(forbidden(path, "may not be combined with slice topology, slice size or podset group"))
    try:
        items = json.loads(raw)
    except ValueError:
        return [*errors, invalid(path, raw, "must be a JSON array of {topology, size}")]
    if not isinstance(items, list) or not 1 <= len(items) <= 3:
        return [*errors, invalid(path, raw, "must list 1 to 3 constraints")]
    previous: int | None = None
    topologies: set[str] = set()
    for item in items:
        topology = item.get("topology") if isinstance(item, dict) else None
        size = item.get("size") if isinstance(item, dict) else None
        if not isinstance(topology, str) or label_key_problems(topology):
            errors.append(invalid(path, raw, f"invalid topology {topology!r}"))
        elif topology in topologies:
            errors.append(invalid(path, raw, f"duplicate topology {topology!r}"))
        else:
            topologies.add(topology)
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            errors.append(invalid(path, raw, "sizes must be integers >= 1"))
        elif previous is not None and previous % size:
            errors.append(invalid(path, raw, f"size {size} must divide the previous size {previous}"))
        else:
            previous = size
    return errors


@dataclass(frozen=True)
class GroupedPodSet:
    """One pod set as the grouping rules see it: its template metadata at path ``base``."""

    base: str
    template_meta: Mapping[str, Any]
    count: int


def podset_grouping_errors(podsets: list[GroupedPodSet]) -> list[FieldError]:
    """Kueue's ValidatePodSetGroupingTopology: pod sets naming one group come in pairs, one of
    the pair with a single pod, both asking for the same required or preferred topology."""
    groups: dict[str, list[tuple[GroupedPodSet, dict[str, str]]]] = {}
    for ps in podsets:
        ann = str_map(ps.template_meta.get("annotations"))
        name = ann.get(keys.PODSET_GROUP_NAME)
        if name is not None:
            groups.setdefault(name, []).append((ps, ann))
    errors: list[FieldError] = []
    for name, members in groups.items():
        paths = [annotation_path(keys.PODSET_GROUP_NAME, ps.base) for ps, _ in members]
        if len(members) != 2:
            errors += [invalid(path, name, f"can only define groups of exactly 2 pod sets, got: "
                                           f"{len(members)} pod set(s)") for path in paths]
            continue
        (first, ann1), (second, ann2) = members
        if first.count != 1 and second.count != 1:
            message = ("can only define groups where at least one pod set has only 1 replica, got: "
                       f"{first.count} replica(s) and {second.count} replica(s) in the group")
            errors += [invalid(path, name, message) for path in paths]
        if not _same_topology(ann1, ann2):
            template = (f"must specify '{keys.PODSET_REQUIRED_TOPOLOGY}' or "
                        f"'{keys.PODSET_PREFERRED_TOPOLOGY}' topology consistent with '%s' in group '{name}'")
            one, two = f"{first.base}.annotations", f"{second.base}.annotations"
            errors += [invalid_omitted(one, template % two), invalid_omitted(two, template % one)]
    return errors


def _same_topology(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    wanted = (keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_PREFERRED_TOPOLOGY)
    if not any(k in a for k in wanted) or not any(k in b for k in wanted):
        return False
    return all(a.get(k) == b.get(k) for k in wanted)
