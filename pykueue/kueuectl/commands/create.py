"""``create clusterqueue|localqueue|resourceflavor``: build the object from flags, send it
(or not, with ``--dry-run=client``) and print what the server returned."""

from __future__ import annotations

from typing import Any

from pykueue.kueuectl.cli import Command, Flag, Invocation
from pykueue.kueuectl.commands import specs
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
from pykueue.kueuectl.gotypes import encode
from pykueue.kueuectl.printers import output
from pykueue.kueuectl.printers.output import with_type
from pykueue.kueuectl.transport import Client

CQ_FLAGS: tuple[Flag, ...] = (
    Flag("cohort", "string", "cohort the ClusterQueue belongs to"),
    Flag("queuing-strategy", "string", "queueing strategy (StrictFIFO or BestEffortFIFO)"),
    Flag("namespace-selector", "stringToString", "labels of the namespaces that may submit to it"),
    Flag("reclaim-within-cohort", "string", "preemption policy for reclaiming quota lent in the cohort"),
    Flag("preemption-within-cluster-queue", "string", "preemption policy within the ClusterQueue"),
    Flag("nominal-quota", "stringSlice", 'quota per flavor and resource, "FLAVOR:RES=QTY;RES=QTY,..."'),
    Flag("borrowing-limit", "stringSlice", "most it may borrow, same syntax as --nominal-quota"),
    Flag("lending-limit", "stringSlice", "most the ClusterQueue may lend, same syntax as --nominal-quota"),
)
LQ_FLAGS: tuple[Flag, ...] = (
    Flag("clusterqueue", "string", "ClusterQueue the LocalQueue points to (required)", short="c"),
    Flag("ignore-unknown-cq", "bool", "create it even if the ClusterQueue does not exist", short="i"),
)
RF_FLAGS: tuple[Flag, ...] = (
    Flag("node-labels", "stringToString", "labels of the nodes the flavor stands for"),
    Flag("node-taints", "stringSlice", "taints of those nodes, KEY[=VALUE]:EFFECT"),
    Flag("tolerations", "stringSlice", "tolerations added to admitted pods, KEY[=VALUE][:EFFECT] or :EFFECT"),
)


def _send(inv: Invocation, api: Client | None, strategy: str, path: str, kind: str, obj: dict[str, Any],
          out: output.Printer) -> int:
    body = encode(kind, obj)
    if strategy != "client":
        assert api is not None
        obj = api.request("POST", path, query=dry_run_query(strategy), body=body)
    out.print(with_type(obj, kind), inv.out)
    return 0


def _prepare(inv: Invocation) -> tuple[Client, str, output.Printer]:
    api = client(inv)
    strategy = dry_run_strategy(inv)
    try:
        printer = output.printer(inv, with_dry_run("created", strategy))
    except output.OutputError as exc:
        raise CommandError(str(exc)) from None
    return api, strategy, printer


def run_clusterqueue(inv: Invocation) -> int:
    name = inv.args[0]
    spec: dict[str, Any] = {
        "cohortName": inv.string("cohort"),
        "queueingStrategy": inv.string("queuing-strategy") if "queuing-strategy" in inv.changed
        else "BestEffortFIFO",
        "namespaceSelector": {"matchLabels": inv.values["namespace-selector"]}
        if "namespace-selector" in inv.changed else {},
        "preemption": {
            "reclaimWithinCohort": inv.string("reclaim-within-cohort")
            if "reclaim-within-cohort" in inv.changed else "Never",
            "withinClusterQueue": inv.string("preemption-within-cluster-queue")
            if "preemption-within-cluster-queue" in inv.changed else "Never",
        },
    }
    if inv.changed & {"nominal-quota", "borrowing-limit", "lending-limit"}:
        try:
            spec["resourceGroups"] = specs.resource_groups(
                inv.strings("nominal-quota"), inv.strings("borrowing-limit"), inv.strings("lending-limit"))
        except specs.SpecError as exc:
            raise CommandError(str(exc)) from None
    api, strategy, printer = _prepare(inv)
    if not name:
        raise CommandError("name must be specified")
    obj = with_type({"metadata": {"name": name}, "spec": spec}, "ClusterQueue")
    return _send(inv, api, strategy, f"{KUEUE_API}/clusterqueues", "ClusterQueue", obj, printer)


def run_localqueue(inv: Invocation) -> int:
    name = inv.args[0]
    namespace = current_namespace(inv)
    cluster_queue = inv.string("clusterqueue")
    api, strategy, printer = _prepare(inv)
    if not name:
        raise CommandError("name must be specified")
    if not cluster_queue:
        raise CommandError("clusterqueue must be specified")
    if not inv.boolean("ignore-unknown-cq"):
        api.get(f"{KUEUE_API}/clusterqueues/{cluster_queue}")
    obj = with_type({"metadata": {"name": name, "namespace": namespace},
                     "spec": {"clusterQueue": cluster_queue}}, "LocalQueue")
    path = f"{KUEUE_API}/namespaces/{namespace}/localqueues"
    return _send(inv, api, strategy, path, "LocalQueue", obj, printer)


def run_resourceflavor(inv: Invocation) -> int:
    name = inv.args[0]
    try:
        taints = specs.taints(inv.strings("node-taints"))
        tolerations = specs.tolerations(inv.strings("tolerations"))
    except specs.SpecError as exc:
        raise CommandError(str(exc)) from None
    api, strategy, printer = _prepare(inv)
    spec: dict[str, Any] = {"nodeLabels": inv.values["node-labels"] or None, "nodeTaints": taints or None,
                            "tolerations": tolerations or None}
    obj = with_type({"metadata": {"name": name}, "spec": spec}, "ResourceFlavor")
    return _send(inv, api, strategy, f"{KUEUE_API}/resourceflavors", "ResourceFlavor", obj, printer)


def command() -> Command:
    create = Command("create", "Create a ClusterQueue, LocalQueue or ResourceFlavor", persistent=(DRY_RUN,))
    create.add(
        Command("localqueue", "Create a LocalQueue pointing to a ClusterQueue", aliases=("lq",),
                usage="NAME -c CLUSTER_QUEUE_NAME [--ignore-unknown-cq] [--dry-run STRATEGY]",
                flags=(*output.FLAGS, *LQ_FLAGS), nargs=1, required=("clusterqueue",), run=run_localqueue),
        Command("clusterqueue", "Create a ClusterQueue", aliases=("cq",),
                usage="NAME [--cohort COHORT] [--nominal-quota FLAVOR:RESOURCE=QTY;...] [--dry-run STRATEGY]",
                flags=(*output.FLAGS, *CQ_FLAGS), nargs=1, run=run_clusterqueue),
        Command("resourceflavor", "Create a ResourceFlavor", aliases=("rf",),
                usage="NAME [--node-labels KEY=VALUE] [--node-taints KEY[=VALUE]:EFFECT] "
                      "[--dry-run STRATEGY]",
                flags=(*output.FLAGS, *RF_FLAGS), nargs=1, run=run_resourceflavor),
    )
    return create
