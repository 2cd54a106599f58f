"""``delete workload``: delete Workloads, or rather the jobs that own them.

A Workload owned by a job would come back with the job, so the owners are deleted (after
a y/n prompt unless ``--yes`` or a dry run) and the garbage collector removes the
Workload; a Workload without owners is deleted directly.
"""

from __future__ import annotations

import sys
from typing import Any

from pykueue.kueuectl.cli import Command, Flag, Invocation
from pykueue.kueuectl.commands.common import (
    ALL_NAMESPACES,
    DRY_RUN,
    KUEUE_API,
    CommandError,
    client,
    current_namespace,
    dry_run_query,
    dry_run_strategy,
    with_dry_run,
)
from pykueue.kueuectl.discovery import Mapper, MappingError
from pykueue.kueuectl.printers import output
from pykueue.kueuectl.printers.output import with_type
from pykueue.kueuectl.transport import ApiError, Client

JSON = dict[str, Any]
# (owner label as kueuectl prints it, e.g. "jobs.batch/sample", and its API path)
Owner = tuple[str, str]


def _owners(mapper: Mapper, wl: JSON) -> list[Owner]:
    owners: list[Owner] = []
    namespace = wl["metadata"].get("namespace", "")
    for ref in wl["metadata"].get("ownerReferences") or ():
        try:
            resource = mapper.for_kind(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
        except MappingError as exc:
            raise CommandError(str(exc)) from None
        group_resource = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
        name = str(ref.get("name", ""))
        owners.append((f"{group_resource}/{name}", f"{resource.collection_path(namespace)}/{name}"))
    return owners


def _confirm(inv: Invocation, message: str) -> bool:
    """Ask, and read the first word typed (blank lines skipped, as Go's fmt.Fscan does)."""
    inv.out.write(message + "Do you want to proceed (y/n)? ")
    inv.out.flush()
    for line in sys.stdin:
        words = line.split()
        if words:
            return words[0].lower() == "y"
    return False


def _workloads(inv: Invocation, api: Client, namespace: str) -> list[JSON]:
    if inv.boolean("all"):
        path = f"{KUEUE_API}/workloads" if inv.boolean("all-namespaces") else \
            f"{KUEUE_API}/namespaces/{namespace}/workloads"
        return list(api.get(path).get("items") or ())
    found = []
    for name in inv.args:
        try:
            found.append(api.get(f"{KUEUE_API}/namespaces/{namespace}/workloads/{name}"))
        except ApiError as exc:
            if not exc.not_found:
                raise
            inv.err.write(f"{exc}\n")
    return found


def run(inv: Invocation) -> int:
    if not inv.boolean("all") and not inv.args:
        raise CommandError("requires at least 1 arg(s), only received 0")
    if inv.boolean("all") and inv.args:
        raise CommandError("name cannot be provided when a selector is specified")
    if inv.boolean("all-namespaces") and inv.args:
        raise CommandError("a resource cannot be retrieved by name across all namespaces")
    namespace = current_namespace(inv)
    strategy = dry_run_strategy(inv)
    printer = output.NamePrinter(with_dry_run("deleted", strategy))
    api = client(inv)
    mapper = Mapper(api)

    workloads = _workloads(inv, api, namespace)
    if not workloads:
        return 0
    owners = [(wl, _owners(mapper, wl)) for wl in workloads]
    owned = any(wl["metadata"].get("ownerReferences") for wl in workloads)
    if strategy == "none" and not inv.boolean("yes") and owned:
        if inv.boolean("all"):
            message = "This operation will also delete the jobs associated with these workloads.\n"
        else:
            lines = [f"  - {', '.join(label for label, _ in found)} associated with the "
                     f"{wl['metadata'].get('namespace', '')}/{wl['metadata'].get('name', '')} workload\n"
                     for wl, found in owners if found]
            message = "This operation will also delete:\n" + "\n".join(lines) if lines else ""
        if not _confirm(inv, message):
            inv.out.write("Deletion is canceled\n")
            return 0

    suffix = {"client": " (client dry run)", "server": " (server dry run)"}.get(strategy, "")
    for wl, found in owners:
        for label, path in found:
            if strategy != "client":
                _delete(api, path, strategy)
            inv.out.write(f"{label} deleted{suffix}\n")
        if not found:
            meta = wl["metadata"]
            if strategy != "client":
                path = f"{KUEUE_API}/namespaces/{meta.get('namespace', '')}/workloads/{meta.get('name', '')}"
                _delete(api, path, strategy)
            printer.print(with_type(wl, "Workload"), inv.out)
    return 0


def _delete(api: Client, path: str, strategy: str) -> None:
    try:
        api.request("DELETE", path, query=dry_run_query(strategy))
    except ApiError as exc:
        if not exc.not_found:
            raise


def command() -> Command:
    return Command("workload", "Delete Workloads, and the jobs that own them",
                   aliases=("kwl", "kueueworkload", "kueueworkloads"),
                   usage="NAME [--yes] [--all] [--dry-run STRATEGY]",
                   flags=(Flag("yes", "bool", "do not ask before deleting the jobs", short="y"),
                          Flag("all", "bool", "delete every Workload of the namespace"), ALL_NAMESPACES),
                   persistent=(DRY_RUN,), run=run)
