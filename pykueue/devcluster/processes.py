"""Background processes tracked by pid, so another invocation can find and stop them.

``dev up`` returns while the control plane keeps running, so its processes are started
in their own session (a terminal's Ctrl-C does not reach them) and recorded in the state
file. A pid alone can be reused by an unrelated process after ours exited; the record
therefore also keeps the kernel's start time of the process, and a pid whose start time
differs is treated as gone and is never signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Popen objects of children started by this interpreter: keeping them lets us reap the
# child (no zombie) when we stop it, and avoids "process still running" warnings.
_children: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class ProcessRecord:
    name: str
    pid: int
    start_ticks: int | None
    argv: tuple[str, ...]
    log: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "pid": self.pid, "startTicks": self.start_ticks,
                "argv": list(self.argv), "log": self.log}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcessRecord:
        ticks = data.get("startTicks")
        return cls(str(data["name"]), int(data["pid"]), None if ticks is None else int(ticks),
                   tuple(str(a) for a in data["argv"]), str(data["log"]))


def _proc_stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses; fields after it are plain.
    return raw[raw.rfind(")") + 2:].split()


def start_ticks(pid: int) -> int | None:
    fields = _proc_stat(pid)
    # After the command: state is field 3, starttime is field 22 (1-based in proc(5)).
    return None if fields is None else int(fields[19])


def is_running(record: ProcessRecord) -> bool:
    fields = _proc_stat(record.pid)
    if fields is None:
        if Path("/proc/self/stat").exists():
            return False
        try:
            os.kill(record.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    if fields[0] in ("Z", "X"):
        _reap(record.pid)
        return False
    return record.start_ticks is None or int(fields[19]) == record.start_ticks


def spawn(name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> ProcessRecord:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, cwd=cwd, start_new_session=True)
    _children[proc.pid] = proc
    return ProcessRecord(name, proc.pid, start_ticks(proc.pid), tuple(argv), str(log_path))


def _reap(pid: int) -> None:
    proc = _children.pop(pid, None)
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0)
        return
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def stop(record: ProcessRecord, timeout_s: float = 20.0) -> bool:
    """Stop a process politely, then forcefully; True if it was running."""
    if not is_running(record):
        return False
    try:
        os.kill(record.pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_running(record):
            return True
        time.sleep(0.1)
    if is_running(record):
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10.0
        while is_running(record) and time.monotonic() < deadline:
            time.sleep(0.1)
    return True


def log_tail(record: ProcessRecord, lines: int = 25) -> str:
    try:
        text = Path(record.log).read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])
