"""The floor of a ``kueue_perf`` run: a stand-in manager that admits every workload on sight.

It keeps no quota, no queues and no ClusterQueue status: each Workload it sees without a
quota reservation gets one merge patch of its status subresource (the admission and the
QuotaReserved and Admitted conditions), written by as many writers as pykueue's manager
has, through the same client and token bucket. That is the least any manager must send
per workload, so the run's wall time with it is what this cluster and machine need for
the generator's creates, the admissions and the runner's finishes alone: no manager that
respects quota finishes sooner on the same machine. ``kueue_perf --floor`` runs it.

The generator names each workload's LocalQueue, its namespace and its ClusterQueue alike,
so the admission's ClusterQueue is the workload's ``queueName``. Topology requests are not
placed (the TAS config is refused by ``kueue_perf``).

Ready when the first list of Workloads is in (a line ``floor: ready`` in its output); on
SIGTERM or SIGINT it logs the same ``shutting down: N API requests ...`` line as pykueue's
manager, which ``kueue_perf_managers`` reads.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
import time
from typing import Any

from pykueue.api.keys import WorkloadCondition
from pykueue.api.quantity import parse_quantity, resource_quantity, resource_value
from pykueue.kube import resources as res
from pykueue.kube.client import ApiError, KubeClient, connect
from pykueue.kube.informer import EventType, Informer
from pykueue.manager.core.objects import format_time
from pykueue.manager.jobs.lifecycle import condition_true
from pykueue.manager.runtime.controllers.manager import STATUS_WRITERS

log = logging.getLogger("kueue_perf_floor")
READY_LINE = "floor: ready"


def _holds_or_done(obj: dict[str, Any]) -> bool:
    return condition_true(obj, WorkloadCondition.QUOTA_RESERVED) or \
        condition_true(obj, WorkloadCondition.FINISHED)


def admission_patch(obj: dict[str, Any], flavor: str, now: float) -> dict[str, Any]:
    """The status merge patch that admits ``obj`` to its queue's ClusterQueue on ``flavor``."""
    spec = obj.get("spec") or {}
    cq = str(spec.get("queueName") or "")
    stamp = format_time(now)
    assignments = []
    for ps in spec.get("podSets") or ():
        count = int(ps.get("count") or 1)
        usage: dict[str, int] = {}
        for container in ((ps.get("template") or {}).get("spec") or {}).get("containers") or ():
            for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
                usage[name] = usage.get(name, 0) + count * resource_value(name, parse_quantity(value))
        assignments.append({"name": ps.get("name", "main"), "count": count,
                            "flavors": dict.fromkeys(usage, flavor),
                            "resourceUsage": {k: str(resource_quantity(k, v)) for k, v in usage.items()}})
    return {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
            "status": {"admission": {"clusterQueue": cq, "podSetAssignments": assignments},
                       "conditions": [
                           {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                            "message": f"Quota reserved in ClusterQueue {cq}", "lastTransitionTime": stamp},
                           {"type": "Admitted", "status": "True", "reason": "Admitted",
                            "message": "The workload is admitted", "lastTransitionTime": stamp}]}}


class Floor:
    """Admit on sight: the informer queues keys, the writers patch them."""

    def __init__(self, client: KubeClient, flavor: str, writers: int = STATUS_WRITERS) -> None:
        self.client, self.flavor, self.writers = client, flavor, writers
        self.informer = Informer(client, res.WORKLOADS)
        self.informer.add_handler(self._on_workload)
        self.todo: asyncio.Queue[str] = asyncio.Queue()
        self.queued: set[str] = set()
        self.admitted = 0
        self.failed = 0

    def _on_workload(self, event: EventType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event == EventType.DELETED or _holds_or_done(obj):
            return
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if key not in self.queued:  # an eviction's release comes back here too
            self.queued.add(key)
            self.todo.put_nowait(key)

    async def _write(self) -> None:
        while True:
            key = await self.todo.get()
            self.queued.discard(key)
            obj = self.informer.get(key)
            if obj is None or _holds_or_done(obj):
                continue
            ns, name = key.split("/", 1)
            try:
                await self.client.patch(res.WORKLOADS.object_path(name, ns, "status"),
                                        admission_patch(obj, self.flavor, time.time()))
                self.admitted += 1
            except ApiError as exc:
                # A stale copy (409) comes back through the watch with the new version.
                if not (exc.conflict or exc.not_found):
                    self.failed += 1
                    log.warning("could not admit %s: %s", key, exc)

    async def run(self, stop: asyncio.Event) -> None:
        self.informer.start()
        await self.informer.wait_synced(60.0)
        print(READY_LINE, flush=True)
        tasks = [asyncio.create_task(self._write()) for _ in range(self.writers)]
        try:
            await stop.wait()
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await self.informer.stop()


async def _main(args: argparse.Namespace) -> None:
    client = await connect(args.kubeconfig, qps=args.qps, burst=args.burst)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    floor = Floor(client, args.flavor, args.writers)
    try:
        await floor.run(stop)
    finally:
        log.info("admitted %d, failed %d", floor.admitted, floor.failed)
        log.info("shutting down: %s", client.request_summary())
        await client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kueue_perf_floor",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--flavor", required=True, help="the ResourceFlavor every admission names")
    parser.add_argument("--qps", type=float, required=True)
    parser.add_argument("--burst", type=int, required=True)
    parser.add_argument("--writers", type=int, default=STATUS_WRITERS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    asyncio.run(_main(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
