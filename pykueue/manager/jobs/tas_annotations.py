"""The topology annotations of a pod template (Kueue's ValidateTASPodSetRequest): which may
be combined, their formats, and slice sizes against the pod set's count; and the pod set
groups an object's templates form (ValidatePodSetGroupingTopology).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import forbidden, invalid, invalid_unshown, required
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
        # Kueue names all three keys whichever are present, and omits the value.
        every = (keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_PREFERRED_TOPOLOGY,
                 keys.PODSET_UNCONSTRAINED_TOPOLOGY)
        errors.append(
            invalid_unshown(
                f"{base}.annotations",
                "must not contain more than one topology annotation: ["
                + ", ".join(json.dumps(k) for k in every) + "]",
            )
        )
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


def podset_group_errors(members: Sequence[tuple[str, Mapping[str, str], int]]) -> list[FieldError]:
    """Kueue's ValidatePodSetGroupingTopology over an object's pod sets, in pod set order, each
    given as (path of its template's metadata, the template's annotations, its count).

    A pod set belongs to the group it names only with a required or preferred topology (as in
    the topology request Kueue builds from the annotations). A group must hold exactly two pod
    sets, one of them of count 1, both asking for the same required or preferred topology."""
    groups: dict[str, list[tuple[str, Mapping[str, str], int]]] = {}
    for base, ann, count in members:
        name = ann.get(keys.PODSET_GROUP_NAME)
        if name is not None and _group_topology(ann) != (None, None):
            groups.setdefault(name, []).append((base, ann, count))
    errors: list[FieldError] = []
    for name, group in groups.items():
        if len(group) != 2:
            detail = f"can only define groups of exactly 2 pod sets, got: {len(group)} pod set(s)"
            errors += [invalid(_group_path(base), name, detail) for base, _, _ in group]
            continue
        (base1, ann1, count1), (base2, ann2, count2) = group
        if count1 != 1 and count2 != 1:
            detail = ("can only define groups where at least one pod set has only 1 replica, "
                      f"got: {count1} replica(s) and {count2} replica(s) in the group")
            errors += [invalid(_group_path(base), name, detail) for base in (base1, base2)]
        if _group_topology(ann1) != _group_topology(ann2):
            path1, path2 = f"{base1}.annotations", f"{base2}.annotations"
            errors += [invalid_unshown(mine, f"must specify '{keys.PODSET_REQUIRED_TOPOLOGY}' or "
                                             f"'{keys.PODSET_PREFERRED_TOPOLOGY}' topology consistent with "
                                             f"'{other}' in group '{name}'")
                       for mine, other in ((path1, path2), (path2, path1))]
    return errors


def _group_path(base: str) -> str:
    return annotation_path(keys.PODSET_GROUP_NAME, base)


def _group_topology(ann: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(required, preferred) of the topology request: a required topology hides a preferred one."""
    if keys.PODSET_REQUIRED_TOPOLOGY in ann:
        return ann[keys.PODSET_REQUIRED_TOPOLOGY], None
    return None, ann.get(keys.PODSET_PREFERRED_TOPOLOGY)
