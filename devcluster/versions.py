"""The pinned Go modules and the key under which their binaries are cached.

The Go modules under ``go/`` are the single source of truth for versions: the numbers
shown to users are read from their ``go.mod`` files, and the cache key is a digest of
every file that influences a build, so editing a pin or a ``main.go`` makes a new key
(and a rebuild) while an unchanged checkout reuses what it built before.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from devcluster.paths import GO_DIR


@dataclass(frozen=True)
class GoBinary:
    """One executable: the Go module directory (under ``go/``) and package to build."""

    name: str
    module: str
    package: str


# Build order: the small ones first, so a broken toolchain shows up in seconds.
BINARIES: tuple[GoBinary, ...] = (
    GoBinary("etcd", "etcd", "."),
    GoBinary("kwok", "kwok", "."),
    GoBinary("kube-apiserver", "kube", "./cmd/kube-apiserver"),
    GoBinary("kube-scheduler", "kube", "./cmd/kube-scheduler"),
    GoBinary("kube-controller-manager", "kube", "./cmd/kube-controller-manager"),
)

# (label, module directory, required module path) for the human-readable part of the key.
_PINS: tuple[tuple[str, str, str], ...] = (
    ("k8s", "kube", "k8s.io/kubernetes"),
    ("etcd", "etcd", "go.etcd.io/etcd/server/v3"),
    ("kwok", "kwok", "sigs.k8s.io/kwok"),
)


def pinned_version(module_dir: str, module_path: str, go_dir: Path = GO_DIR) -> str:
    text = (go_dir / module_dir / "go.mod").read_text()
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module_path)}\s+(v\S+)", text, re.MULTILINE)
    if match is None:
        raise ValueError(f"{module_dir}/go.mod does not require {module_path}")
    return match.group(1)


def pinned_versions(go_dir: Path = GO_DIR) -> dict[str, str]:
    return {label: pinned_version(module, path, go_dir) for label, module, path in _PINS}


def source_digest(go_dir: Path = GO_DIR) -> str:
    digest = hashlib.sha256()
    for path in sorted(go_dir.rglob("*")):
        if path.is_file() and (path.suffix == ".go" or path.name in ("go.mod", "go.sum")):
            digest.update(path.relative_to(go_dir).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def version_key(go_dir: Path = GO_DIR) -> str:
    """E.g. ``k8s-v1.36.3_etcd-v3.6.8_kwok-v0.8.0_1a2b3c4d5e6f``."""
    pins = "_".join(f"{label}-{version}" for label, version in pinned_versions(go_dir).items())
    return f"{pins}_{source_digest(go_dir)[:12]}"
