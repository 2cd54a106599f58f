"""The Kueue manager process: its configuration file, start, readiness and stop.

Kueue's certificate rotator writes the webhook's serving certificate into a Secret and
then waits for the files to appear in its cert directory, as a kubelet mounting that
Secret would make them; the harness plays the kubelet's part while it waits.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml

from pykueue.devcluster.conformance.kueue_config import NAMESPACE, WEBHOOK_SECRET, Listeners, configuration
from pykueue.devcluster.health import http_ok, wait_for
from pykueue.devcluster.ports import LOOPBACK, free_ports
from pykueue.devcluster.processes import ProcessRecord, log_tail, spawn, stop
from pykueue.kube.blocking import BlockingClient

READY_DEADLINE_S = 120.0


class KueueProcess:
    """One Kueue manager at a time, restarted with a scenario's configuration."""

    def __init__(self, binary: Path, kubeconfig: Path, root: Path, client: BlockingClient) -> None:
        self._binary = binary
        self._client = client
        self._kubeconfig = kubeconfig
        self._root = root
        webhook, health = free_ports(2)
        self.listeners = Listeners(webhook, health, root / "webhook-certs")
        self._record: ProcessRecord | None = None
        self._starts = 0

    def start(self, scenario_config: dict[str, Any]) -> list[str]:
        """Start Kueue and wait until it is ready; returns the config keys left out."""
        self.stop()
        document, unsupported = configuration(scenario_config, self.listeners)
        self._root.mkdir(parents=True, exist_ok=True)
        config_path = self._root / "kueue-config.yaml"
        config_path.write_text(yaml.safe_dump(document, sort_keys=False))
        self._starts += 1
        env = {**os.environ, "KUBECONFIG": str(self._kubeconfig)}
        self._record = spawn(
            "kueue",
            [str(self._binary), f"--config={config_path}"],
            self._root / "logs" / f"kueue-{self._starts}.log",
            env=env,
        )
        url = f"http://{LOOPBACK}:{self.listeners.health_port}/readyz"

        def ready() -> bool:
            self._mount_certificates()
            return http_ok(url)

        wait_for("Kueue readiness", ready, READY_DEADLINE_S, self._record)
        return unsupported

    def _mount_certificates(self) -> None:
        if (self.listeners.cert_dir / "tls.key").is_file():
            return
        secret = self._client.get(f"/api/v1/namespaces/{NAMESPACE}/secrets/{WEBHOOK_SECRET}")
        data = secret.get("data") or {}
        if not {"tls.crt", "tls.key"} <= set(data):
            return
        self.listeners.cert_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.listeners.cert_dir, 0o700)
        # The key last: its presence is what says the directory is complete.
        for name in sorted(data, key=lambda n: n == "tls.key"):
            target = self.listeners.cert_dir / name
            target.write_bytes(base64.b64decode(data[name]))
            target.chmod(0o600)

    def stop(self) -> None:
        if self._record is not None:
            # Killed, not asked: Kueue's graceful shutdown waits seconds for its webhook
            # server, and everything it would keep is in the API server already.
            stop(self._record, timeout_s=0.0)
            self._record = None

    def log_tail(self) -> str:
        return "(not started)" if self._record is None else log_tail(self._record)
