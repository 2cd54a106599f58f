"""``pykueue dev``: build, start, stop and inspect the local control plane.

``up`` prints a few ``label: value`` lines and always ends with ``kubeconfig: PATH`` so a
script can take the last line; progress goes to stderr so that stdout stays parseable.
Exit codes: 0 success, 1 failure (message on stderr), 2 usage; ``status`` exits 1 when the
cluster is not (completely) running.
"""

from __future__ import annotations

import argparse
import sys

from pykueue.devcluster import cluster, sample
from pykueue.devcluster.build import BuildError, build
from pykueue.devcluster.components import Extender
from pykueue.devcluster.conformance import harness as conformance_harness
from pykueue.devcluster.health import StartupError
from pykueue.kube.client import ApiError


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="dev_command", metavar="{up,down,status,build,sample,conformance}",
                                required=True)
    up = sub.add_parser("up", help="start the dev cluster, or reuse and repair a running one")
    up.add_argument("--extender-url", metavar="URL",
                    help="wire this scheduler extender (filter/prioritize/bind) into kube-scheduler")
    up.add_argument("--extender-ca-file", metavar="FILE", help="CA bundle for an https extender")
    up.add_argument("--autoscaler", action="store_true",
                    help="also run the cluster autoscaler (kwok provider), which serves ProvisioningRequests "
                         "by adding GPU nodes; later `dev up` runs keep it")
    up.add_argument("--workers", type=int, default=None, metavar="N",
                    help="also run N worker control planes for MultiKueue (kept by later `up`s, "
                         "stopped by `down`); each one's kubeconfig is stored in Secret "
                         "pykueue-system/pykueue-dev-worker-<i>")
    sub.add_parser("down", help="stop everything `up` started and remove its state")
    sub.add_parser("status", help="show the components of the dev cluster")
    sample_parser = sub.add_parser("sample", help="on the running dev cluster: set up a quota and run three "
                                   "Jobs through it, showing admission, queueing and completion")
    sample_parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                               help="give up when the Jobs have not all completed after this long")
    conformance = sub.add_parser("conformance", help="run real Kueue and pykueue's core on the same "
                                 "scenario files and report where they differ")
    conformance.add_argument("files", nargs="+", metavar="FILE",
                             help="scenario YAML files, one scenario each")
    conformance.add_argument("--kueue-version", metavar="V",
                             help="Kueue release to build and run (default: the pinned one in go/kueue)")
    conformance.add_argument("--json", action="store_true", help="one JSON object per scenario line")
    b = sub.add_parser("build", help="build the control-plane binaries (once per pinned version)")
    b.add_argument("--force", action="store_true", help="rebuild binaries that already exist")
    b.add_argument("--only", nargs="+", default=(), metavar="NAME",
                   help="build only these binaries (etcd, kwok, kube-apiserver, ...)")


def main(args: argparse.Namespace) -> int:
    try:
        if args.dev_command == "build":
            build(force=args.force, only=tuple(args.only), report=_progress)
            return 0
        if args.dev_command == "up":
            return _up(args)
        if args.dev_command == "down":
            stopped = cluster.down(report=_progress)
            print(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}")
            return 0
        if args.dev_command == "status":
            return _status()
        if args.dev_command == "sample":
            return _sample(args.timeout)
        if args.dev_command == "conformance":
            return conformance_harness.main(list(args.files), args.kueue_version, args.json)
    except (BuildError, StartupError, ApiError, OSError, TimeoutError) as exc:
        print(f"pykueue dev {args.dev_command}: {exc}", file=sys.stderr)
        return 1
    print(f"pykueue dev: unknown command {args.dev_command}", file=sys.stderr)
    return 2


def _up(args: argparse.Namespace) -> int:
    extender = None
    if args.extender_url:
        extender = Extender(args.extender_url, ca_file=args.extender_ca_file)
    if args.workers is not None and args.workers < 0:
        print("pykueue dev up: --workers must be 0 or more", file=sys.stderr)
        return 2
    result = cluster.up(extender=extender, report=_progress, workers_wanted=args.workers,
                        with_autoscaler=args.autoscaler)
    _progress(f"dev cluster {'reused' if result.reused else 'started'} in {result.seconds:.1f}s")
    print(f"server: {result.server}")
    for line in result.endpoints.lines():
        print(line)
    for operator in result.operators:
        print(operator.line())
    for worker in result.workers:
        print(worker.line())
    print(f"kubeconfig: {result.kubeconfig}")
    return 0


def _sample(timeout_s: float) -> int:
    state = cluster.current_state()
    if state is None:
        print("pykueue dev sample: the dev cluster is not running; start it with `pykueue dev up`",
              file=sys.stderr)
        return 1
    lay = cluster.layout()
    outcome = sample.run(cluster.admin_client(lay, state.ports), deadline_s=timeout_s)
    if not outcome.completed:
        print(f"pykueue dev sample: the Jobs did not all complete within {timeout_s:.0f}s; "
              f"see `pykueue dev status` and the logs it lists", file=sys.stderr)
        return 1
    for line in sample.next_steps(str(lay.admin_kubeconfig)):
        print(line)
    return 0


def _status() -> int:
    report = cluster.status()
    if report.server is None:
        print("dev cluster: not running")
        return 1
    print(f"dev cluster: {'running' if report.up else 'degraded'}")
    print(f"server: {report.server}")
    _print_components(report)
    for worker in report.workers:
        print(f"{worker.name}: {'running' if worker.up else 'degraded'}, server {worker.server}, "
              f"kubeconfig {worker.kubeconfig}")
        _print_components(worker)
    print(f"kubeconfig: {report.kubeconfig}")
    return 0 if report.up else 1


def _print_components(report: cluster.StatusReport) -> None:
    for component in report.components:
        state = "running" if component.running else "NOT RUNNING"
        print(f"  {component.name:<24} pid {component.pid:<8} {state}  log {component.log}")
