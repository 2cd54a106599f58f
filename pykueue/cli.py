"""The ``pykueue`` command line.

Each subcommand lives in the package that owns the behaviour (``manager.simulate``,
``certs.cli``, ``devcluster.cli`` ...). A command module exposes two functions:

    def add_arguments(parser: argparse.ArgumentParser) -> None
    def main(args: argparse.Namespace) -> int

so this file only wires names to modules and never grows with their options. A module that
does not exist yet still gets a ``--help`` and exits 2 saying it is not implemented, which
keeps the contract of the design (every subcommand is present) while parts are being built.

Only the module of the command being run is imported: the others would load what that
process never uses (the manager does without the dev cluster's, the webhook's and the
certificate tools' dependencies, some 13 MB of memory).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

from pykueue import __version__

EXIT_USAGE = 2


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    module: str


COMMANDS: tuple[Command, ...] = (
    Command("run", "run manager, webhook and extender in one process", "pykueue.run"),
    Command("manager", "run the queue manager only", "pykueue.manager.runtime.cli"),
    Command("webhook", "run the admission webhook only", "pykueue.webhook.cli"),
    Command("extender", "run the kube-scheduler extender only", "pykueue.extender.cli"),
    Command("simulate", "run the scheduling core over scenario files, or a what-if on the cluster",
            "pykueue.simulate_cli"),
    Command("explain", "say why a workload waits, from the live cluster", "pykueue.explain"),
    Command("certs", "generate and manage TLS certificates", "pykueue.certs.cli"),
    Command("dev", "start/stop a local control plane of real Kubernetes binaries", "pykueue.devcluster.cli"),
    Command("crds", "generate CustomResourceDefinitions from the API models", "pykueue.api.crdgen"),
)


def _load(module_name: str) -> ModuleType | None:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only a missing command module means "not installed" (the image leaves the dev
        # cluster out); a missing dependency inside an existing module is a real error.
        if exc.name is not None and module_name.startswith(exc.name):
            return None
        raise


def _not_implemented(name: str) -> Callable[[argparse.Namespace], int]:
    def run(_: argparse.Namespace) -> int:
        print(f"pykueue {name}: not part of this installation (run it from a source checkout)",
              file=sys.stderr)
        return EXIT_USAGE

    return run


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv``: with the options of its command only (of every command
    when ``argv`` is None)."""
    chosen = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    parser = argparse.ArgumentParser(
        prog="pykueue",
        description="Kubernetes batch queueing, API-compatible with Kueue (kueue.x-k8s.io).",
    )
    parser.add_argument("--version", action="version", version=f"pykueue {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        if chosen is not None and command.name != chosen:
            sub.add_parser(command.name, help=command.summary, description=command.summary)
            continue
        module = _load(command.module)
        if module is None:
            p = sub.add_parser(command.name, help=command.summary,
                               description=f"{command.summary} (not part of this installation)")
            p.set_defaults(handler=_not_implemented(command.name))
            continue
        p = sub.add_parser(command.name, help=command.summary, description=command.summary)
        module.add_arguments(p)
        p.set_defaults(handler=module.main)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    result: int = handler(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
