"""JSONPath templates and the choice of printer for ``-o``."""

from __future__ import annotations

import io
from typing import Any

import pytest

from pykueue.kueuectl.printers import jsonpath
from pykueue.kueuectl.printers.output import (
    JSONPrinter,
    KYAMLPrinter,
    NamePrinter,
    OutputError,
    YAMLPrinter,
    allowed_formats,
)

DATA: dict[str, Any] = {"items": [
    {"metadata": {"name": "a", "labels": {"x": "1"}}, "n": 1, "ok": True},
    {"metadata": {"name": "b"}, "n": 2, "ok": False},
]}


@pytest.mark.parametrize(("template", "expected"), [
    ("{.items[*].metadata.name}", "a b"),
    ("{range .items[*]}{.metadata.name}{'\\n'}{end}", "a\nb\n"),
    ("{.items[0].metadata}", '{"labels":{"x":"1"},"name":"a"}'),
    ("{.items[?(@.n==2)].metadata.name}", "b"),
    ("{.items[?(@.metadata.labels.x)].metadata.name}", "a"),
    ("{..name}", "a b"),
    ("{.items[-1:].n}", "2"),
    ("{.items[*]['n','ok']}", "1 2 true false"),
    ("x{.items[0].metadata.labels.x}y", "x1y"),
    ("{.items[0].missing}", ""),
])
def test_templates(template: str, expected: str) -> None:
    assert jsonpath.execute(jsonpath.parse(template), DATA, True) == expected


def test_typed_objects_reach_the_engine_with_float_numbers() -> None:
    assert jsonpath.execute(jsonpath.parse("{.big}"), {"big": 1000000}, True, typed=True) == "1e+06"
    assert jsonpath.execute(jsonpath.parse("{.big}"), {"big": 1000000}, True) == "1000000"


def test_json_output_and_errors() -> None:
    assert jsonpath.execute_as_json(jsonpath.parse("{.items[*].n}"), DATA, True) == "[\n    1,\n    2\n]\n"
    with pytest.raises(jsonpath.JSONPathError, match="unclosed action"):
        jsonpath.parse("{.items")
    with pytest.raises(jsonpath.JSONPathError, match="missing is not found"):
        jsonpath.execute(jsonpath.parse("{.missing}"), DATA, False)
    with pytest.raises(jsonpath.JSONPathError, match="array index out of bounds"):
        jsonpath.execute(jsonpath.parse("{.items[5]}"), DATA, True)


TYPED = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
         "metadata": {"name": "lq", "namespace": "ns", "managedFields": [{"manager": "m"}]},
         "spec": {"clusterQueue": "cq"}}


def printed(printer: Any, obj: dict[str, Any]) -> str:
    out = io.StringIO()
    printer.print(obj, out)
    return out.getvalue()


def test_name_printer() -> None:
    assert printed(NamePrinter("created (server dry run)"), TYPED) == \
        "localqueue.kueue.x-k8s.io/lq created (server dry run)\n"
    # A stop under --dry-run=client: kueuectl's empty operation gets the suffix, and two spaces.
    assert printed(NamePrinter(" (client dry run)"), TYPED) == \
        "localqueue.kueue.x-k8s.io/lq  (client dry run)\n"
    assert printed(NamePrinter("created", short=True), {"apiVersion": "v1", "kind": "Pod",
                                                        "metadata": {"name": "p"}}) == "pod/p\n"
    with pytest.raises(OutputError, match=r"not supported by name printing: \*v1beta2.LocalQueueList"):
        printed(NamePrinter(), {**TYPED, "kind": "LocalQueueList", "items": []})


def test_json_and_yaml_drop_managed_fields_and_print_typed_objects() -> None:
    text = printed(JSONPrinter(), TYPED)
    assert text.startswith('{\n    "kind": "LocalQueue",\n    "apiVersion": "kueue.x-k8s.io/v1beta2"')
    assert "managedFields" not in text and '"pendingWorkloads": 0' in text
    yaml_printer = YAMLPrinter()
    assert printed(yaml_printer, TYPED).startswith("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n")
    assert printed(yaml_printer, TYPED).startswith("---\n")
    assert "managedFields" in printed(JSONPrinter(show_managed_fields=True), TYPED)


def test_allowed_formats_are_kubectls() -> None:
    assert ",".join(allowed_formats()) == (
        "go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,kyaml,name,template,"
        "templatefile,yaml")


def test_kyaml_as_kueuectl_prints_a_flavor() -> None:
    labels = {"kubernetes.io/arch": "arm64", "1": "x", "true": "y", "a.b": "c", "-x": "1"}
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "rfa"},
              "spec": {"nodeLabels": labels, "tolerations": [{"operator": "Exists", "effect": "NoExecute"}]}}
    assert printed(KYAMLPrinter(), flavor) == """\
---
{
  kind: "ResourceFlavor",
  apiVersion: "kueue.x-k8s.io/v1beta2",
  metadata: {
    name: "rfa",
  },
  spec: {
    nodeLabels: {
      "-x": "1",
      "1": "x",
      a.b: "c",
      kubernetes.io/arch: "arm64",
      "true": "y",
    },
    tolerations: [{
      operator: "Exists",
      effect: "NoExecute",
    }],
  },
}
"""


def test_kyaml_folds_multi_line_strings() -> None:
    from pykueue.kueuectl.printers import kyaml

    assert kyaml.dump({"a": "one\ntwo\n", "b": [1, "x"]}) == (
        '---\n{\n  a: "\\\n     one\\n\\\n     two\\n\\\n    ",\n  b: [\n    1,\n    "x",\n  ],\n}\n')
