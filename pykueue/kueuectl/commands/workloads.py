"""``list workload``: Workloads with their job, queues, status, queue position and run time.

Per page, as kueuectl: the LocalQueue of each unadmitted Workload is read to name its
ClusterQueue, the visibility API gives pending Workloads their position, and discovery of
each owner's API version gives the job type. ``--for KIND/NAME`` keeps the Workloads of one
job (by its UID label, else by owner reference).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pykueue.kueuectl.ages import age, human_duration, parse_time
from pykueue.kueuectl.cli import Command, Flag, Invocation
from pykueue.kueuectl.commands import targets
from pykueue.kueuectl.commands.common import (
    ALL_NAMESPACES,
    FIELD_SELECTOR,
    KUEUE_API,
    LABEL_SELECTOR,
    VISIBILITY_API,
    CommandError,
    client,
    current_namespace,
    list_query,
    list_request_limit,
    now,
)
from pykueue.kueuectl.commands.listing import PageWriter, condition_true, no_resources
from pykueue.kueuectl.discovery import Mapper
from pykueue.kueuectl.printers import output
from pykueue.kueuectl.printers.table import Column, Table
from pykueue.kueuectl.transport import ApiError, Client

JSON = dict[str, Any]
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
JOB_TYPE_MAX = 20
STATUSES = ("all", "pending", "quotareserved", "admitted", "finished")


def status(wl: JSON) -> str:
    """Kueue's workload status: finished, admitted, quotaReserved or pending."""
    if condition_true(wl, "Finished"):
        return "finished"
    if condition_true(wl, "Admitted"):
        return "admitted"
    if condition_true(wl, "QuotaReserved"):
        return "quotaReserved"
    return "pending"


def _admitted_cq(wl: JSON) -> str:
    return str(((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")


def _queue_key(wl: JSON) -> str:
    return f"{wl['metadata'].get('namespace', '')}/{(wl.get('spec') or {}).get('queueName', '')}"


def _condition(wl: JSON, kind: str) -> JSON | None:
    for condition in (wl.get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind:
            return dict(condition)
    return None


@dataclass
class Lookups:
    """What a page's table needs beyond the Workloads themselves."""

    local_queues: dict[str, JSON | None] = field(default_factory=dict)
    positions: dict[tuple[str, str], int] = field(default_factory=dict)
    api_resources: dict[str, JSON | None] = field(default_factory=dict)

    def cluster_queue(self, wl: JSON) -> str:
        name = _admitted_cq(wl)
        if name:
            return name
        lq = self.local_queues.get(_queue_key(wl))
        return str((lq.get("spec") or {}).get("clusterQueue") or "") if lq else ""

    def job_types(self, wl: JSON) -> list[str]:
        types: list[str] = []
        for ref in wl["metadata"].get("ownerReferences") or ():
            listing = self.api_resources.get(str(ref.get("apiVersion", "")))
            for resource in (listing or {}).get("resources") or ():
                if resource.get("kind") == ref.get("kind") and resource.get("singularName"):
                    text = ".".join(p for p in (resource["singularName"], resource.get("group", "")) if p)
                    if len(text) > JOB_TYPE_MAX:
                        text = text[:JOB_TYPE_MAX] + "..."
                    if text not in types:
                        types.append(text)
                    break
        return types


def _ignore_not_found(call: Any) -> JSON | None:
    try:
        result: JSON = call()
        return result
    except ApiError as exc:
        if exc.not_found:
            return None
        raise


def lookups(api: Client, items: list[JSON]) -> Lookups:
    found = Lookups()
    for wl in items:
        if _admitted_cq(wl) or _queue_key(wl) in found.local_queues:
            continue
        namespace = wl["metadata"].get("namespace", "")
        queue = (wl.get("spec") or {}).get("queueName", "")
        found.local_queues[_queue_key(wl)] = _ignore_not_found(
            lambda ns=namespace, q=queue: api.get(f"{KUEUE_API}/namespaces/{ns}/localqueues/{q}"))
    summaries: dict[str, JSON | None] = {}
    for wl in items:
        if status(wl) != "pending":
            continue
        cq = found.cluster_queue(wl)
        if not cq:
            continue
        if cq not in summaries:
            summaries[cq] = _ignore_not_found(
                lambda name=cq: api.get(f"{VISIBILITY_API}/clusterqueues/{name}/pendingworkloads"))
        for pending in (summaries[cq] or {}).get("items") or ():
            meta = pending.get("metadata") or {}
            if meta.get("name") == wl["metadata"].get("name") and meta.get("namespace") == wl["metadata"].get(
                    "namespace"):
                key = (wl["metadata"].get("namespace", ""), wl["metadata"].get("name", ""))
                found.positions[key] = int(pending.get("positionInLocalQueue") or 0)
    for wl in items:
        for ref in wl["metadata"].get("ownerReferences") or ():
            version = str(ref.get("apiVersion", ""))
            if version not in found.api_resources:
                path = f"/apis/{version}" if "/" in version else f"/api/{version}"
                found.api_resources[version] = _ignore_not_found(lambda p=path: api.get(p))
    return found


def workload_table(page: JSON, found: Lookups) -> Table:
    moment = now()
    rows = []
    for wl in page["items"]:
        key = (wl["metadata"].get("namespace", ""), wl["metadata"].get("name", ""))
        position = str(found.positions[key]) if key in found.positions else ""
        exec_time = ""
        admitted = _condition(wl, "Admitted")
        if admitted and admitted.get("status") == "True":
            end = moment
            finished = _condition(wl, "Finished")
            if finished and finished.get("status") == "True":
                end = parse_time(finished.get("lastTransitionTime")) or end
            start = parse_time(admitted.get("lastTransitionTime"))
            exec_time = human_duration((end - start).total_seconds()) if start else ""
        names: list[str] = []
        for ref in wl["metadata"].get("ownerReferences") or ():
            if ref.get("name", "") not in names:
                names.append(str(ref.get("name", "")))
        rows.append([
            wl["metadata"].get("name", ""), ", ".join(found.job_types(wl)), ", ".join(names),
            (wl.get("spec") or {}).get("queueName", ""), found.cluster_queue(wl), status(wl).upper(),
            position,
            exec_time, age(wl["metadata"].get("creationTimestamp"), moment),
        ])
    return Table([Column(n) for n in ("Name", "Job Type", "Job Name", "LocalQueue", "ClusterQueue", "Status",
                                       "Position in Queue", "Exec Time", "Age")], rows,
                 [wl["metadata"].get("namespace", "") for wl in page["items"]])


def _statuses(inv: Invocation) -> set[str]:
    chosen: set[str] = set()
    for value in inv.strings("status"):
        lowered = value.lower()
        if lowered not in STATUSES:
            raise CommandError(f'invalid status value ({value}). '
                               'Must be "all", "pending", "admitted" or "finished"')
        chosen.add(lowered)
    return chosen


def run(inv: Invocation) -> int:
    limit = list_request_limit()
    namespace = current_namespace(inv)
    all_namespaces = inv.boolean("all-namespaces")
    statuses = _statuses(inv)
    api = client(inv)
    job: JSON | None = None
    if inv.string("for"):
        target = targets.decode(Mapper(api), inv.string("for"))
        if target is None:
            raise CommandError("--for must be in resource/name form")
        job = targets.fetch(api, target, namespace, all_namespaces)
        if job is None:
            # kueuectl says so, then lists as if --for were not given.
            no_resources(inv, all_namespaces, namespace)

    lq_filter, cq_filter = inv.string("localqueue"), inv.string("clusterqueue")
    selector = inv.string("selector")
    uid_selector = ""
    uid = ""
    if job is not None:
        uid = str(job["metadata"].get("uid", ""))
        uid_selector = ("," if selector else "") + f"{JOB_UID_LABEL}={uid}"
    by_owner = False

    def keep(wl: JSON) -> bool:
        if lq_filter and (wl.get("spec") or {}).get("queueName") != lq_filter:
            return False
        if cq_filter and _admitted_cq(wl) != cq_filter:
            return False
        if statuses and "all" not in statuses and status(wl).lower() not in statuses:
            return False
        owners = wl["metadata"].get("ownerReferences") or ()
        return not by_owner or any(ref.get("uid") == uid for ref in owners)

    path = f"{KUEUE_API}/workloads" if all_namespaces else f"{KUEUE_API}/namespaces/{namespace}/workloads"
    query = list_query(selector + uid_selector, inv.string("field-selector"), limit)
    found = Lookups()
    writer = PageWriter(inv, "WorkloadList", lambda page: workload_table(page, found),
                        with_namespace=all_namespaces)
    while True:
        page = api.get(path, query)
        token = (page.get("metadata") or {}).get("continue")
        if job is not None and not page.get("items") and not token and uid_selector and \
                uid_selector in query.get("labelSelector", ""):
            # No Workload carries the job's UID label: match owner references instead.
            query = list_query(selector, inv.string("field-selector"), limit)
            by_owner = True
            continue
        items = [wl for wl in page.get("items") or () if keep(wl)]
        found = lookups(api, items)
        writer.page(page, items)
        if token:
            query["continue"] = token
            continue
        break
    if writer.total == 0:
        no_resources(inv, all_namespaces, namespace)
        return 0
    writer.flush()
    return 0


def command() -> Command:
    return Command(
        "workload", "List Workloads with their job, queues, status and position",
        aliases=("kwl", "kueueworkload", "kueueworkloads"),
        usage="[--clusterqueue NAME] [--localqueue NAME] [--status STATUS] [--selector KEY=VALUE] "
              "[--field-selector FIELD=VALUE] [--all-namespaces] [--for TYPE[.API-GROUP]/NAME]",
        flags=(*output.FLAGS, ALL_NAMESPACES, FIELD_SELECTOR, LABEL_SELECTOR,
               Flag("clusterqueue", "string", "only Workloads admitted by this ClusterQueue", short="c"),
               Flag("localqueue", "string", "only Workloads of this LocalQueue", short="q"),
               Flag("for", "string", "only the Workloads of this job, TYPE[.API-GROUP]/NAME"),
               Flag("status", "stringArray", 'only Workloads in this status: "all", "pending", "admitted" or '
                    '"finished" (repeatable)')),
        run=run)
