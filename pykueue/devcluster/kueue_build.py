"""Real Kueue, built from its Go module at an exact version, for tools that compare with it.

The pinned version (``go/kueue/go.mod``, whose go.sum is committed) builds like every other
dev binary. Any other version gets a generated module of its own under the cache, resolved
once with ``go mod tidy`` (this needs the module proxy), so trying a release needs no edit of
the checkout. Both the manager (``cmd/kueue``) and the scheduler benchmark's
``minimalkueue`` are packages of the same module: callers pick the package.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pykueue.devcluster.build import BuildError, Report, build_one, go_env, go_tool
from pykueue.devcluster.paths import GO_DIR, bin_root
from pykueue.devcluster.versions import GoBinary, module_key, pinned_version, source_digest

MODULE = "sigs.k8s.io/kueue"
MANAGER = f"{MODULE}/cmd/kueue"
MINIMAL = f"{MODULE}/test/performance/scheduler/minimalkueue"
PINNED_DIR = "kueue"
# Releases before this have no v1beta2 API and a different Configuration; not supported.
OLDEST = (0, 15, 0)
_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")


@dataclass(frozen=True)
class KueueModule:
    version: str
    directory: Path
    key: str


def pinned() -> str:
    return pinned_version(PINNED_DIR, MODULE)


def check_version(version: str) -> str:
    match = _VERSION.match(version)
    if match is None:
        raise BuildError(f"Kueue version {version!r} is not an exact release such as v0.19.2")
    if tuple(int(g) for g in match.groups()) < OLDEST:
        raise BuildError(
            f"Kueue {version} is older than v{'.'.join(map(str, OLDEST))}, the first release with the "
            "v1beta2 Configuration the harness writes"
        )
    return version


def _generated_go_mod(version: str) -> str:
    return (
        f"module pykueue.dev/devcluster/kueue-{version}\n\ngo 1.26.0\n\n"
        f"require {MODULE} {version}\n\ntool (\n\t{MANAGER}\n\t{MINIMAL}\n)\n"
    )


def module(version: str | None = None, report: Report = print) -> KueueModule:
    """The Go module that builds Kueue ``version`` (default: the pin)."""
    if version is None or version == pinned():
        return KueueModule(pinned(), GO_DIR / PINNED_DIR, module_key(PINNED_DIR))
    check_version(version)
    directory = bin_root() / "src" / f"kueue-{version}"
    go_mod = directory / "go.mod"
    wanted = _generated_go_mod(version)
    if not (directory / "go.sum").is_file() or go_mod.read_text() != wanted:
        directory.mkdir(parents=True, exist_ok=True)
        go_mod.write_text(wanted)
        report(f"resolving the dependencies of {MODULE} {version} (go mod tidy) ...")
        proc = subprocess.run(
            [go_tool(), "mod", "tidy"],
            cwd=directory,
            env=go_env(),
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            (directory / "go.sum").unlink(missing_ok=True)
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise BuildError(f"cannot resolve {MODULE} {version}: {last}")
    return KueueModule(version, directory, f"kueue-{version}_{source_digest(directory)[:12]}")


def binary(
    package: str = MANAGER, version: str | None = None, *, force: bool = False, report: Report = print
) -> Path:
    """Build (once) and return the executable of ``package`` from Kueue ``version``."""
    mod = module(version, report)
    name = package.rstrip("/").rsplit("/", 1)[-1]
    target = bin_root() / mod.key / name
    if not target.is_file() or force:
        report(f"building {package} {mod.version} (once; later runs reuse it) ...")
    build_one(
        GoBinary(name, PINNED_DIR, package, dev_cluster=False),
        target,
        module_dir=mod.directory,
        force=force,
        report=report,
    )
    return target


def source_dir(version: str | None = None, report: Report = print) -> Path:
    """Kueue's own sources at ``version`` in the module cache (CRDs, webhook manifests)."""
    mod = module(version, report)
    return _downloaded(MODULE, mod.version, mod.directory)


def dependency_dir(dependency: str, version: str | None = None, report: Report = print) -> Path:
    """The sources of one of Kueue's module dependencies, at the version Kueue's go.mod asks for
    (for instance the ProvisioningRequest CRD, which Kueue's tests take from the autoscaler's)."""
    mod = module(version, report)
    go_mod = (_downloaded(MODULE, mod.version, mod.directory) / "go.mod").read_text()
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(dependency)}\s+(\S+)", go_mod, re.MULTILINE)
    if match is None:
        raise BuildError(f"{MODULE} {mod.version} does not require {dependency}")
    return _downloaded(dependency, match.group(1), mod.directory)


def _downloaded(module_path: str, version: str, cwd: Path) -> Path:
    proc = subprocess.run(
        [go_tool(), "mod", "download", "-json", f"{module_path}@{version}"],
        cwd=cwd,
        env=go_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    match = re.search(r'"Dir":\s*"([^"]+)"', proc.stdout)
    if proc.returncode != 0 or match is None:
        raise BuildError(
            f"cannot download {module_path} {version}: {proc.stderr.strip() or proc.stdout.strip()}"
        )
    return Path(match.group(1))
