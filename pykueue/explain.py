"""``pykueue explain -n NS KIND/NAME [--kubeconfig F] [--config F] [--json]``: why it waits.

KIND is ``workload`` or a registered job kind (``job``, ``pytorchjobs``, ``lws``...); a job is
explained through the Workloads it owns. The cluster is only read (see ``live_cluster``);
the answer comes from the scheduling core run over that snapshot
(``manager.scenario.explain``). A missing object or an unreachable cluster is one line on
stderr and exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from pykueue.api.wire import JSON
from pykueue.kube import resources as res
from pykueue.kube.client import ApiError, KubeClient
from pykueue.manager.jobs.registry import by_cli_name, kinds
from pykueue.manager.runtime.job_resources import resource_of
from pykueue.manager.scenario.cluster_snapshot import ClusterListing
from pykueue.manager.scenario.explain import explain, text
from pykueue.manager.scenario.loader import ScenarioError

from .live_cluster import ClusterReadError, read_listing, with_client

EXIT_FAILED = 1
WORKLOAD_KINDS = ("workload", "workloads", "wl")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="KIND/NAME",
                        help=f"workload/NAME or a job's KIND/NAME, KIND one of {', '.join(_job_kinds())}")
    parser.add_argument("-n", "--namespace", default="default", help="the object's namespace")
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig file (default: the usual lookup)")
    parser.add_argument("--config", default=None,
                        help="the manager's Kueue Configuration file (default: read from the cluster)")
    parser.add_argument("--json", action="store_true", help="print the explanation as JSON")


def _job_kinds() -> list[str]:
    return [k.integration.kind.lower() for k in kinds() if k.to_workloads is not None]


def _parse_target(target: str) -> tuple[str, str]:
    kind, sep, name = target.partition("/")
    kind = kind.lower().split(".", 1)[0]
    if not sep or not name or (by_cli_name(kind) is None and kind not in WORKLOAD_KINDS):
        raise ClusterReadError(f"expected workload/NAME or {'|'.join(_job_kinds())}/NAME, got {target!r}")
    return kind, name


def _owned_by(listing: ClusterListing, namespace: str, kind: str, name: str, uid: str) -> list[str]:
    found = []
    for wl in listing.items.get("Workload") or ():
        meta = wl.get("metadata") or {}
        if meta.get("namespace") != namespace:
            continue
        for ref in meta.get("ownerReferences") or ():
            if ref.get("kind") == kind and ref.get("name") == name and (not uid or ref.get("uid") == uid):
                found.append(f"{namespace}/{meta.get('name')}")
                break
    return sorted(found)


async def _read(client: KubeClient, kind: str, name: str, namespace: str,
                config: str | None) -> tuple[ClusterListing, list[str]]:
    job_kind = by_cli_name(kind)
    ref = resource_of(job_kind.integration) if job_kind is not None else res.WORKLOADS
    try:
        obj: JSON = await client.get(ref.object_path(name, namespace))
    except ApiError as exc:
        if exc.not_found:
            raise ClusterReadError(f"{ref.kind} {namespace}/{name} not found") from exc
        raise
    listing = await read_listing(client, config)
    if ref is res.WORKLOADS:
        return listing, [f"{namespace}/{name}"]
    keys = _owned_by(listing, namespace, ref.kind, name, str((obj.get("metadata") or {}).get("uid") or ""))
    if not keys:
        raise ClusterReadError(f"{ref.kind} {namespace}/{name} has no Workload (not managed by pykueue, "
                               "or not reconciled yet)")
    return listing, keys


def main(args: argparse.Namespace) -> int:
    try:
        kind, name = _parse_target(str(args.target))

        async def work(client: KubeClient) -> tuple[ClusterListing, list[str]]:
            return await _read(client, kind, name, str(args.namespace), args.config)

        listing, keys = asyncio.run(with_client(args.kubeconfig, work))
        entries: list[dict[str, Any]] = explain(listing, keys)
    except ClusterReadError as exc:
        print(f"pykueue explain: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except ScenarioError as exc:
        print(f"pykueue explain: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyError as exc:
        print(f"pykueue explain: Workload {exc.args[0]} is not known to the core", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print(json.dumps(entries[0] if len(entries) == 1 else entries, indent=2))
    else:
        print("\n\n".join(text(e) for e in entries))
    return 0
