"""WorkloadPriorityClass: a priority value for workloads, independent of pod priority."""

from __future__ import annotations

from pykueue.api.fields import f
from pykueue.api.resource import PrinterColumn, Resource


class WorkloadPriorityClass(Resource):
    KIND = "WorkloadPriorityClass"
    PLURAL = "workloadpriorityclasses"
    SINGULAR = "workloadpriorityclass"
    SHORT_NAMES = ("wpc",)
    SUBRESOURCES = {}
    PRINTER_COLUMNS = (
        PrinterColumn("Value", "integer", ".value", "Value of workloadPriorityClass's Priority"),
    )

    value: int = f(required=True, fmt="int32")
    description: str | None = f(max_length=2048)
