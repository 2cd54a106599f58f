"""JSON as Go's encoding/json writes kueuectl's typed objects."""

from __future__ import annotations

import pytest

from pykueue.kueuectl.gotypes import encode, format_go_duration, parse_go_duration
from pykueue.kueuectl.printers.gojson import go_float, go_float_g, go_string, marshal_indent, sort_keys


def test_indentation_and_empty_containers() -> None:
    assert marshal_indent({"a": [1, {"b": None}], "c": {}, "d": []}) == (
        '{\n    "a": [\n        1,\n        {\n            "b": null\n        }\n    ],\n'
        '    "c": {},\n    "d": []\n}')


@pytest.mark.parametrize(("text", "expected"), [
    ("<a & b>", '"\\u003ca \\u0026 b\\u003e"'), ("tab\there", '"tab\\there"'), ("\x01", '"\\u0001"'),
    ("caf\u00e9", '"caf\u00e9"'), ("\u2028", '"\\u2028"'), ('q"\\', '"q\\"\\\\"'), ("\b\f", '"\\b\\f"'),
])
def test_strings_are_escaped_as_go_does(text: str, expected: str) -> None:
    assert go_string(text) == expected


@pytest.mark.parametrize(("value", "json", "g"), [
    (1.0, "1", "1"), (1.5, "1.5", "1.5"), (1e-7, "1e-7", "1e-07"), (1e21, "1e+21", "1e+21"),
    (1e20, "100000000000000000000", "1e+20"), (1234567.0, "1234567", "1.234567e+06"),
    (0.0001, "0.0001", "0.0001"),
])
def test_floats(value: float, json: str, g: str) -> None:
    assert (go_float(value), go_float_g(value)) == (json, g)


def test_map_keys_sort_bytewise() -> None:
    assert list(sort_keys({"b": 1, "B": 2, "a": {"z": 1, "y": 2}})) == ["B", "a", "b"]


def test_a_cluster_queue_takes_the_go_structs_order_and_zero_values() -> None:
    server = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
              "metadata": {"uid": "u", "name": "cq", "managedFields": [],
                           "creationTimestamp": "2024-01-01T00:00:00Z"},
              "spec": {"stopPolicy": "None", "namespaceSelector": {}, "cohortName": "",
                       "resourceGroups": [{"flavors": [{"name": "f", "resources": [
                           {"name": "cpu", "nominalQuota": "1000m", "lendingLimit": 2}]}],
                           "coveredResources": ["cpu"]}],
                       "unknownField": True}}
    encoded = encode("ClusterQueue", server)
    assert list(encoded) == ["kind", "apiVersion", "metadata", "spec", "status"]
    assert list(encoded["metadata"]) == ["name", "uid", "creationTimestamp"]
    assert encoded["spec"] == {
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "1", "lendingLimit": "2"}]}]}],
        "namespaceSelector": {}, "stopPolicy": "None"}
    assert encoded["status"] == {"pendingWorkloads": 0, "reservingWorkloads": 0, "admittedWorkloads": 0}


def test_a_workload_keeps_its_pod_template_in_go_order() -> None:
    server = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w"},
              "spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                  {"resources": {"requests": {"memory": "1Gi", "cpu": "1"}}, "name": "c", "image": "i"}]}}}]}}
    pod_set = encode("Workload", server)["spec"]["podSets"][0]
    assert list(pod_set) == ["name", "template", "count"]
    container = pod_set["template"]["spec"]["containers"][0]
    assert list(container) == ["name", "image", "resources"]
    assert list(container["resources"]["requests"]) == ["cpu", "memory"]
    assert pod_set["template"]["metadata"] == {}


@pytest.mark.parametrize(("text", "canonical"), [("1h30m", "1h30m0s"), ("90s", "1m30s"), ("1.5s", "1.5s"),
                                                 ("300ms", "300ms"), ("0", "0s"), ("-2m", "-2m0s")])
def test_go_durations(text: str, canonical: str) -> None:
    assert format_go_duration(parse_go_duration(text)) == canonical
