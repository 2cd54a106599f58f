"""The topology annotations of a pod template (Kueue's ValidateTASPodSetRequest): which may
be combined, their formats, and slice sizes against the pod set's count; and the pod set
groups an object's templates form (ValidatePodSetGroupingTopology).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import duplicate, forbidden, invalid, invalid_unshown, required
from pykueue.api.fields import FieldError
from pykueue.api.gojson import GoJSONError, unmarshal_struct_slice
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.job_fields import str_map
from pykueue.manager.jobs.names import annotation_path, label_key_errors

REQUIRED, PREFERRED = keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_PREFERRED_TOPOLOGY
UNCONSTRAINED, GROUP = keys.PODSET_UNCONSTRAINED_TOPOLOGY, keys.PODSET_GROUP_NAME
SLICE_REQUIRED, SLICE_SIZE = keys.PODSET_SLICE_REQUIRED_TOPOLOGY, keys.PODSET_SLICE_SIZE
CONSTRAINTS = keys.PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS
# What Go's strconv.ParseBool accepts.
_GO_BOOLS = frozenset({"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"})
_GO_INT = re.compile(r"[+-]?[0-9]+")


def _go_int32(value: str) -> int | None:
    """Go's strconv.ParseInt(value, 10, 32): None where it fails (syntax or range)."""
    if not _GO_INT.fullmatch(value):
        return None
    number = int(value)
    return number if -(2**31) <= number < 2**31 else None


def _is_go_uint64(value: str) -> bool:
    """Go's strconv.ParseUint(value, 10, 64) succeeds."""
    return bool(re.fullmatch(r"[0-9]+", value)) and int(value) < 2**64


def tas_podset_errors(
    template_meta: Mapping[str, Any], base: str, ctx: AdmissionContext, podset_count: int | None = None
) -> list[FieldError]:
    """Topology annotation rules on one pod template's metadata at path ``base`` (Kueue's
    ValidateTASPodSetRequest), then, given the pod set's count, the slice sizes against it
    (ValidateSliceSizeAnnotationUpperBound)."""
    if not ctx.gate("TopologyAwareScheduling"):
        return []
    ann = str_map(template_meta.get("annotations"))
    errors = podset_request_errors(ann, base, multi_layer=ctx.gate("TASMultiLayerTopology"))
    if podset_count is not None:
        errors += slice_size_upper_bound_errors(ann, base, podset_count)
    return errors


def podset_request_errors(ann: Mapping[str, str], base: str, *, multi_layer: bool) -> list[FieldError]:
    """Kueue's ValidateTASPodSetRequest on a template's annotations, in its order and words;
    ``multi_layer``: the TASMultiLayerTopology gate."""
    errors: list[FieldError] = []
    if sum(k in ann for k in (REQUIRED, PREFERRED, UNCONSTRAINED)) > 1:
        # Kueue names all three keys whichever are present, and omits the value.
        every = ", ".join(json.dumps(k) for k in (REQUIRED, PREFERRED, UNCONSTRAINED))
        errors.append(invalid_unshown(f"{base}.annotations",
                                      f"must not contain more than one topology annotation: [{every}]"))
    for key in (REQUIRED, PREFERRED, SLICE_REQUIRED):
        if key in ann:
            errors += label_key_errors(ann[key], annotation_path(key, base))
    gpath = annotation_path(GROUP, base)
    if GROUP in ann:
        if _is_go_uint64(ann[GROUP]):
            errors.append(invalid(gpath, ann[GROUP], "must not be a number"))
        for key in (SLICE_SIZE, SLICE_REQUIRED):
            if key in ann:
                errors.append(forbidden(gpath, f"may not be set when '{key}' is specified"))
        if REQUIRED not in ann and PREFERRED not in ann:
            errors.append(forbidden(gpath, f"may not be set when neither '{PREFERRED}' nor '{REQUIRED}' "
                                           "is specified"))
    if UNCONSTRAINED in ann and ann[UNCONSTRAINED] not in _GO_BOOLS:
        value = ann[UNCONSTRAINED]
        errors.append(invalid(annotation_path(UNCONSTRAINED, base), value, "must be a boolean value"))
    size_path = annotation_path(SLICE_SIZE, base)
    if SLICE_SIZE in ann:
        size = _go_int32(ann[SLICE_SIZE])
        if size is None:
            errors.append(invalid(size_path, ann[SLICE_SIZE], "must be a numeric value"))
        elif size < 1:
            errors.append(invalid(size_path, ann[SLICE_SIZE], "must be greater than or equal to 1"))
    if SLICE_REQUIRED in ann and SLICE_SIZE not in ann:
        errors.append(required(size_path, f"must be set when '{SLICE_REQUIRED}' is specified"))
    if SLICE_REQUIRED not in ann and SLICE_SIZE in ann:
        errors.append(forbidden(size_path, f"may not be set when '{SLICE_REQUIRED}' is not specified"))
    if CONSTRAINTS in ann:
        errors += _constraints_errors(ann, base, multi_layer)
    return errors


def slice_constraints(raw: str) -> list[dict[str, Any]]:
    """The multi-layer constraints annotation decoded as Kueue decodes it (Go's JSON into
    ``[]PodsetSliceRequiredTopologyConstraint``); raises GoJSONError with Go's message."""
    return unmarshal_struct_slice(raw, "PodsetSliceRequiredTopologyConstraint", "v1beta2",
                                  {"topology": "string", "size": "int32"})


def _constraints_errors(ann: Mapping[str, str], base: str, multi_layer: bool) -> list[FieldError]:
    raw = ann[CONSTRAINTS]
    path = annotation_path(CONSTRAINTS, base)
    if not multi_layer:
        return [forbidden(path, "the TASMultiLayerTopology feature gate must be enabled to use this "
                                "annotation")]
    errors = [forbidden(path, f"may not be set when '{key}' is specified")
              for key in (SLICE_REQUIRED, SLICE_SIZE) if key in ann]
    if GROUP in ann:
        errors.append(forbidden(annotation_path(GROUP, base),
                                f"may not be set when '{CONSTRAINTS}' is specified"))
    try:
        layers = slice_constraints(raw)
    except GoJSONError as exc:
        return [*errors, invalid(path, raw, f"must be a valid JSON array: {exc}")]
    if not 1 <= len(layers) <= 3:
        return [*errors, invalid(path, raw, "topology constraints must contain between 1 and 3 entries")]
    for i, layer in enumerate(layers):
        errors += label_key_errors(layer["topology"], f"{path}[{i}].topology")
        if layer["size"] < 1:
            errors.append(invalid(f"{path}[{i}].size", layer["size"], "must be greater than or equal to 1"))
    first_at: dict[str, int] = {}
    for i, layer in enumerate(layers):
        topology = layer["topology"]
        if topology in first_at:
            errors.append(duplicate(f"{path}[{i}].topology",
                                    f"{topology} (also at index {first_at[topology]})"))
        else:
            first_at[topology] = i
    for i, (parent, child) in enumerate(itertools.pairwise(layers), start=1):
        if child["size"] > 0 and parent["size"] % child["size"]:
            errors.append(invalid(f"{path}[{i}].size", child["size"],
                                  f"must evenly divide the parent layer size {parent['size']}"))
    return errors


def slice_size_upper_bound_errors(ann: Mapping[str, str], base: str, podset_count: int) -> list[FieldError]:
    """Kueue's ValidateSliceSizeAnnotationUpperBound: a slice (or the outermost constraint
    layer) no larger than the pod set. An unparsable size is reported here again, as there."""
    errors: list[FieldError] = []
    if SLICE_SIZE in ann:
        size_path = annotation_path(SLICE_SIZE, base)
        size = _go_int32(ann[SLICE_SIZE])
        if size is None:
            return [invalid(size_path, ann[SLICE_SIZE], "must be a numeric value")]
        if size > podset_count:
            errors.append(invalid(size_path, ann[SLICE_SIZE],
                                  f"must not be greater than pod set count {podset_count}"))
    if CONSTRAINTS in ann:
        try:
            layers = slice_constraints(ann[CONSTRAINTS])
        except GoJSONError:
            layers = []
        if layers and layers[0]["size"] > podset_count:
            errors.append(invalid(annotation_path(CONSTRAINTS, base), layers[0]["size"],
                                  f"must not be greater than pod set count {podset_count}"))
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
