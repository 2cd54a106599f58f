"""The pinned Go modules and the keys under which their binaries are cached.

The Go modules under ``go/`` are the single source of truth for versions: the numbers
shown to users are read from their ``go.mod`` files. Each module has its own cache key, a
digest of every file of that module that influences a build, so editing a pin or a
``main.go`` rebuilds that module's binaries only, and adding a module rebuilds nothing
else, while an unchanged checkout reuses what it built before.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from pykueue.devcluster.paths import GO_DIR


@dataclass(frozen=True)
class GoBinary:
    """One executable: the Go module directory (under ``go/``) and package to build."""

    name: str
    module: str
    package: str
    # False for binaries that only tools need (the conformance harness's Kueue): ``dev build``
    # builds them, ``dev up`` neither needs nor builds them.
    dev_cluster: bool = True
    # Go build tags (the cluster autoscaler compiles in only the cloud providers they name).
    tags: tuple[str, ...] = ()


# Build order: the small ones first, so a broken toolchain shows up in seconds.
BINARIES: tuple[GoBinary, ...] = (
    GoBinary("etcd", "etcd", "."),
    GoBinary("kwok", "kwok", "."),
    GoBinary("kube-apiserver", "kube", "./cmd/kube-apiserver"),
    GoBinary("kube-scheduler", "kube", "./cmd/kube-scheduler"),
    GoBinary("kube-controller-manager", "kube", "./cmd/kube-controller-manager"),
    # The training operator's controllers and webhooks behind our own main (see its
    # main.go for why); LWS's own command, declared with go.mod's ``tool`` directive so its
    # dependencies stay in the module graph, built by its import path.
    GoBinary("training-operator", "training-operator", "."),
    GoBinary("lws-controller", "lws", "sigs.k8s.io/lws/cmd"),
    # JobSet's and Kubeflow Trainer's own commands, declared as tools like LWS's (both take
    # a configuration file that turns leader election and certificate rotation off); the
    # MPI operator's controller behind our own main (see its main.go for why).
    GoBinary("jobset-controller", "jobset", "sigs.k8s.io/jobset"),
    GoBinary("trainer-controller", "trainer",
             "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"),
    GoBinary("mpi-operator", "mpi-operator", "."),
    # KubeRay's operator (RayJob, RayCluster, RayService), its own command declared as a tool:
    # its flags turn leader election off and move its probes and metrics to loopback.
    GoBinary("kuberay-operator", "kuberay", "github.com/ray-project/kuberay/ray-operator"),
    # The AppWrapper controller behind our own main (see its main.go for why).
    GoBinary("appwrapper-controller", "appwrapper", "."),
    # Kueue's scheduler benchmark manager, the reference of ``kueue_perf --manager kueue``,
    # and real Kueue, the oracle of ``dev conformance``; both declared as tools like LWS.
    GoBinary("minimalkueue", "kueue", "sigs.k8s.io/kueue/test/performance/scheduler/minimalkueue",
             dev_cluster=False),
    GoBinary("kueue", "kueue", "sigs.k8s.io/kueue/cmd/kueue", dev_cluster=False),
    # The users' tools pykueue's own are compared with: kueuectl (``kubectl kueue``) and helm.
    # Modules of their own, so adding them rebuilt neither Kueue nor the control plane.
    GoBinary("kubectl-kueue", "kueuectl", "sigs.k8s.io/kueue/cmd/kueuectl", dev_cluster=False),
    GoBinary("helm", "helm", "helm.sh/helm/v4/cmd/helm", dev_cluster=False),
    # Kubernetes' cluster autoscaler with only its kwok cloud provider: it serves
    # ProvisioningRequests by adding kwok nodes (``dev up --autoscaler``).
    GoBinary("cluster-autoscaler", "cluster-autoscaler", "k8s.io/autoscaler/cluster-autoscaler",
             dev_cluster=False, tags=("kwok",)),
)

# (label, module directory, required module path) for the human-readable part of the key.
_PINS: tuple[tuple[str, str, str], ...] = (
    ("k8s", "kube", "k8s.io/kubernetes"),
    ("etcd", "etcd", "go.etcd.io/etcd/server/v3"),
    ("kwok", "kwok", "sigs.k8s.io/kwok"),
    ("training-operator", "training-operator", "github.com/kubeflow/training-operator"),
    ("lws", "lws", "sigs.k8s.io/lws"),
    ("jobset", "jobset", "sigs.k8s.io/jobset"),
    ("trainer", "trainer", "github.com/kubeflow/trainer/v2"),
    ("mpi-operator", "mpi-operator", "github.com/kubeflow/mpi-operator"),
    ("kuberay", "kuberay", "github.com/ray-project/kuberay/ray-operator"),
    ("appwrapper", "appwrapper", "github.com/project-codeflare/appwrapper"),
    ("kueue", "kueue", "sigs.k8s.io/kueue"),
    ("kueuectl", "kueuectl", "sigs.k8s.io/kueue"),
    ("helm", "helm", "helm.sh/helm/v4"),
    ("cluster-autoscaler", "cluster-autoscaler", "k8s.io/autoscaler/cluster-autoscaler"),
)


def pinned_version(module_dir: str, module_path: str, go_dir: Path = GO_DIR) -> str:
    text = (go_dir / module_dir / "go.mod").read_text()
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module_path)}\s+(v\S+)", text, re.MULTILINE)
    if match is None:
        raise ValueError(f"{module_dir}/go.mod does not require {module_path}")
    return match.group(1)


def pinned_versions(go_dir: Path = GO_DIR) -> dict[str, str]:
    return {label: pinned_version(module, path, go_dir) for label, module, path in _PINS}


def source_digest(module_dir: Path) -> str:
    """A digest of every file under ``module_dir`` that ``go build`` reads."""
    digest = hashlib.sha256()
    for path in sorted(module_dir.rglob("*")):
        if path.is_file() and (path.suffix == ".go" or path.name in ("go.mod", "go.sum")):
            digest.update(path.relative_to(module_dir).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


# Version stamps the Kubernetes release scripts pass to the linker. Without them the binaries
# report v0.0.0-master, which clients that parse the server version (Kueue does) reject.
_STAMPED_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")


# Where the other stamped tools keep their version: they print it (``kubectl kueue version``,
# ``helm version``), and a comparison with ours must not differ by a placeholder. JobSet's
# release stamps it too; it logs it and sends it in its user agent.
_VERSION_VARIABLES = {
    "kueuectl": ("sigs.k8s.io/kueue", "sigs.k8s.io/kueue/pkg/version.GitVersion"),
    "helm": ("helm.sh/helm/v4", "helm.sh/helm/v4/internal/version.version"),
    "jobset": ("sigs.k8s.io/jobset", "sigs.k8s.io/jobset/pkg/version.GitVersion"),
}


def link_flags(module_dir: str, go_dir: Path = GO_DIR) -> tuple[str, ...]:
    """``-X`` linker flags of a module's binaries (Kubernetes, kueuectl, helm and JobSet have some)."""
    if module_dir in _VERSION_VARIABLES:
        module_path, variable = _VERSION_VARIABLES[module_dir]
        return (f"-X {variable}={pinned_version(module_dir, module_path, go_dir)}",)
    if module_dir != "kube":
        return ()
    version = pinned_version("kube", "k8s.io/kubernetes", go_dir)
    major, minor = version.lstrip("v").split(".")[:2]
    values = {"gitVersion": version, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean"}
    return tuple(f"-X {package}.{name}={value}" for package in _STAMPED_PACKAGES
                 for name, value in values.items())


def module_key(module_dir: str, go_dir: Path = GO_DIR) -> str:
    """E.g. ``k8s-v1.36.3_1a2b3c4d5e6f`` for ``kube``; a module without a pin entry is
    named after its directory."""
    pin = next(((label, path) for label, module, path in _PINS if module == module_dir), None)
    label = pin[0] if pin else module_dir
    version = f"-{pinned_version(module_dir, pin[1], go_dir)}" if pin else ""
    digest = source_digest(go_dir / module_dir)
    flags = [*link_flags(module_dir, go_dir),
             *(f"-tags={t}" for t in sorted({t for b in BINARIES if b.module == module_dir for t in b.tags}))]
    if flags:
        digest = hashlib.sha256((digest + "\0" + " ".join(flags)).encode()).hexdigest()
    return f"{label}{version}_{digest[:12]}"
