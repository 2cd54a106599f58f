"""``get|describe|edit|patch|delete`` of Kueue kinds: handed to kubectl as typed.

kueuectl replaces itself with ``kubectl`` and the same arguments, so everything kubectl
offers for those verbs works; the one exception is ``delete workload``, which also deletes
the Workload's jobs (``delete_workload``).
"""

from __future__ import annotations

import os
import shutil

from pykueue.kueuectl.cli import Command, Invocation
from pykueue.kueuectl.commands import delete_workload
from pykueue.kueuectl.commands.common import CommandError

VERBS = (("get", "Display Kueue objects"), ("delete", "Delete Kueue objects"),
         ("edit", "Edit Kueue objects on the server"), ("describe", "Show details of Kueue objects"),
         ("patch", "Update fields of Kueue objects"))
KINDS = (("workload", ("kwl", "kueueworkload", "kueueworkloads")), ("clusterqueue", ("cq",)),
         ("localqueue", ("lq",)), ("resourceflavor", ("rf",)))


def exec_kubectl(inv: Invocation) -> int:
    path = shutil.which("kubectl")
    if path is None:
        raise CommandError('pass-through command are not available: exec: "kubectl": executable file '
                           f'not found in $PATH, PATH="{os.environ.get("PATH", "")}"')
    inv.out.flush()
    inv.err.flush()
    os.execv(path, [path, *inv.argv])
    return 0  # not reached


def commands() -> list[Command]:
    out = []
    for verb, summary in VERBS:
        group = Command(verb, summary)
        for kind, aliases in KINDS:
            if verb == "delete" and kind == "workload":
                group.add(delete_workload.command())
                continue
            group.add(Command(kind, f'Run "kubectl {verb} {kind}"', aliases=aliases, unknown_flags_ok=True,
                              usage="[kubectl arguments]", run=exec_kubectl))
        out.append(group)
    return out
