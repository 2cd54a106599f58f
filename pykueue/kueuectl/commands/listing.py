"""``list clusterqueue|localqueue|resourceflavor`` and the paging and printing all lists share.

Like kueuectl, a list reads page by page (``KUEUECTL_LIST_REQUEST_LIMIT`` objects at a
time), filters each page on the client, and prints each page through one tab-aligned
writer: as a table by default, or each page as a whole with ``-o``. When nothing matched,
stdout stays empty and stderr says "No resources found".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pykueue.kueuectl.ages import age
from pykueue.kueuectl.cli import Command, Flag, Invocation
from pykueue.kueuectl.commands.common import (
    ALL_NAMESPACES,
    FIELD_SELECTOR,
    KUEUE_API,
    LABEL_SELECTOR,
    CommandError,
    client,
    current_namespace,
    list_query,
    list_request_limit,
    now,
)
from pykueue.kueuectl.printers import output
from pykueue.kueuectl.printers.output import with_type
from pykueue.kueuectl.printers.table import Column, Table, table_lines, tabwrite

JSON = dict[str, Any]


def condition_true(obj: JSON, kind: str) -> bool:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind:
            return bool(condition.get("status") == "True")
    return False


def no_resources(inv: Invocation, all_namespaces: bool | None, namespace: str = "") -> None:
    """kueuectl's message when nothing matched (cluster-scoped lists name no namespace)."""
    if all_namespaces is False:
        inv.err.write(f"No resources found in {namespace} namespace.\n")
    else:
        inv.err.write("No resources found\n")


@dataclass
class PageWriter:
    """Everything one list prints, aligned together when it ends (kueuectl's tab writer is
    flushed once, and not at all when nothing matched)."""

    inv: Invocation
    list_kind: str
    table: Callable[[JSON], Table] | None
    with_namespace: bool = False
    total: int = 0
    buffer: list[str] = field(default_factory=list)

    def page(self, page: JSON, items: list[JSON]) -> None:
        headers = self.total == 0
        self.total += len(items)
        shown = {**page, "items": items}
        if output.output_specified(self.inv) or self.table is None:
            try:
                printer = output.printer(self.inv)
            except output.OutputError as exc:
                raise CommandError(str(exc)) from None
            text = output.Capture()
            try:
                printer.print(with_type(shown, self.list_kind), text)
            except output.OutputError as exc:
                raise CommandError(str(exc)) from None
            self.buffer.append(text.value())
            return
        lines = table_lines(self.table(shown), headers=headers, with_namespace=self.with_namespace)
        self.buffer.append("".join(line + "\n" for line in lines))

    def flush(self) -> None:
        self.inv.out.write(tabwrite("".join(self.buffer)))


def run_pages(inv: Invocation, writer: PageWriter, fetch: Callable[[JSON], JSON], query: JSON,
              keep: Callable[[JSON], bool] = lambda _: True,
              enrich: Callable[[list[JSON]], None] = lambda _: None) -> int:
    """Page through a list, print each filtered page; False when nothing matched."""
    query = dict(query)
    while True:
        page = fetch(query)
        items = [item for item in page.get("items") or () if keep(item)]
        enrich(items)
        writer.page(page, items)
        token = (page.get("metadata") or {}).get("continue")
        if token:
            query["continue"] = token
            continue
        return writer.total


# -- tables -------------------------------------------------------------------------------------

def cluster_queue_table(page: JSON) -> Table:
    moment = now()
    rows = []
    for cq in page["items"]:
        status = cq.get("status") or {}
        rows.append([cq["metadata"].get("name", ""), (cq.get("spec") or {}).get("cohortName", ""),
                     int(status.get("pendingWorkloads") or 0), int(status.get("admittedWorkloads") or 0),
                     condition_true(cq, "Active"), age(cq["metadata"].get("creationTimestamp"), moment)])
    return Table([Column("Name"), Column("Cohort"), Column("Pending Workloads"), Column("Admitted Workloads"),
                  Column("Active"), Column("Age")], rows)


def local_queue_table(page: JSON) -> Table:
    moment = now()
    rows = []
    for lq in page["items"]:
        status = lq.get("status") or {}
        rows.append([lq["metadata"].get("name", ""), (lq.get("spec") or {}).get("clusterQueue", ""),
                     int(status.get("pendingWorkloads") or 0), int(status.get("admittedWorkloads") or 0),
                     age(lq["metadata"].get("creationTimestamp"), moment)])
    return Table([Column("Name"), Column("ClusterQueue"), Column("Pending Workloads"),
                  Column("Admitted Workloads"), Column("Age")], rows,
                 [lq["metadata"].get("namespace", "") for lq in page["items"]])


def resource_flavor_table(page: JSON) -> Table:
    moment = now()
    rows = []
    for rf in page["items"]:
        labels = (rf.get("spec") or {}).get("nodeLabels") or {}
        rows.append([rf["metadata"].get("name", ""), ", ".join(sorted(f"{k}={v}" for k, v in labels.items())),
                     age(rf["metadata"].get("creationTimestamp"), moment)])
    return Table([Column("Name"), Column("Node Labels"), Column("Age")], rows)


# -- commands -----------------------------------------------------------------------------------

def run_clusterqueues(inv: Invocation) -> int:
    api = client(inv)
    active = inv.strings("active")
    if len(active) > 1:
        raise CommandError("only one active flag can be provided")
    writer = PageWriter(inv, "ClusterQueueList", cluster_queue_table)
    # kueuectl lists ClusterQueues in one request (no page size).
    query = list_query(inv.string("selector"), inv.string("field-selector"), 0)

    def keep(cq: JSON) -> bool:
        return not active or condition_true(cq, "Active") == active[0]

    if run_pages(inv, writer, lambda q: api.get(f"{KUEUE_API}/clusterqueues", q), query, keep) == 0:
        no_resources(inv, None)
        return 0
    writer.flush()
    return 0


def run_localqueues(inv: Invocation) -> int:
    limit = list_request_limit()
    namespace = current_namespace(inv)
    api = client(inv)
    all_namespaces = inv.boolean("all-namespaces")
    path = f"{KUEUE_API}/localqueues" if all_namespaces else f"{KUEUE_API}/namespaces/{namespace}/localqueues"
    cq = inv.string("clusterqueue")
    writer = PageWriter(inv, "LocalQueueList", local_queue_table, with_namespace=all_namespaces)
    query = list_query(inv.string("selector"), inv.string("field-selector"), limit)

    def keep(lq: JSON) -> bool:
        return not cq or (lq.get("spec") or {}).get("clusterQueue") == cq

    if run_pages(inv, writer, lambda q: api.get(path, q), query, keep) == 0:
        no_resources(inv, all_namespaces, namespace)
        return 0
    writer.flush()
    return 0


def run_resourceflavors(inv: Invocation) -> int:
    limit = list_request_limit()
    api = client(inv)
    writer = PageWriter(inv, "ResourceFlavorList", resource_flavor_table)
    query = list_query(inv.string("selector"), inv.string("field-selector"), limit)
    if run_pages(inv, writer, lambda q: api.get(f"{KUEUE_API}/resourceflavors", q), query) == 0:
        no_resources(inv, None)
        return 0
    writer.flush()
    return 0


SELECTORS: tuple[Flag, ...] = (FIELD_SELECTOR, LABEL_SELECTOR)


def commands() -> list[Command]:
    return [
        Command("localqueue", "List LocalQueues, optionally of one ClusterQueue", aliases=("lq",),
                usage="[--clusterqueue NAME] [--selector KEY=VALUE] [--field-selector FIELD=VALUE] "
                      "[--all-namespaces]",
                flags=(*output.FLAGS, ALL_NAMESPACES, *SELECTORS,
                       Flag("clusterqueue", "string", "only LocalQueues of this ClusterQueue", short="c")),
                run=run_localqueues),
        Command("clusterqueue", "List ClusterQueues, optionally only active or inactive ones",
                aliases=("cq",),
                usage="[--selector KEY=VALUE] [--field-selector FIELD=VALUE] [--active=true|false]",
                flags=(*output.FLAGS, *SELECTORS,
                       Flag("active", "boolSlice", "only active (true) or inactive (false) ClusterQueues")),
                run=run_clusterqueues),
        Command("resourceflavor", "List ResourceFlavors", aliases=("rf",),
                usage="[--selector KEY=VALUE] [--field-selector FIELD=VALUE]",
                flags=(*output.FLAGS, *SELECTORS), run=run_resourceflavors),
    ]
