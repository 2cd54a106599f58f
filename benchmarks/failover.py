"""Time to failover: the leading pykueue replica is SIGKILLed, how long until the other one
holds the Lease and admits a new Job.

Two replicas of the dev cluster's pykueue run with leader election on, as an install runs
them (``devcluster.replicas``: the dev cluster's own pykueue is stopped, its webhook and
other service addresses forwarded to whichever replica is ready, and it comes back with
``pykueue dev up`` at the end). Each round waits until both replicas are ready and one
leads, SIGKILLs the leader, creates a Job at once (its admission webhook is answered by the
survivor) and times from the kill until

* ``lease``: the survivor holds the Lease;
* ``admit``: the Job's Workload is ``Admitted`` (the survivor's job reconciler made it and
  its scheduler admitted it: both run only on the leader);

then starts the killed replica again. A killed leader cannot release its Lease, so the
survivor waits out the Lease duration (15 s, counted on its own clock from the last change
it saw of the Lease) and up to one retry period (2 s, jittered to 2.4 s): ``lease`` cannot be
much below 15 s by design. The medians of the rounds are ``lease_median_s`` and
``admit_median_s``. Last line: the JSON contract of ``benchmarks``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.dev_lock import DevClusterUnavailable, holding_dev_cluster
from pykueue.api import keys

NAME = "failover-bench"
LEASE_DURATION_S = 15.0
ROUND_DEADLINE_S = 90.0
_POLL_S = 0.05


def _log(message: str) -> None:
    print(f"failover {time.strftime('%H:%M:%S')}: {message}", file=sys.stderr, flush=True)


def job(index: int) -> dict[str, Any]:
    """A one-pod Job of a tenth of a CPU, done a second after it starts."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"after-kill-{index}", "namespace": NAME, "labels": {keys.QUEUE_NAME: NAME}},
            "spec": {"template": {
                "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "1s"}},
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]}}}}


def queue_objects() -> list[tuple[str, dict[str, Any]]]:
    """(path, object) of the namespace, flavor, ClusterQueue and LocalQueue the Jobs use."""
    api = f"/apis/{keys.API_VERSION}"
    return [
        (f"/api/v1/namespaces/{NAME}", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAME}}),
        (f"{api}/resourceflavors/{NAME}", {"apiVersion": keys.API_VERSION, "kind": "ResourceFlavor",
                                           "metadata": {"name": NAME}}),
        (f"{api}/clusterqueues/{NAME}", {
            "apiVersion": keys.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": NAME},
            "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NAME}},
                     "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                         {"name": NAME, "resources": [{"name": "cpu", "nominalQuota": "10"}]}]}]}}),
        (f"{api}/namespaces/{NAME}/localqueues/{NAME}", {
            "apiVersion": keys.API_VERSION, "kind": "LocalQueue",
            "metadata": {"name": NAME, "namespace": NAME}, "spec": {"clusterQueue": NAME}}),
    ]


def summarize(lease_s: list[float], admit_s: list[float]) -> dict[str, Any]:
    return {"rounds": len(lease_s), "lease_duration_s": LEASE_DURATION_S,
            "lease_median_s": round(statistics.median(lease_s), 2),
            "admit_median_s": round(statistics.median(admit_s), 2),
            "lease_max_s": round(max(lease_s), 2), "admit_max_s": round(max(admit_s), 2),
            "lease_s": [round(s, 2) for s in lease_s], "admit_s": [round(s, 2) for s in admit_s]}


def _until(what: str, check: Callable[[], bool], since: float) -> float:
    """Seconds from ``since`` until ``check`` holds (polled every 50 ms)."""
    while not check():
        if time.monotonic() - since > ROUND_DEADLINE_S:
            raise TimeoutError(f"no {what} {ROUND_DEADLINE_S:.0f}s after the kill")
        time.sleep(_POLL_S)
    return time.monotonic() - since


def _admitted(client: Any, name: str) -> bool:
    try:
        items = client.get(f"/apis/{keys.API_VERSION}/namespaces/{NAME}/workloads").get("items") or ()
    except Exception:  # the API busy or a read refused: not yet
        return False
    for wl in items:
        owners = [r.get("name") for r in wl["metadata"].get("ownerReferences") or ()]
        conditions = (wl.get("status") or {}).get("conditions") or ()
        if name in owners and any(c.get("type") == "Admitted" and c.get("status") == "True"
                                  for c in conditions):
            return True
    return False


def measure(rounds: int, work_dir: Path) -> dict[str, Any]:
    from pykueue.devcluster import cluster
    from pykueue.devcluster.replicas import Replicas

    cluster.up(report=_log)
    state = cluster.current_state()
    assert state is not None
    client = cluster.admin_client(cluster.layout(), state.ports)
    replicas = Replicas(2, work_dir, report=_log)
    lease_s: list[float] = []
    admit_s: list[float] = []
    try:
        replicas.take_over()
        for path, obj in queue_objects():
            client.apply(path, obj)
        for index in range(rounds):
            for replica in replicas.replicas:
                replicas.wait_ready(replica)
            leader = _until_leader(replicas)
            [survivor] = [r for r in replicas.replicas if r is not leader]
            killed_at = time.monotonic()
            leader.stop(signal.SIGKILL)
            body = job(index)
            client.request("POST", f"/apis/batch/v1/namespaces/{NAME}/jobs", body=body)
            lease_s.append(_until("new Lease holder", lambda s=survivor: replicas.leader() is s, killed_at))
            name = body["metadata"]["name"]
            admit_s.append(_until("admission", lambda n=name: _admitted(client, n), killed_at))
            _log(f"round {index + 1}: {leader.name} killed; {survivor.name} leads after {lease_s[-1]:.1f}s, "
                 f"admits after {admit_s[-1]:.1f}s")
            leader.start()
        return summarize(lease_s, admit_s)
    finally:
        for path, _ in reversed(queue_objects()):
            with contextlib.suppress(Exception):
                client.request("DELETE", path)
        client.close()
        replicas.restore()


def _until_leader(replicas: Any) -> Any:
    started = time.monotonic()
    while (leader := replicas.leader()) is None:
        if time.monotonic() - started > ROUND_DEADLINE_S:
            raise TimeoutError("no replica holds the Lease")
        time.sleep(0.2)
    return leader


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.failover",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 10")
    parser.add_argument("--rounds", type=int, default=None, help="kills to time (default 10)")
    args = parser.parse_args(argv)
    rounds = args.rounds if args.rounds is not None else 3 if args.quick else 10
    if rounds < 1:
        parser.error("--rounds must be at least 1")
    try:
        with holding_dev_cluster("failover"), tempfile.TemporaryDirectory(prefix="failover-") as work:
            metrics = measure(rounds, Path(work))
    except DevClusterUnavailable as exc:
        print(f"failover: {exc}", file=sys.stderr)
        return 1
    env = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
           "system": platform.system()}
    print(json.dumps({"benchmark": "failover", "metrics": metrics, "env": env}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
