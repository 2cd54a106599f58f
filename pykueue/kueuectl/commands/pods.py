"""``list pods --for KIND/NAME``: the pods of one job, printed as ``kubectl get pods`` prints.

The table (default and ``-o wide``) is the API server's own pod table; other formats print
each pod on its own, as kubectl does with unstructured objects.
"""

from __future__ import annotations

from typing import Any

from pykueue.kueuectl.cli import Command, Flag, Invocation
from pykueue.kueuectl.commands import targets
from pykueue.kueuectl.commands.common import (
    ALL_NAMESPACES,
    FIELD_SELECTOR,
    LABEL_SELECTOR,
    CommandError,
    client,
    current_namespace,
    list_query,
    list_request_limit,
)
from pykueue.kueuectl.commands.integrations import pod_selector
from pykueue.kueuectl.discovery import Mapper
from pykueue.kueuectl.printers import output
from pykueue.kueuectl.printers.table import Column, Table, table_lines, tabwrite

JSON = dict[str, Any]
TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def _no_resources(inv: Invocation, all_namespaces: bool, namespace: str) -> None:
    if all_namespaces:
        inv.err.write("No resources found.\n")
    else:
        inv.err.write(f"No resources found in {namespace} namespace.\n")


def _server_table(page: JSON) -> Table:
    columns = [Column(str(c.get("name", "")), int(c.get("priority") or 0))
               for c in page.get("columnDefinitions") or ()]
    rows = [list(row.get("cells") or ()) for row in page.get("rows") or ()]
    namespaces = [str(((row.get("object") or {}).get("metadata") or {}).get("namespace", ""))
                  for row in page.get("rows") or ()]
    return Table(columns, rows, namespaces)


def run(inv: Invocation) -> int:
    limit = list_request_limit()
    output_format = inv.string("output")
    server_print = output_format == "" or "wide" in output_format
    namespace = current_namespace(inv)
    all_namespaces = inv.boolean("all-namespaces")
    api = client(inv)
    target = targets.decode(Mapper(api), inv.string("for"))
    if target is None:
        raise CommandError(f"invalid value '{inv.string('for')}' used in --for flag; value must be in the "
                           "format TYPE[.API-GROUP]/NAME")
    job = targets.fetch(api, target, namespace, all_namespaces)
    if job is None:
        _no_resources(inv, all_namespaces, namespace)
        return 0
    job_selector = pod_selector(target.resource.api_version, target.resource.kind, job)
    if not job_selector:
        raise CommandError(f"unsupported kind: {job.get('kind', target.resource.kind)}")

    selector = inv.string("selector")
    labels = selector + ("," + job_selector if selector else job_selector)
    query = list_query(labels, inv.string("field-selector"), limit)
    path = "/api/v1/pods" if all_namespaces else f"/api/v1/namespaces/{namespace}/pods"
    accept = TABLE_ACCEPT if server_print else "application/json"
    pages: list[JSON] = []
    while True:
        page = api.get(path, query, accept=accept)
        pages.append(page)
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            break
        query["continue"] = token

    text: list[str] = []
    if server_print:
        printed_headers = False
        for page in pages:
            table = _server_table(page)
            lines = table_lines(table, headers=not printed_headers, with_namespace=all_namespaces,
                                wide=output_format == "wide")
            printed_headers = printed_headers or bool(table.rows)
            text.extend(line + "\n" for line in lines)
    else:
        try:
            printer = output.printer(inv)
            capture = output.Capture()
            for page in pages:
                for pod in page.get("items") or ():
                    printer.print({"apiVersion": "v1", "kind": "Pod", **pod}, capture)
        except output.OutputError as exc:
            raise CommandError(str(exc)) from None
        text.append(capture.value())
    rendered = tabwrite("".join(text))
    if not rendered:
        _no_resources(inv, all_namespaces, namespace)
        return 0
    inv.out.write(rendered)
    return 0


def command() -> Command:
    return Command("pods", "List the pods of a job", aliases=("po",), usage="--for TYPE[.API-GROUP]/NAME",
                   flags=(*output.FLAGS, ALL_NAMESPACES, FIELD_SELECTOR, LABEL_SELECTOR,
                          Flag("for", "string", "the job whose pods to list, TYPE[.API-GROUP]/NAME")),
                   required=("for",), run=run)
