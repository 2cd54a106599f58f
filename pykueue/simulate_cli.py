"""``pykueue simulate``: scenario files through the core, or, with ``--cluster``, a what-if.

Without ``--cluster`` this is ``manager.simulate`` (no cluster). With it, FILE... are job
manifests (Job, PyTorchJob, LeaderWorkerSet, Workload) to submit in a what-if against the
live cluster, which is only read: each becomes its Workloads as a real submission would, and
the core predicts what they get now (``--until-admitted``: when they would be admitted).
Invalid input exits 2, an unreachable cluster 1, each with one line on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from pykueue.api.wire import JSON
from pykueue.kube.client import KubeClient
from pykueue.manager import simulate as offline
from pykueue.manager.core.config import ConfigError, parse_duration
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.scenario.cluster_snapshot import ClusterListing
from pykueue.manager.scenario.loader import ScenarioError, load
from pykueue.manager.scenario.what_if import predict, table

from .live_cluster import ClusterReadError, read_listing, with_client

EXIT_FAILED = 1
EXIT_INVALID = offline.EXIT_INVALID


def add_arguments(parser: argparse.ArgumentParser) -> None:
    offline.add_arguments(parser)
    parser.add_argument("--cluster", action="store_true",
                        help="what-if: predict what the jobs in FILE... would get on the live cluster "
                             "(nothing is written)")
    parser.add_argument("--kubeconfig", default=None, help="with --cluster: the kubeconfig file")
    parser.add_argument("--config", default=None,
                        help="with --cluster: the manager's Kueue Configuration "
                             "(default: read from the cluster)")
    parser.add_argument("--until-admitted", action="store_true",
                        help="with --cluster: run on in simulated time until the jobs are admitted")
    parser.add_argument("--assume-runtime", default="1h", metavar="DURATION",
                        help="with --until-admitted: the runtime of a workload with no deadline (default 1h)")


def _manifests(paths: list[str]) -> list[JSON]:
    into = load(paths)
    if into.steps or into.config:
        raise ScenarioError("--cluster takes job manifests, not Scenario documents")
    if not into.objects:
        raise ScenarioError("no object to submit")
    return into.objects


def main(args: argparse.Namespace) -> int:
    if not args.cluster:
        if args.until_admitted:
            print("pykueue simulate: --until-admitted needs --cluster", file=sys.stderr)
            return EXIT_INVALID
        return offline.main(args)
    try:
        assume = parse_duration(args.assume_runtime)
        submissions = _manifests(list(args.files))
    except (ConfigError, ScenarioError) as exc:
        print(f"pykueue simulate: {exc}", file=sys.stderr)
        return EXIT_INVALID

    async def work(client: KubeClient) -> ClusterListing:
        return await read_listing(client, args.config)

    try:
        listing = asyncio.run(with_client(args.kubeconfig, work))
    except ClusterReadError as exc:
        print(f"pykueue simulate: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        policy = AdmissionPolicy.from_config(listing.config)
        view = predict(listing, submissions, policy, until_admitted=args.until_admitted,
                       assume_runtime_s=assume)
    except (ScenarioError, ValueError, TypeError) as exc:
        print(f"pykueue simulate: {exc}", file=sys.stderr)
        return EXIT_INVALID
    print(json.dumps(view, indent=2) if args.json else table(view))
    return 0
