"""A private etcd and kube-apiserver for the harness, separate from the dev cluster.

Same binaries, certificates and flags as the dev cluster (``components.py``), in a
temporary directory on fresh loopback ports, without the controller manager, scheduler or
kwok: Kueue is the only controller, and the harness plays the others' parts it needs
(node status, pods readiness, garbage collection of a deleted job's workload).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pykueue.devcluster.cluster import admin_client, health_check
from pykueue.devcluster.components import Layout, Ports, components, write_pki_and_configs
from pykueue.devcluster.health import wait_for
from pykueue.devcluster.processes import ProcessRecord, spawn, stop
from pykueue.kube.blocking import BlockingClient

START_DEADLINE_S = 90.0
_MINE = ("etcd", "kube-apiserver")


class ControlPlane:
    """etcd and kube-apiserver; ``start`` then ``client``, and ``stop`` in any case."""

    def __init__(self, binaries: Mapping[str, Path], root: Path) -> None:
        self.layout = Layout(root)
        self.ports = Ports.pick()
        self._binaries = dict(binaries)
        self._records: list[ProcessRecord] = []
        self._client: BlockingClient | None = None

    def start(self) -> None:
        write_pki_and_configs(self.layout, self.ports, None)
        for component in components(self._binaries, self.layout, self.ports):
            if component.name not in _MINE:
                continue
            record = spawn(
                component.name, component.argv, self.layout.logs / f"{component.name}.log", env=component.env
            )
            self._records.append(record)
            wait_for(
                f"{component.name} health", health_check(component, self.layout), START_DEADLINE_S, record
            )

    @property
    def client(self) -> BlockingClient:
        if self._client is None:
            self._client = admin_client(self.layout, self.ports)
        return self._client

    @property
    def kubeconfig(self) -> Path:
        return self.layout.admin_kubeconfig

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        for record in reversed(self._records):
            stop(record)
        self._records.clear()
