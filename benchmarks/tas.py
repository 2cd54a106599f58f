"""TAS placement throughput on Kueue's TAS performance shape.

640 nodes (1 block x 10 racks x 64 hosts, 96 cpu / 256Gi / 110 pods each) and 15,000
workloads generated like Kueue's ``configs/tas`` scheduler-perf run: 30 ClusterQueues each
emitting small (2 pods x 500m, every 100 ms, 200 ms runtime), medium (4 x 1250m, 500 ms,
500 ms) and large (8 x 2500m, 1200 ms, 1000 ms) workloads, every class split evenly into
rack-required, rack-preferred and "balanced" (rack slices of 1/2/4 pods) requests.

Workloads are placed one after another on one TopologySnapshot with usage accounting and
simulated time: running workloads finish when their runtime has elapsed, and when a
workload does not fit, the oldest running ones finish early until it does. With ``--fill``
runtimes are ignored, so the cluster fills up and only "finish the oldest" frees room
(Kueue's real run is bounded by quota instead, which this core benchmark leaves out).
The snapshot is built once; placements only touch per-leaf free capacity.

``python -m benchmarks.tas [--quick]``; the last line printed is the JSON result.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import resource
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from pykueue.api import keys
from pykueue.manager.core.tas import PodSetRequest, TopologyAssignment, TopologySnapshot

BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
NODE_GROUP = "tas-node-group"

# class: (pods, cpu per pod, interval ms, runtime ms, per-CQ count, slice size)
CLASSES = {
    "small": (2, "500m", 100, 200, 350, 1),
    "medium": (4, "1250m", 500, 500, 100, 2),
    "large": (8, "2500m", 1200, 1000, 50, 4),
}
QUEUES = 30


def build_snapshot(racks: int, hosts_per_rack: int) -> TopologySnapshot:
    topology = {
        "metadata": {"name": "default"},
        "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": keys.HOSTNAME_LABEL}]},
    }
    flavor = {
        "metadata": {"name": "tas-flavor"},
        "spec": {"topologyName": "default", "nodeLabels": {NODE_GROUP: "tas"}},
    }
    nodes = []
    for r in range(racks):
        for h in range(hosts_per_rack):
            name = f"b0-r{r}-n{h}"
            nodes.append(
                {
                    "metadata": {
                        "name": name,
                        "labels": {NODE_GROUP: "tas", BLOCK: "b0", RACK: f"r{r}", keys.HOSTNAME_LABEL: name},
                    },
                    "status": {
                        "allocatable": {"cpu": "96", "memory": "256Gi", "pods": "110"},
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                }
            )
    return TopologySnapshot.build(topology, flavor, nodes)


@dataclass(frozen=True)
class Arrival:
    at_ms: int
    runtime_ms: int
    request: PodSetRequest
    kind: str


def request_for(cls: str, variant: int) -> tuple[PodSetRequest, str]:
    pods, cpu, _, _, _, slice_size = CLASSES[cls]
    if variant == 0:
        ann, kind = {keys.PODSET_REQUIRED_TOPOLOGY: RACK}, "required"
    elif variant == 1:
        ann, kind = {keys.PODSET_PREFERRED_TOPOLOGY: RACK}, "preferred"
    else:
        ann = {keys.PODSET_SLICE_REQUIRED_TOPOLOGY: RACK, keys.PODSET_SLICE_SIZE: str(slice_size)}
        kind = "balanced"
    podset = {
        "name": "main",
        "count": pods,
        "template": {
            "metadata": {"annotations": ann},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        },
    }
    return PodSetRequest.from_podset(podset), kind


def generate(scale: float) -> list[Arrival]:
    arrivals: list[Arrival] = []
    for cls, (_, _, interval, runtime, per_queue, _) in CLASSES.items():
        requests = [request_for(cls, v) for v in range(3)]
        n = max(1, round(per_queue * scale))
        for _ in range(QUEUES):
            for k in range(n):
                req, kind = requests[k % 3]
                arrivals.append(Arrival(k * interval, runtime, req, kind))
    arrivals.sort(key=lambda a: a.at_ms)
    return arrivals


def run(scale: float, racks: int, hosts: int, fill: bool = False) -> dict[str, Any]:
    snap = build_snapshot(racks, hosts)
    arrivals = generate(scale)
    running: list[tuple[int, int, TopologyAssignment, PodSetRequest]] = []  # heap by end time
    order: deque[tuple[int, int]] = deque()  # (seq, end) in admission order, for "finish oldest"
    finished: set[int] = set()
    seq = 0
    now = 0
    placements = forced_finishes = 0
    by_kind: dict[str, int] = {}
    started = time.perf_counter()

    def finish(entry: tuple[int, int, TopologyAssignment, PodSetRequest]) -> None:
        snap.remove_usage(entry[2], entry[3].per_pod)
        finished.add(entry[1])

    for arrival in arrivals:
        now = max(now, arrival.at_ms)
        while not fill and running and running[0][0] <= now:
            finish(heapq.heappop(running))
        while True:
            result = snap.place([arrival.request])
            placements += 1
            if result:
                ta = result.assignments["main"]
                snap.add_usage(ta, arrival.request.per_pod)
                heapq.heappush(running, (now + arrival.runtime_ms, seq, ta, arrival.request))
                order.append((seq, now + arrival.runtime_ms))
                seq += 1
                by_kind[arrival.kind] = by_kind.get(arrival.kind, 0) + 1
                break
            # Full: the oldest running workload finishes (simulated time jumps to its end).
            while order and order[0][0] in finished:
                order.popleft()
            if not running:
                raise RuntimeError(f"workload can never fit: {result}")
            oldest_seq, end = order.popleft()
            now = max(now, end)
            for i, entry in enumerate(running):
                if entry[1] == oldest_seq:
                    running[i] = running[-1]
                    running.pop()
                    heapq.heapify(running)
                    finish(entry)
                    forced_finishes += 1
                    break
    wall = time.perf_counter() - started
    used = sum(1 for leaf in snap.leaves() if leaf.free.get("cpu", 0) < leaf.allocatable.get("cpu", 0))
    return {
        "placements_per_s": round(placements / wall, 1),
        "wall_s": round(wall, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "workloads": len(arrivals),
        "placements": placements,
        "admitted_by_kind": by_kind,
        "forced_finishes": forced_finishes,
        "simulated_s": round(now / 1000, 1),
        "nodes_in_use_at_end": used,
        "mode": "fill" if fill else "runtime",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a fifth of the workloads (well under 30 s)")
    parser.add_argument(
        "--fill",
        action="store_true",
        help="ignore runtimes: workloads run until the cluster is full, then the oldest finish",
    )
    args = parser.parse_args(argv)
    racks, hosts = 10, 64
    scale = 0.2 if args.quick else 1.0
    metrics = run(scale, racks, hosts, fill=args.fill)
    print(
        f"placed {metrics['placements']} times for {metrics['workloads']} workloads on "
        f"{racks * hosts} nodes in {metrics['wall_s']} s",
        file=sys.stderr,
    )
    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "nodes": racks * hosts,
        "quick": args.quick,
    }
    print(json.dumps({"benchmark": "tas", "metrics": metrics, "env": env}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
