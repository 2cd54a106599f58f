"""The base of every top-level API object: apiVersion, kind, metadata, and the facts a
CRD needs about the kind (plural, scope, short names, printer columns)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pykueue.api.fields import Model, f
from pykueue.api.meta import ObjectMeta, metadata_field

GROUP = "kueue.x-k8s.io"
V1BETA1 = f"{GROUP}/v1beta1"
V1BETA2 = f"{GROUP}/v1beta2"


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    type: str
    json_path: str
    description: str | None = None
    priority: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.description is not None:
            out["description"] = self.description
        out["jsonPath"] = self.json_path
        out["name"] = self.name
        if self.priority is not None:
            out["priority"] = self.priority
        out["type"] = self.type
        return out


class Resource(Model):
    """A top-level object. Subclasses set the ClassVars describing their kind."""

    api_version: str | None = f()
    kind: str | None = f()
    metadata: ObjectMeta | None = metadata_field()

    KIND: ClassVar[str] = ""
    PLURAL: ClassVar[str] = ""
    SINGULAR: ClassVar[str] = ""
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ()
    NAMESPACED: ClassVar[bool] = False
    STATUS_SUBRESOURCE: ClassVar[bool] = False
    # Set to {} to declare an empty subresources block, as Kueue does for some kinds.
    SUBRESOURCES: ClassVar[dict[str, Any] | None] = None
    SELECTABLE_FIELDS: ClassVar[tuple[str, ...]] = ()
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = ()
    API_VERSION: ClassVar[str] = V1BETA2
    # Kueue marks v1beta1 deprecated on every CRD but MultiKueueConfig's.
    V1BETA1_DEPRECATED: ClassVar[bool] = True

    @property
    def name(self) -> str:
        return (self.metadata.name if self.metadata else None) or ""

    @property
    def namespace(self) -> str:
        return (self.metadata.namespace if self.metadata else None) or ""


AGE_COLUMN = PrinterColumn("Age", "date", ".metadata.creationTimestamp", "Time this workload was created")
