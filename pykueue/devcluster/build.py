"""Build the control-plane binaries from the pinned Go modules into the cache.

``python -m pykueue.devcluster build`` and ``pykueue dev build`` land here, and ``dev up`` builds
what is missing the same way. Each binary goes to ``<cache>/bin/<module-key>/<name>``; one
that is already there is skipped, so only a fresh machine (or a changed pin) pays for
compilation. A binary is written under a
temporary name and renamed when ``go build`` succeeds, so an interrupted build never
leaves a half-written executable that a later run would mistake for a finished one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pykueue.devcluster.paths import GO_DIR, bin_root
from pykueue.devcluster.versions import BINARIES, GoBinary, link_flags, module_key

Report = Callable[[str], None]

# How often a long compile says it is still alive.
_PROGRESS_EVERY_S = 30.0


class BuildError(RuntimeError):
    """A binary could not be built; the message says which and where the log is."""


@dataclass(frozen=True)
class BuildResult:
    binaries: dict[str, Path]
    built: tuple[str, ...]
    reused: tuple[str, ...]
    seconds: float


def binary_path(binary: GoBinary) -> Path:
    return bin_root() / module_key(binary.module) / binary.name


def binary_paths() -> dict[str, Path]:
    """Where each dev-cluster binary of this checkout's pins is (or will be) cached."""
    return {b.name: binary_path(b) for b in BINARIES if b.dev_cluster}


def missing_binaries() -> list[str]:
    return [name for name, path in binary_paths().items() if not path.is_file()]


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    flags = env.get("GOFLAGS", "").split()
    # The modules live inside a git checkout; stamping VCS data would make every commit
    # a cache miss for the Go build cache and fails where git is absent.
    if not any(f.startswith("-buildvcs") for f in flags):
        flags.append("-buildvcs=false")
    env["GOFLAGS"] = " ".join(flags)
    return env


def _run_go_build(go: str, binary: GoBinary, target: Path, log_path: Path, report: Report,
                  module_dir: Path) -> None:
    tmp = target.with_name(f".{binary.name}.partial-{os.getpid()}")
    ldflags = " ".join(("-s", "-w", *link_flags(binary.module)))
    tags = [f"-tags={','.join(binary.tags)}"] if binary.tags else []
    argv = [go, "build", "-trimpath", *tags, f"-ldflags={ldflags}", "-o", str(tmp), binary.package]
    started = time.monotonic()
    with log_path.open("w") as log:
        # Own process group: on Ctrl-C or failure we stop go and every compiler it forked.
        proc = subprocess.Popen(argv, cwd=module_dir, env=go_env(), stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            while True:
                try:
                    proc.wait(timeout=_PROGRESS_EVERY_S)
                    break
                except subprocess.TimeoutExpired:
                    report(f"    ... {binary.name} still compiling ({time.monotonic() - started:.0f}s)")
        except BaseException:
            _kill_group(proc)
            tmp.unlink(missing_ok=True)
            raise
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-20:])
        raise BuildError(f"go build of {binary.name} failed (exit {proc.returncode}); "
                         f"full log: {log_path}\n{tail}")
    tmp.replace(target)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def go_tool() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError("the Go toolchain (go >= 1.26) is not on PATH; it is needed once "
                         "to build the dev-cluster binaries")
    return go


def build_one(binary: GoBinary, target: Path, *, module_dir: Path | None = None,
              force: bool = False, report: Report = print) -> bool:
    """Build one binary of a Go module (by default its directory under ``go/``) into
    ``target``, unless it is already there; True if it was built now."""
    if target.is_file() and not force:
        return False
    logs = bin_root() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    _run_go_build(go_tool(), binary, target, logs / f"{binary.name}.log", report,
                  module_dir if module_dir is not None else GO_DIR / binary.module)
    return True


def build(*, force: bool = False, only: tuple[str, ...] = (), report: Report = print) -> BuildResult:
    wanted = [b for b in BINARIES if not only or b.name in only]
    unknown = set(only) - {b.name for b in BINARIES}
    if unknown:
        raise BuildError(f"unknown binaries: {', '.join(sorted(unknown))}")
    report(f"dev-cluster binaries, cached under {bin_root()}")
    started = time.monotonic()
    built: list[str] = []
    reused: list[str] = []
    for index, binary in enumerate(wanted, 1):
        target = binary_path(binary)
        prefix = f"[{index}/{len(wanted)}] {binary.name}"
        if target.is_file() and not force:
            report(f"{prefix}: already built")
            reused.append(binary.name)
            continue
        report(f"{prefix}: building (module go/{binary.module}, package {binary.package}) ...")
        one_started = time.monotonic()
        build_one(binary, target, force=True, report=report)
        report(f"{prefix}: built in {time.monotonic() - one_started:.0f}s")
        built.append(binary.name)
    seconds = time.monotonic() - started
    report(f"done in {seconds:.0f}s ({len(built)} built, {len(reused)} already there)")
    return BuildResult({b.name: binary_path(b) for b in wanted}, tuple(built), tuple(reused), seconds)
