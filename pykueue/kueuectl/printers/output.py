"""``-o`` and friends: which printer a command's objects go through, as kubectl chooses.

Objects are JSON dicts. A *typed* object names its Kueue kind (``ClusterQueue``,
``WorkloadList``) and is printed as kueuectl's Go struct would be (see ``gotypes``); an
untyped one (pods) is printed with its keys sorted, as kubectl prints unstructured objects.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Protocol

from pykueue.kueuectl.cli import Flag, Invocation
from pykueue.kueuectl.gotypes import encode, known_kind
from pykueue.kueuectl.printers import goyaml, jsonpath, kyaml
from pykueue.kueuectl.printers.gojson import marshal_indent, sort_keys

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = f"{KUEUE_GROUP}/v1beta2"

FLAGS: tuple[Flag, ...] = (
    Flag("show-managed-fields", "bool", "keep metadata.managedFields in JSON and YAML output"),
    Flag("allow-missing-template-keys", "bool", "ignore missing fields in templates", default=True),
    Flag("template", "string", "JSONPath template for -o jsonpath (also a file with -o jsonpath-file)"),
    Flag("output", "string", "output format: json, yaml, kyaml, name, jsonpath=..., jsonpath-as-json=..., "
         "jsonpath-file=...", short="o"),
)

_TEMPLATE_FORMATS = ("go-template", "go-template-file", "jsonpath", "jsonpath-as-json", "jsonpath-file",
                     "template", "templatefile")


def allowed_formats() -> list[str]:
    """As kubectl lists them; ``KUBECTL_KYAML=false`` turns KYAML off, as in kubectl."""
    kyaml_on = os.environ.get("KUBECTL_KYAML", "").lower() != "false"
    return sorted(["json", "yaml", *(["kyaml"] if kyaml_on else []), "name", *_TEMPLATE_FORMATS])


class OutputError(Exception):
    """A printer could not be chosen or could not print; the message is kueuectl's."""


class Writer(Protocol):
    def write(self, text: str, /) -> int: ...


class Printer(Protocol):
    def print(self, obj: dict[str, Any], out: Writer) -> None: ...


class Capture:
    """A writer that keeps what was written (list output is aligned before it is shown)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str, /) -> int:
        self.parts.append(text)
        return len(text)

    def value(self) -> str:
        return "".join(self.parts)


def with_type(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    """The object with the kind and apiVersion kueuectl's type setter gives typed objects."""
    return {**obj, "kind": kind, "apiVersion": KUEUE_VERSION}


def is_typed(obj: dict[str, Any]) -> bool:
    return obj.get("apiVersion") == KUEUE_VERSION and known_kind(str(obj.get("kind", "")))


def go_value(obj: dict[str, Any]) -> Any:
    """What kueuectl's printers see: a typed Kueue object as its Go struct writes it."""
    return encode(str(obj["kind"]), obj) if is_typed(obj) else sort_keys(obj)


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    def strip(item: Any) -> Any:
        if isinstance(item, dict) and isinstance(item.get("metadata"), dict):
            return {**item, "metadata": {k: v for k, v in item["metadata"].items() if k != "managedFields"}}
        return item

    if isinstance(obj.get("items"), list) and str(obj.get("kind", "")).endswith("List"):
        return {**obj, "items": [strip(item) for item in obj["items"]]}
    return strip(obj)  # type: ignore[no-any-return]


@dataclass
class JSONPrinter:
    show_managed_fields: bool = False

    def print(self, obj: dict[str, Any], out: Writer) -> None:
        if not self.show_managed_fields:
            obj = _without_managed_fields(obj)
        out.write(marshal_indent(go_value(obj)) + "\n")


@dataclass
class YAMLPrinter:
    show_managed_fields: bool = False
    printed: int = 0

    def print(self, obj: dict[str, Any], out: Writer) -> None:
        if not self.show_managed_fields:
            obj = _without_managed_fields(obj)
        self.printed += 1
        if self.printed > 1:
            out.write("---\n")
        out.write(goyaml.dump(go_value(obj)))


@dataclass
class KYAMLPrinter:
    show_managed_fields: bool = False

    def print(self, obj: dict[str, Any], out: Writer) -> None:
        if not self.show_managed_fields:
            obj = _without_managed_fields(obj)
        out.write(kyaml.dump(go_value(obj)))


@dataclass
class NamePrinter:
    """``kind.group/name operation``; ``-o name`` drops the operation."""

    operation: str = ""
    short: bool = False

    def print(self, obj: dict[str, Any], out: Writer) -> None:
        kind = str(obj.get("kind", ""))
        api_version = str(obj.get("apiVersion", ""))
        if kind.endswith("List") and isinstance(obj.get("items"), list):
            if api_version == KUEUE_VERSION:
                raise OutputError(f"list types are not supported by name printing: *v1beta2.{kind}")
            for item in obj["items"]:
                self.print(item, out)
            return
        if not kind or not api_version:
            raise OutputError("missing apiVersion or kind; try GetObjectKind().SetGroupVersionKind() "
                              "if you know the type")
        name = str((obj.get("metadata") or {}).get("name") or "<unknown>")
        group = api_version.rpartition("/")[0]
        prefix = f"{kind.lower()}.{group}" if group else kind.lower()
        suffix = f" {self.operation}" if self.operation and not self.short else ""
        out.write(f"{prefix}/{name}{suffix}\n")


@dataclass
class JSONPathPrinter:
    template: str
    allow_missing_keys: bool = True
    as_json: bool = False
    parsed: list[Any] = field(init=False)

    def __post_init__(self) -> None:
        try:
            self.parsed = jsonpath.parse(self.template)
        except jsonpath.JSONPathError as exc:
            raise OutputError(f"error parsing jsonpath {self.template}, {exc}") from None

    def print(self, obj: dict[str, Any], out: Writer) -> None:
        data = go_value(obj)
        run = jsonpath.execute_as_json if self.as_json else jsonpath.execute
        try:
            out.write(run(self.parsed, data, self.allow_missing_keys, typed=is_typed(obj)))
        except jsonpath.JSONPathError as exc:
            raise OutputError(f"error executing jsonpath {self.template!r}: {exc}. Printing more "
                              f"information for debugging the template:\n\ttemplate was:\n\t\t{self.template}"
                              f"\n\tobject given to jsonpath engine was:\n\t\t{data}\n\n") from None


def output_specified(inv: Invocation) -> bool:
    return "output" in inv.changed


def printer(inv: Invocation, operation: str = "") -> Printer:
    """The printer ``-o`` (and ``--template``) ask for; ``operation`` is the name printer's
    past tense ("created", "created (server dry run)")."""
    output = inv.string("output")
    template = inv.string("template")
    if template and not output_specified(inv):
        output = "go-template"
    lowered = output.lower()
    show_managed = inv.boolean("show-managed-fields")
    if lowered == "json":
        return JSONPrinter(show_managed)
    if lowered == "yaml":
        return YAMLPrinter(show_managed)
    if lowered == "kyaml" and "kyaml" in allowed_formats():
        return KYAMLPrinter(show_managed)
    if output in ("", "name"):
        return NamePrinter(operation, short=output == "name")
    fmt, sep, argument = output.partition("=")
    if fmt in _TEMPLATE_FORMATS:
        if not sep:
            argument = template
        if not argument:
            raise OutputError("template format specified but no template given")
        if fmt in ("jsonpath", "jsonpath-as-json", "jsonpath-file"):
            if fmt == "jsonpath-file":
                try:
                    with open(argument) as f:
                        argument = f.read()
                except OSError as exc:
                    raise OutputError(f"error reading --template {argument}, {exc}") from None
            return JSONPathPrinter(argument, inv.boolean("allow-missing-template-keys"),
                                   as_json=fmt == "jsonpath-as-json")
        raise OutputError(f"the {fmt} output format is not supported by this kubectl-kueue; "
                          "use jsonpath")
    raise OutputError(f'unable to match a printer suitable for the output format "{output}", '
                      f"allowed formats are: {','.join(allowed_formats())}")
