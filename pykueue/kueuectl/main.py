"""``kubectl-kueue``: the command tree, help, and error reporting.

Errors are one ``Error: ...`` line on stderr and exit status 1, as kueuectl's; help goes to
stdout. Messages name the command ``kueuectl`` where kueuectl's do, so scripts matching them
keep working.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from pykueue.kueuectl.cli import (
    Command,
    Flag,
    Invocation,
    ShowHelp,
    UsageError,
    check_args,
    find,
    parse_flags,
)
from pykueue.kueuectl.commands import (
    activation,
    completion,
    create,
    listing,
    passthrough,
    pods,
    version,
    workloads,
)
from pykueue.kueuectl.commands.common import GLOBAL_FLAGS, CommandError
from pykueue.kueuectl.kubeconfig import ConfigError
from pykueue.kueuectl.printers.output import OutputError
from pykueue.kueuectl.transport import ApiError

ROOT_NAME = "kueuectl"


def build() -> Command:
    root = Command(ROOT_NAME, "Manage Kueue queues and Workloads (pykueue's kubectl kueue)",
                   persistent=GLOBAL_FLAGS)
    listing_group = Command("list", "List Kueue objects and the pods of jobs")
    listing_group.add(*listing.commands(), workloads.command(), pods.command())
    root.add(create.command(), *activation.commands(), listing_group, *passthrough.commands(),
             version.command(), completion.command(),
             Command("help", "Help about any command", run=_help_command))
    _register_completions(root)
    return root


def _register_completions(root: Command) -> None:
    def child(*path: str) -> Command:
        node = root
        for name in path:
            found = node.find_child(name)
            assert found is not None, path
            node = found
        return node

    child("create", "localqueue").complete_flags["clusterqueue"] = completion.cluster_queues(None)
    child("list", "localqueue").complete_flags["clusterqueue"] = completion.cluster_queues(None)
    child("list", "workload").complete_flags["clusterqueue"] = completion.cluster_queues(None)
    child("list", "workload").complete_flags["localqueue"] = completion.local_queues(None)
    for verb, active in (("stop", True), ("resume", False)):
        child(verb, "clusterqueue").complete_args = completion.cluster_queues(active)
        child(verb, "localqueue").complete_args = completion.local_queues(active)
        child(verb, "workload").complete_args = completion.workloads(active)
    child("delete", "workload").complete_args = completion.workloads(True)
    child("help").complete_args = lambda inv, prefix: (
        [f"{c.name}\t{c.summary}" for c in sorted(root.children, key=lambda c: c.name)
         if not c.hidden and c.name.startswith(prefix)], completion.NO_FILE)


# -- help ---------------------------------------------------------------------------------------

def _flag_lines(flags: Sequence[Flag]) -> list[str]:
    entries = []
    for flag in sorted(flags, key=lambda f: f.name):
        if flag.hidden:
            continue
        short = f"-{flag.short}, " if flag.short else "    "
        kind = "" if flag.kind == "bool" else f" {flag.kind}"
        default = f' (default "{flag.default}")' if flag.kind == "string" and flag.default else ""
        entries.append((f"  {short}--{flag.name}{kind}", flag.help + default))
    width = max((len(left) for left, _ in entries), default=0)
    return [f"{left.ljust(width)}   {text}" for left, text in entries]


def help_text(command: Command) -> str:
    path = "kubectl kueue" + command.path()[len(ROOT_NAME):]
    lines = [command.summary, "", "Usage:"]
    if command.run is not None:
        lines.append(f"  {path} {command.usage}".rstrip())
    if command.children:
        lines.append(f"  {path} [command]")
    if command.aliases:
        lines += ["", "Aliases:", f"  {', '.join((command.name, *command.aliases))}"]
    if command.children:
        visible = sorted((c for c in command.children if not c.hidden), key=lambda c: c.name)
        width = max(len(c.name) for c in visible)
        lines += ["", "Available Commands:"] + [f"  {c.name.ljust(width)}   {c.summary}" for c in visible]
    own = [*command.flags, *command.persistent, Flag("help", "bool", f"help for {command.name}", short="h")]
    lines += ["", "Flags:", *_flag_lines(own)]
    inherited = [f for f in command.all_flags() if f not in own and f.name != "help"]
    if inherited:
        lines += ["", "Global Flags:", *_flag_lines(inherited)]
    if command.children:
        lines += ["", f'Use "{path} [command] --help" for more information about a command.']
    return "\n".join(lines) + "\n"


def _help_command(inv: Invocation) -> int:
    root = inv.command.chain()[0]
    target, rest = find(root, inv.args)
    if inv.args and (target is root or rest):
        topic = " ".join(f"`{word}`" for word in inv.args)
        inv.err.write(f"Unknown help topic [{topic}]\n{help_text(root)}")
        return 0
    inv.out.write(help_text(target))
    return 0


# -- suggestions for unknown commands (cobra's rule: edit distance <= 2 or a prefix) ----------

def _distance(a: str, b: str) -> int:
    a, b = a.lower(), b.lower()
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


_SUGGEST_FOR = {"list": ("ps",)}


def _suggestions(root: Command, typed: str) -> list[str]:
    out = []
    for command in root.children:  # in the order they were added, as cobra does
        if command.hidden or command.name == "help":
            continue
        if _distance(typed, command.name) <= 2 or command.name.lower().startswith(typed.lower()):
            out.append(command.name)
        if typed.lower() in _SUGGEST_FOR.get(command.name, ()):
            out.append(command.name)
    return out


def _unknown_command(root: Command, word: str) -> str:
    message = f'unknown command "{word}" for "{ROOT_NAME}"'
    suggestions = _suggestions(root, word)
    if suggestions:
        message += "\n\nDid you mean this?\n" + "".join(f"\t{s}\n" for s in suggestions)
    return message + f"\nRun '{ROOT_NAME} --help' for usage."


# -- entry point ------------------------------------------------------------------------------------

def run(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    root = build()
    args = list(argv)
    if args and args[0] in ("__complete", "__completeNoDesc"):
        return _complete(root, args, out, err)
    try:
        command, rest = find(root, args)
        values, changed, positional = parse_flags(command, rest)
        if command is root and positional:
            err.write(f"Error: {_unknown_command(root, positional[0])}\n")
            return 1
        if command.run is None:
            raise ShowHelp
        check_args(command, positional, values, changed)
        inv = Invocation(command, positional, values, changed, args, out, err)
        return command.run(inv)
    except ShowHelp:
        out.write(help_text(command))
        return 0
    except (UsageError, CommandError, ApiError, ConfigError, OutputError) as exc:
        out.flush()
        err.write(f"Error: {exc}\n")
        return 1


def _complete(root: Command, args: list[str], out: TextIO, err: TextIO) -> int:
    def invocation(command: Command, positional: list[str], values: dict[str, Any],
                   changed: set[str]) -> Invocation:
        return Invocation(command, positional, values, changed, args, out, err)

    result = completion.complete(root, args[1:], invocation)
    completion.write_results(invocation(root, [], {}, set()), result, args[0] == "__complete")
    return 0


def main() -> None:
    try:
        sys.exit(run(sys.argv[1:], sys.stdout, sys.stderr))
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(141)


def complete_main() -> None:
    """``kubectl_complete-kueue``: what kubectl runs to complete ``kubectl kueue ...``."""
    sys.exit(run(["__complete", *sys.argv[1:]], sys.stdout, sys.stderr))


if __name__ == "__main__":
    main()
