"""``pykueue manager``: run the queue manager alone (``pykueue run`` adds the other servers).

Reads a Kueue Configuration (``config.kueue.x-k8s.io``) YAML file when given, Kueue's
defaults otherwise, connects to the cluster, serves metrics and probes, and runs the
controllers: informers and job reconciliation on every replica, the scheduler and
queue-status writers only on the replica holding the Lease. SIGTERM (or SIGINT) stops
everything in order: leader work first, releasing the Lease, then informers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from manager.core.config import config_from
from manager.runtime.client import connect
from manager.runtime.controllers.manager import QueueManager
from manager.runtime.endpoints import HealthChecks, build_app, start_site
from manager.runtime.leader import LeaderElector
from manager.runtime.metrics import KueueMetrics

log = logging.getLogger(__name__)

DEFAULT_NAMESPACE = "kueue-system"
DEFAULT_METRICS_ADDRESS = ":8080"
DEFAULT_HEALTH_ADDRESS = ":8081"
Extra = Callable[[Any], Awaitable[Callable[[], Awaitable[None]]]]
"""An extra server started with the connected client; returns its stop function."""


@dataclass(frozen=True)
class Settings:
    kubeconfig: str | None
    config: dict[str, Any]
    metrics_address: str
    health_address: str
    leader_elect: bool
    namespace: str


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig file; in-cluster config when omitted")
    parser.add_argument("--config", default=None, help="Kueue Configuration YAML (defaults when absent)")
    parser.add_argument("--metrics-bind-address", default=None,
                        help=f"host:port for /metrics (default: config's, else {DEFAULT_METRICS_ADDRESS})")
    parser.add_argument("--health-probe-bind-address", default=None,
                        help=f"host:port for /healthz and /readyz (default {DEFAULT_HEALTH_ADDRESS})")
    parser.add_argument("--leader-elect", default=None, action=argparse.BooleanOptionalAction,
                        help="campaign for the Lease before scheduling (default: the config's, else on)")
    parser.add_argument("--log-level", default="INFO")


def load_config(path: str | None) -> dict[str, Any]:
    if not path or not Path(path).exists():
        if path:
            log.info("config file %s absent: using defaults", path)
        return {}
    data = yaml.safe_load(Path(path).read_text())
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a Kueue Configuration mapping")
    return data


def settings_from(args: argparse.Namespace) -> Settings:
    config = load_config(args.config)
    metrics = (config.get("metrics") or {}).get("bindAddress") or DEFAULT_METRICS_ADDRESS
    health = (config.get("health") or {}).get("healthProbeBindAddress") or DEFAULT_HEALTH_ADDRESS
    elect = (config.get("leaderElection") or {}).get("leaderElect", True)
    return Settings(args.kubeconfig, config, args.metrics_bind_address or metrics,
                    args.health_probe_bind_address or health,
                    bool(elect if args.leader_elect is None else args.leader_elect),
                    str(config.get("namespace") or DEFAULT_NAMESPACE))


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "0.0.0.0", int(port)


async def run_manager(settings: Settings, stop: asyncio.Event, extras: tuple[Extra, ...] = ()) -> None:
    client = await connect(settings.kubeconfig)
    manager = QueueManager(client, config_from(settings.config), job_config=settings.config)
    metrics = KueueMetrics()
    health = HealthChecks()
    health.add_liveness("ping", lambda: True)
    health.add_readiness("informers", lambda: all(i.has_synced for i in manager.informers.values()))
    runners = []
    stoppers: list[Callable[[], Awaitable[None]]] = []
    try:
        host, port = split_address(settings.metrics_address)
        health_host, health_port = split_address(settings.health_address)
        if (host, port) == (health_host, health_port):
            runner, _ = await start_site(build_app(metrics, health), host, port)
            runners.append(runner)
        else:
            runner, bound = await start_site(build_app(metrics), host, port)
            runners.append(runner)
            log.info("metrics on %s:%d/metrics", host, bound)
            runner, bound = await start_site(build_app(health=health), health_host, health_port)
            runners.append(runner)
            log.info("probes on %s:%d", health_host, bound)
        for extra in extras:
            stoppers.append(await extra(client))
        await manager.start_informers()
        if settings.leader_elect:
            identity = f"{socket.gethostname()}_{os.getpid()}"
            elector = LeaderElector(client, namespace=settings.namespace, identity=identity,
                                    on_started_leading=manager.lead)
            work = asyncio.create_task(elector.run(), name="leader-election")
        else:
            work = asyncio.create_task(manager.lead(), name="lead")
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({work, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if work.done() and not work.cancelled() and work.exception() is not None:
            raise work.exception()  # type: ignore[misc]
        work.cancel()
        stopped.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await work
    finally:
        log.info("shutting down")
        await manager.stop()
        for stopper in stoppers:
            await stopper()
        for runner in runners:
            await runner.cleanup()
        await client.close()


def serve(settings: Settings, extras: tuple[Extra, ...] = ()) -> int:
    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await run_manager(settings, stop, extras)
    asyncio.run(main())
    return 0


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    return serve(settings_from(args))
