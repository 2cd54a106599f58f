"""The topology annotations of a pod template, checked and worded as Kueue v0.19.2's
``pkg/controller/jobframework/tas_validation.go`` does.

Tests named after ``tas_validation_test.go`` take its inputs and error counts; the exact
words below are the ones tas_validation.go (and the apiserver's label-key check it calls)
produces, compared against it. LeaderWorkerSet's pod set groups use the same shared rule as
every kind (``leaderworkerset_webhook_test.go``).
"""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionPolicy, ClusterFacts
from pykueue.manager.jobs.gates import FeatureGates
from pykueue.manager.jobs.leaderworkerset.webhook import WEBHOOK as LWS
from pykueue.manager.jobs.tas_annotations import podset_request_errors, slice_size_upper_bound_errors

SOURCE = "kueue v0.19.2 tas_validation_test.go"
BASE = "spec.template.metadata"
REQ, PREF = keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_PREFERRED_TOPOLOGY
UNCONSTRAINED, GROUP = keys.PODSET_UNCONSTRAINED_TOPOLOGY, keys.PODSET_GROUP_NAME
SLICE, SIZE = keys.PODSET_SLICE_REQUIRED_TOPOLOGY, keys.PODSET_SLICE_SIZE
LAYERS = keys.PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS


NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
             "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
             "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
BLOCK, RACK, HOST = "cloud.com/block", "cloud.com/rack", "kubernetes.io/hostname"


def _path(key: str) -> str:
    return f"{BASE}.annotations[{key}]"


def _errors(ann: dict[str, str], multi_layer: bool = True) -> list[str]:
    return [str(e) for e in podset_request_errors(ann, BASE, multi_layer=multi_layer)]


# -- Kueue's TestValidateSliceRequiredTopologyConstraintsAnnotation -----------------------------


def _layers(*pairs: tuple[str, Any]) -> str:
    return "[" + ",".join(f'{{"topology":"{t}","size":{s}}}' for t, s in pairs) + "]"


@pytest.mark.parametrize(
    ("multi_layer", "ann", "want"),
    [
        pytest.param(True, {REQ: BLOCK, LAYERS: _layers((RACK, 16))}, 0,
                     id="valid: single constraint layer"),
        pytest.param(True, {REQ: BLOCK, LAYERS: _layers((RACK, 16),
                                                                    (HOST, 4))}, 0,
                     id="valid: two constraint layers"),
        pytest.param(True, {REQ: BLOCK, LAYERS: _layers((RACK, 16), ("cloud.com/sub-rack", 4),
                                                                    (HOST, 2))}, 0,
                     id="valid: three constraint layers"),
        pytest.param(True, {REQ: BLOCK, LAYERS: "invalid-json"}, 1, id="invalid: not valid JSON"),
        pytest.param(True, {REQ: BLOCK, LAYERS: "[]"}, 1, id="invalid: empty array"),
        pytest.param(True, {REQ: BLOCK, LAYERS: _layers(("a", 64), ("b", 16), ("c", 4), ("d", 1))}, 1,
                     id="invalid: more than 3 entries"),
        pytest.param(True, {REQ: BLOCK, LAYERS: _layers((RACK, 0))}, 1,
                     id="invalid: size less than 1"),
        pytest.param(True, {REQ: BLOCK, LAYERS: _layers((RACK, 16),
                                                                    (HOST, 5))}, 1,
                     id="invalid: size does not divide parent"),
        pytest.param(True, {REQ: BLOCK, SLICE: RACK, SIZE: "16",
                            LAYERS: _layers((RACK, 16))}, 2,
                     id="invalid: mutual exclusivity with podset-slice-required-topology"),
        pytest.param(True, {REQ: BLOCK, LAYERS: _layers((RACK, 16)), GROUP: "group1"}, 1,
                     id="invalid: with podset-group-name"),
        pytest.param(False, {REQ: BLOCK, LAYERS: _layers((RACK, 16))}, 1,
                     id="invalid: feature gate disabled"),
        pytest.param(True, {REQ: BLOCK, LAYERS: _layers((RACK, 16), (RACK, 4))},
                     1, id="invalid: duplicate topology labels"),
        pytest.param(True, {REQ: BLOCK, LAYERS: _layers((RACK, 16),
                                                                    (HOST, 4),
                                                                    (RACK, 2))}, 1,
                     id="invalid: duplicate topology label among three entries"),
    ],
)
def test_kueue_slice_required_topology_constraints(multi_layer: bool, ann: dict[str, str], want: int) -> None:
    assert len(_errors(ann, multi_layer)) == want


@pytest.mark.parametrize(
    ("ann", "count", "want"),
    [
        pytest.param({SIZE: "16", SLICE: RACK, REQ: BLOCK}, 20, [],
                     id="valid: PodSetSliceSizeAnnotation within bound"),
        pytest.param({SIZE: "20", SLICE: RACK, REQ: BLOCK}, 16,
                     [f'{_path(SIZE)}: Invalid value: "20": must not be greater than pod set count 16'],
                     id="invalid: PodSetSliceSizeAnnotation exceeds pod count"),
        pytest.param({REQ: BLOCK, LAYERS: _layers((RACK, 16), (HOST, 4))},
                     20, [], id="valid: multi-layer outermost size within bound"),
        pytest.param({REQ: BLOCK, LAYERS: _layers((RACK, 16), (HOST, 4))},
                     10, [f"{_path(LAYERS)}: Invalid value: 16: must not be greater than pod set count 10"],
                     id="invalid: multi-layer outermost size exceeds pod count"),
    ],
)
def test_kueue_slice_size_upper_bound(ann: dict[str, str], count: int, want: list[str]) -> None:
    # TestValidateSliceSizeAnnotationUpperBound (Kueue counts the errors; the words are its code's)
    assert [str(e) for e in slice_size_upper_bound_errors(ann, BASE, count)] == want


def test_both_slice_sizes_are_bounded_and_an_unreadable_size_is_said_again() -> None:
    ann = {SIZE: "20", LAYERS: _layers(("r", 32))}
    assert [str(e) for e in slice_size_upper_bound_errors(ann, BASE, 10)] == [
        f'{_path(SIZE)}: Invalid value: "20": must not be greater than pod set count 10',
        f"{_path(LAYERS)}: Invalid value: 32: must not be greater than pod set count 10"]
    assert [str(e) for e in slice_size_upper_bound_errors({SIZE: "x"}, BASE, 10)] == [
        f'{_path(SIZE)}: Invalid value: "x": must be a numeric value']


# -- the words of each rule -------------------------------------------------------------------


def test_the_unconstrained_annotation_is_a_go_boolean() -> None:
    for value in ("true", "True", "TRUE", "t", "1", "false", "F", "0"):
        assert _errors({UNCONSTRAINED: value}) == []
    for value in ("tRuE", "yes", ""):
        assert _errors({UNCONSTRAINED: value}) == [
            f'{_path(UNCONSTRAINED)}: Invalid value: "{value}": must be a boolean value']


@pytest.mark.parametrize(
    ("size", "want"),
    [
        ("4", None),
        ("+4", None),
        ("x", "must be a numeric value"),
        (" 4", "must be a numeric value"),
        ("1_0", "must be a numeric value"),
        ("2147483648", "must be a numeric value"),
        ("0", "must be greater than or equal to 1"),
        ("-3", "must be greater than or equal to 1"),
    ],
)
def test_the_slice_size_is_a_go_int32(size: str, want: str | None) -> None:
    errors = _errors({SLICE: RACK, SIZE: size})
    assert errors == ([] if want is None else [f'{_path(SIZE)}: Invalid value: "{size}": {want}'])


def test_slice_topology_and_size_come_together() -> None:
    assert _errors({SLICE: RACK}) == [
        f"{_path(SIZE)}: Required value: must be set when '{SLICE}' is specified"]
    assert _errors({SIZE: "4"}) == [
        f"{_path(SIZE)}: Forbidden: may not be set when '{SLICE}' is not specified"]


def test_the_group_name_rules() -> None:
    assert _errors({GROUP: "123", REQ: "r"}) == [
        f'{_path(GROUP)}: Invalid value: "123": must not be a number']
    # Past uint64 Go's ParseUint fails, so it is no number.
    assert _errors({GROUP: "99999999999999999999", REQ: "r"}) == []
    assert _errors({GROUP: "g", REQ: "r", SLICE: "s", SIZE: "2"}) == [
        f"{_path(GROUP)}: Forbidden: may not be set when '{SIZE}' is specified",
        f"{_path(GROUP)}: Forbidden: may not be set when '{SLICE}' is specified"]
    assert _errors({GROUP: "g"}) == [
        f"{_path(GROUP)}: Forbidden: may not be set when neither '{PREF}' nor '{REQ}' is specified"]


def test_topology_keys_are_checked_as_label_names() -> None:
    assert _errors({REQ: "bad key"}) == [f'{_path(REQ)}: Invalid value: "bad key": {NAME_PART}']
    assert _errors({PREF: "/x"}) == [f'{_path(PREF)}: Invalid value: "/x": prefix part must be non-empty']
    assert _errors({REQ: "r", SLICE: "x" * 64, SIZE: "1"}) == [
        f'{_path(SLICE)}: Invalid value: "{"x" * 64}": name part must be no more than 63 bytes']


def test_the_multi_layer_constraints_rules() -> None:
    path = _path(LAYERS)
    assert _errors({REQ: "b", LAYERS: _layers(("r", 4))}, multi_layer=False) == [
        f"{path}: Forbidden: the TASMultiLayerTopology feature gate must be enabled to use this "
        "annotation"]
    assert _errors({REQ: "b", SLICE: "r", SIZE: "4", GROUP: "g", LAYERS: _layers(("r", 4))})[-3:] == [
        f"{path}: Forbidden: may not be set when '{SLICE}' is specified",
        f"{path}: Forbidden: may not be set when '{SIZE}' is specified",
        f"{_path(GROUP)}: Forbidden: may not be set when '{LAYERS}' is specified"]
    assert _errors({REQ: "b", LAYERS: "invalid-json"}) == [
        f"{path}: Invalid value: \"invalid-json\": must be a valid JSON array: invalid character 'i' "
        "looking for beginning of value"]
    assert _errors({REQ: "b", LAYERS: '[{"topology":"r","size":"4"}]'}) == [
        f'{path}: Invalid value: "[{{\\"topology\\":\\"r\\",\\"size\\":\\"4\\"}}]": must be a valid JSON '
        "array: json: cannot unmarshal string into Go struct field "
        "PodsetSliceRequiredTopologyConstraint.size of type int32"]
    assert _errors({REQ: "b", LAYERS: "[]"}) == [
        f'{path}: Invalid value: "[]": topology constraints must contain between 1 and 3 entries']
    assert _errors({REQ: "b", LAYERS: _layers(("r", 16), ("bad key", 0), ("r", 5))}) == [
        f'{path}[1].topology: Invalid value: "bad key": {NAME_PART}',
        f"{path}[1].size: Invalid value: 0: must be greater than or equal to 1",
        f'{path}[2].topology: Duplicate value: "r (also at index 0)"',
    ]
    assert _errors({REQ: "b", LAYERS: _layers(("r", 16), ("h", 5))}) == [
        f"{path}[1].size: Invalid value: 5: must evenly divide the parent layer size 16"]


def test_more_than_one_topology_annotation() -> None:
    every = f'["{REQ}", "{PREF}", "{UNCONSTRAINED}"]'
    assert _errors({REQ: "r", UNCONSTRAINED: "true"}) == [
        f"{BASE}.annotations: Invalid value: must not contain more than one topology annotation: {every}"]


# -- LeaderWorkerSet groups: the shared rule --------------------------------------------------

LWS_SOURCE = "kueue v0.19.2 leaderworkerset_webhook_test.go TestValidateCreate"


def _lws_case(name: str) -> str:
    return f'{LWS_SOURCE} "invalid PodSet grouping request - {name}"'
LEADER = "spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations"
WORKER = "spec.leaderWorkerTemplate.workerTemplate.metadata.annotations"


def _lws(leader: dict[str, str] | None, worker: dict[str, str], size: int = 3) -> dict[str, Any]:
    lwt: dict[str, Any] = {"size": size, "workerTemplate": {"metadata": {"annotations": worker}}}
    if leader is not None:
        lwt["leaderTemplate"] = {"metadata": {"annotations": leader}}
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "test-lws", "namespace": "ns", "labels": {keys.QUEUE_NAME: "test-queue"}},
            "spec": {"leaderWorkerTemplate": lwt}}


def _consistent(mine: str, other: str, group: str = "groupname") -> str:
    return (f"{mine}: Invalid value: must specify '{REQ}' or '{PREF}' topology consistent with '{other}' "
            f"in group '{group}'")


def _one_of(path: str, group: str = "groupname") -> str:
    return (f'{path}[{GROUP}]: Invalid value: "{group}": can only define groups of exactly 2 pod sets, '
            "got: 1 pod set(s)")


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(_lws({GROUP: "groupname", REQ: BLOCK}, {GROUP: "groupname", REQ: BLOCK}),
                     [], id=f'{LWS_SOURCE} "valid PodSet group name request"'),
        pytest.param(_lws({GROUP: "1234", REQ: BLOCK}, {GROUP: "1234", REQ: BLOCK}),
                     [f'{LEADER}[{GROUP}]: Invalid value: "1234": must not be a number',
                      f'{WORKER}[{GROUP}]: Invalid value: "1234": must not be a number'],
                     id=f'{LWS_SOURCE} "invalid PodSet group name request - value is a number"'),
        pytest.param(_lws({GROUP: "groupname", REQ: BLOCK}, {}), [_one_of(LEADER)],
                     id=_lws_case("group specified only in leader")),
        pytest.param(_lws({}, {GROUP: "groupname", REQ: BLOCK}), [_one_of(WORKER)],
                     id=_lws_case("group specified only in worker")),
        pytest.param(_lws({GROUP: "groupname1", REQ: BLOCK}, {GROUP: "groupname2", REQ: BLOCK}),
                     [_one_of(LEADER, "groupname1"), _one_of(WORKER, "groupname2")],
                     id=_lws_case("group name does not match")),
        pytest.param(_lws({GROUP: "groupname", REQ: BLOCK}, {GROUP: "groupname", REQ: RACK}),
                     [_consistent(LEADER, WORKER), _consistent(WORKER, LEADER)],
                     id=_lws_case("required topology request does not match")),
        pytest.param(_lws({GROUP: "groupname", PREF: BLOCK}, {GROUP: "groupname", PREF: RACK}),
                     [_consistent(LEADER, WORKER), _consistent(WORKER, LEADER)],
                     id=_lws_case("preferred topology request does not match")),
        pytest.param(_lws({GROUP: "groupname", REQ: BLOCK}, {GROUP: "groupname", PREF: BLOCK}),
                     [_consistent(LEADER, WORKER), _consistent(WORKER, LEADER)],
                     id=_lws_case("different topology annotations within group")),
        pytest.param(_lws({GROUP: "groupname"}, {GROUP: "groupname"}),
                     [f"{path}[{GROUP}]: Forbidden: may not be set when neither '{PREF}' nor '{REQ}' is "
                      "specified" for path in (LEADER, WORKER)],
                     id=_lws_case("neither preferred nor required topology is requested")),
        pytest.param(_lws(None, {GROUP: "groupname", PREF: BLOCK}), [_one_of(WORKER)],
                     id=_lws_case("grouping requested without leader template")),
    ],
)
def test_kueue_lws_pod_set_groups(obj: dict[str, Any], want: list[str]) -> None:
    ctx = AdmissionContext(AdmissionPolicy(frameworks=frozenset({"leaderworkerset.x-k8s.io/leaderworkerset"}),
                                           gates=FeatureGates({})), ClusterFacts(namespace_labels={}))
    assert [str(e) for e in LWS.validate(obj, None, ctx)] == want
