"""``stop`` and ``resume`` of ClusterQueues, LocalQueues and Workloads.

Queues are held through ``spec.stopPolicy`` (``HoldAndDrain``, or ``Hold`` with
``--keep-already-running``; ``None`` resumes), Workloads through ``spec.active``. The
object is read, changed and merge-patched, then printed as the server returned it.
"""

from __future__ import annotations

from typing import Any

from pykueue.kueuectl.cli import Command, Flag, Invocation
from pykueue.kueuectl.commands.common import (
    DRY_RUN,
    KUEUE_API,
    CommandError,
    client,
    current_namespace,
    dry_run_query,
    dry_run_strategy,
    with_dry_run,
)
from pykueue.kueuectl.printers import output
from pykueue.kueuectl.printers.output import with_type
from pykueue.kueuectl.transport import MERGE_PATCH

KEEP_RUNNING = Flag("keep-already-running", "bool",
                    "let admitted workloads run (Hold instead of HoldAndDrain)")


def _apply(inv: Invocation, kind: str, path: str, change: dict[str, Any], operation: str) -> int:
    strategy = dry_run_strategy(inv)
    api = client(inv)
    try:
        printer = output.printer(inv, with_dry_run(operation, strategy))
    except output.OutputError as exc:
        raise CommandError(str(exc)) from None
    obj = api.get(path)
    if strategy == "client":
        obj = {**obj, "spec": {**(obj.get("spec") or {}), **change}}
    else:
        obj = api.request("PATCH", path, query=dry_run_query(strategy), body={"spec": change},
                          content_type=MERGE_PATCH)
    try:
        printer.print(with_type(obj, kind), inv.out)
    except output.OutputError as exc:
        raise CommandError(str(exc)) from None
    return 0


def _stop_policy(inv: Invocation, stop: bool) -> dict[str, Any]:
    if not stop:
        return {"stopPolicy": "None"}
    return {"stopPolicy": "Hold" if inv.boolean("keep-already-running") else "HoldAndDrain"}


def cluster_queue(stop: bool) -> Command:
    def run(inv: Invocation) -> int:
        path = f"{KUEUE_API}/clusterqueues/{inv.args[0]}"
        return _apply(inv, "ClusterQueue", path, _stop_policy(inv, stop), "")

    verb = "Stop" if stop else "Resume"
    return Command("clusterqueue", f"{verb} admission to a ClusterQueue", aliases=("cq",),
                   usage="NAME [--keep-already-running]" if stop else "NAME",
                   flags=(*output.FLAGS, KEEP_RUNNING) if stop else output.FLAGS, nargs=1, run=run)


def local_queue(stop: bool) -> Command:
    def run(inv: Invocation) -> int:
        path = f"{KUEUE_API}/namespaces/{current_namespace(inv)}/localqueues/{inv.args[0]}"
        return _apply(inv, "LocalQueue", path, _stop_policy(inv, stop), "")

    verb = "Stop" if stop else "Resume"
    return Command("localqueue", f"{verb} admission from a LocalQueue", aliases=("lq",),
                   usage="NAME [--keep-already-running]" if stop else "NAME",
                   flags=(*output.FLAGS, KEEP_RUNNING) if stop else output.FLAGS, nargs=1, run=run)


def workload(stop: bool) -> Command:
    def run(inv: Invocation) -> int:
        path = f"{KUEUE_API}/namespaces/{current_namespace(inv)}/workloads/{inv.args[0]}"
        return _apply(inv, "Workload", path, {"active": not stop}, "stopped" if stop else "resumed")

    summary = ("Deactivate a Workload: it is not admitted, or evicted if it was" if stop
               else "Activate a Workload again")
    return Command("workload", summary, aliases=("kwl", "kueueworkload", "kueueworkloads"),
                   usage="NAME [--namespace NAMESPACE] [--dry-run STRATEGY]", flags=output.FLAGS, nargs=1,
                   run=run)


def commands() -> list[Command]:
    stop = Command("stop", "Stop a ClusterQueue, LocalQueue or Workload", persistent=(DRY_RUN,))
    stop.add(workload(True), local_queue(True), cluster_queue(True))
    resume = Command("resume", "Resume a ClusterQueue, LocalQueue or Workload", persistent=(DRY_RUN,))
    resume.add(workload(False), local_queue(False), cluster_queue(False))
    return [resume, stop]
