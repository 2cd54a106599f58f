"""Worker clusters of the dev cluster: more control planes for MultiKueue to dispatch to.

A worker is a dev cluster of its own (etcd, API server, controller manager, scheduler, kwok
with its eight fake nodes, pykueue's CRDs and pykueue as its Kueue, real quota), brought up
by the same code as the manager cluster with its state in ``workers/worker-<i>/`` of the
manager's state directory. It is lighter in two ways: no TAS scheduler, and of the operators
only the training operator and JobSet (the training operator's jobs and JobSets are
dispatched; LWS, Trainer and the MPI operator run in the manager cluster only).

Each worker's admin kubeconfig is stored in the manager cluster as Secret
``pykueue-system/pykueue-dev-worker-<i>`` (key ``kubeconfig``), the shape a
MultiKueueCluster's ``clusterSource.kubeConfig`` (locationType Secret) reads. The certificates
are embedded and the server is a loopback address, which the manager's pykueue (a host
process) reaches.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykueue.devcluster import addons
from pykueue.kube.blocking import BlockingClient

WORKERS_DIR = "workers"
SECRET_PREFIX = "pykueue-dev-worker-"
SECRET_KEY = "kubeconfig"
# The dev manager notices a lost worker after this long (Kueue's default is 15 min), so a
# killed worker's jobs move within a test's patience.
DEV_WORKER_LOST_TIMEOUT = "10s"


@dataclass(frozen=True)
class Role:
    """What differs between the manager cluster and a worker."""

    config: dict[str, Any]
    operators: tuple[str, ...] | None
    """Operator names to run; None: all of them."""
    tas_scheduler: bool


MANAGER = Role({**addons.DEV_CONFIG, "multiKueue": {"workerLostTimeout": DEV_WORKER_LOST_TIMEOUT}},
               None, True)
WORKER = Role(addons.DEV_CONFIG, ("training-operator", "jobset-controller"), False)


@dataclass(frozen=True)
class WorkerEndpoints:
    index: int
    server: str
    kubeconfig: Path
    secret: str

    def line(self) -> str:
        return (f"worker-{self.index}: server {self.server}, kubeconfig {self.kubeconfig}, "
                f"secret {addons.PYKUEUE_NAMESPACE}/{self.secret}")


def worker_root(root: Path, index: int) -> Path:
    return root / WORKERS_DIR / f"worker-{index}"


def existing(root: Path) -> list[Path]:
    """State directories of the workers started so far, in index order."""
    found = []
    index = 1
    while (worker_root(root, index) / "state.json").exists():
        found.append(worker_root(root, index))
        index += 1
    return found


def secret_name(index: int) -> str:
    return f"{SECRET_PREFIX}{index}"


def secret_manifest(index: int, kubeconfig: bytes) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": secret_name(index), "namespace": addons.PYKUEUE_NAMESPACE},
            "type": "Opaque", "data": {SECRET_KEY: base64.b64encode(kubeconfig).decode()}}


def publish(manager: BlockingClient, index: int, kubeconfig: Path, server: str) -> WorkerEndpoints:
    """Store the worker's kubeconfig in the manager cluster (re-applied on every ``up``)."""
    doc = secret_manifest(index, kubeconfig.read_bytes())
    manager.apply(f"/api/v1/namespaces/{addons.PYKUEUE_NAMESPACE}/secrets/{secret_name(index)}", doc)
    return WorkerEndpoints(index, server, kubeconfig, secret_name(index))
