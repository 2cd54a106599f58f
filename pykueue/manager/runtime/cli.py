"""``pykueue manager``: run the queue manager alone (``pykueue run`` adds the other servers).

Reads a Kueue Configuration (``config.kueue.x-k8s.io``) YAML file when given, Kueue's
defaults otherwise, connects to the cluster, serves metrics (to callers whose bearer token
kube-apiserver accepts and allows ``get /metrics``, see :mod:`.metrics_auth`) and probes
(to anyone), and runs the controllers: informers and job reconciliation on every replica,
the scheduler and queue-status writers only on the replica holding the Lease. SIGTERM (or
SIGINT) stops everything in order: leader work first, releasing the Lease, then informers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykueue.api.access import ApiAccess
from pykueue.api.config import DEFAULT_NAMESPACE
from pykueue.kube import leader, tls_policy
from pykueue.kube.client import connect
from pykueue.kube.config_file import load_config
from pykueue.kube.endpoints import METRICS_LIMITS, HealthChecks, build_app, start_site
from pykueue.kube.event_loop import run_main
from pykueue.kube.events import OVERALL, EventRecorder, client_transport
from pykueue.kube.leader import LeaderElector
from pykueue.kube.logging import configure_cli_logging
from pykueue.kube.ratelimit import DEFAULT_BURST, DEFAULT_QPS, TokenBucket
from pykueue.kube.startup import check_kubeconfig, exit_code, starting
from pykueue.kube.tls_policy import TlsPolicy
from pykueue.manager.core.config import ConfigError, config_from, parse_duration
from pykueue.manager.core.features import gate_enabled
from pykueue.manager.jobs.multikueue.dispatch import dispatcher_settings
from pykueue.manager.runtime import token_review
from pykueue.manager.runtime.controllers import manager as queue_manager
from pykueue.manager.runtime.controllers import retention
from pykueue.manager.runtime.controllers.manager import QueueManager
from pykueue.manager.runtime.custom_labels import custom_labels_from
from pykueue.manager.runtime.metrics import KueueMetrics, ReplicaRole
from pykueue.manager.runtime.metrics_auth import cluster_metrics_guard
from pykueue.manager.runtime.token_review import (
    ACCESS_REVIEW_BURST,
    ACCESS_REVIEWS_PER_S,
    TOKEN_REVIEW_BURST,
    TOKEN_REVIEWS_PER_S,
    Reviewers,
    cluster_reviewers,
)
from pykueue.manager.runtime.visibility.tls import self_signed_serving_certificate

log = logging.getLogger(__name__)

DEFAULT_METRICS_ADDRESS = ":8080"
DEFAULT_HEALTH_ADDRESS = ":8081"
Extra = Callable[[Any], Awaitable[Callable[[], Awaitable[None]]]]
"""An extra server started with the connected client; returns its stop function."""
ManagerExtra = Callable[[Any, QueueManager, Reviewers], Awaitable[Callable[[], Awaitable[None]]]]
"""An extra server that also reads the queue manager (the visibility API, the dashboard); it
asks who its callers are through the process's one set of cached reviewers."""


def api_access() -> tuple[ApiAccess, ...]:
    """What ``pykueue manager`` asks of the API, as RBAC (``api.access``): the queue manager
    and its controllers, the Lease, and the reviews of /metrics' bearer tokens."""
    return (*queue_manager.api_access(), *leader.API_ACCESS, *token_review.API_ACCESS)


# The reviewers' client: room for both review budgets at once.
REVIEW_QPS = TOKEN_REVIEWS_PER_S + ACCESS_REVIEWS_PER_S
REVIEW_BURST = TOKEN_REVIEW_BURST + ACCESS_REVIEW_BURST


@dataclass(frozen=True)
class Settings:
    kubeconfig: str | None
    config: dict[str, Any]
    metrics_address: str
    health_address: str
    leader_elect: bool
    namespace: str
    # HTTPS for /metrics, as Kueue serves it; the dev cluster keeps plain HTTP.
    metrics_secure: bool = False
    metrics_cert_dir: str | None = None
    lease: LeaseSettings = field(default_factory=lambda: LeaseSettings())
    tls: TlsPolicy = field(default_factory=TlsPolicy)


@dataclass(frozen=True)
class LeaseSettings:
    """``leaderElection``'s Lease: its name and namespace (None: pykueue's own) and timings."""

    name: str = leader.KUEUE_LEASE_NAME
    namespace: str | None = None
    duration_s: float = leader.LEASE_DURATION_S
    renew_deadline_s: float = leader.RENEW_DEADLINE_S
    retry_period_s: float = leader.RETRY_PERIOD_S

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LeaseSettings:
        """From a Configuration's ``leaderElection``; a bad value is a ConfigError."""
        section = config.get("leaderElection") or {}
        lease = cls(str(section.get("resourceName") or leader.KUEUE_LEASE_NAME),
                    str(section["resourceNamespace"]) if section.get("resourceNamespace") else None,
                    parse_duration(section.get("leaseDuration", leader.LEASE_DURATION_S)),
                    parse_duration(section.get("renewDeadline", leader.RENEW_DEADLINE_S)),
                    parse_duration(section.get("retryPeriod", leader.RETRY_PERIOD_S)))
        if not lease.duration_s > lease.renew_deadline_s > lease.retry_period_s * leader.JITTER:
            raise ConfigError("leaderElection: leaseDuration must exceed renewDeadline, which must exceed "
                              f"retryPeriod x {leader.JITTER}")
        return lease


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig file; in-cluster config when omitted")
    parser.add_argument("--config", default=None, help="Kueue Configuration YAML (defaults when absent)")
    parser.add_argument("--metrics-bind-address", default=None,
                        help=f"host:port for /metrics (default: config's, else {DEFAULT_METRICS_ADDRESS})")
    parser.add_argument("--health-probe-bind-address", default=None,
                        help=f"host:port for /healthz and /readyz (default {DEFAULT_HEALTH_ADDRESS})")
    parser.add_argument("--leader-elect", default=None, action=argparse.BooleanOptionalAction,
                        help="campaign for the Lease before scheduling (default: the config's, else on)")
    parser.add_argument("--metrics-secure", default=False, action=argparse.BooleanOptionalAction,
                        help="serve /metrics over HTTPS (Kueue's default; a self-signed certificate "
                             "unless --metrics-cert-dir holds tls.crt and tls.key)")
    parser.add_argument("--metrics-cert-dir", default=None,
                        help="directory with tls.crt and tls.key for /metrics")
    parser.add_argument("--log-level", default="INFO")


def settings_from(args: argparse.Namespace) -> Settings:
    with starting(f"--config {args.config}"):
        config = load_config(args.config)
    metrics = (config.get("metrics") or {}).get("bindAddress") or DEFAULT_METRICS_ADDRESS
    health = (config.get("health") or {}).get("healthProbeBindAddress") or DEFAULT_HEALTH_ADDRESS
    elect = (config.get("leaderElection") or {}).get("leaderElect", True)
    with starting("--config leaderElection"):
        lease = LeaseSettings.from_config(config)
    with starting("--config"):
        tls = TlsPolicy.from_config(config.get("tls")) if gate_enabled(config.get("featureGates"),
                                                                        "TLSOptions") else TlsPolicy()
    return Settings(args.kubeconfig, config, args.metrics_bind_address or metrics,
                    args.health_probe_bind_address or health,
                    bool(elect if args.leader_elect is None else args.leader_elect),
                    str(config.get("namespace") or DEFAULT_NAMESPACE),
                    metrics_secure=bool(getattr(args, "metrics_secure", False)),
                    metrics_cert_dir=getattr(args, "metrics_cert_dir", None), lease=lease, tls=tls)


def client_limits(config: dict[str, Any]) -> tuple[float, int]:
    """``clientConnection.qps``/``burst`` of the Configuration, Kueue's defaults (300/500) when unset."""
    conn = config.get("clientConnection") or {}
    qps, burst = conn.get("qps"), conn.get("burst")
    try:
        return (DEFAULT_QPS if qps is None else float(qps)), (DEFAULT_BURST if burst is None else int(burst))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"clientConnection: qps and burst must be numbers: {exc}") from exc


def metrics_tls(settings: Settings) -> ssl.SSLContext | None:
    """The metrics server's TLS context, or None for plain HTTP.

    Like controller-runtime's secure metrics serving: the certificate in the cert directory
    when one is there, else a self-signed one made at start-up (kept in that directory when
    one is named, else in memory only).
    """
    return serving_context(settings.metrics_cert_dir) if settings.metrics_secure else None


def serving_context(cert_dir: str | None) -> ssl.SSLContext:
    """A server context presenting tls.crt and tls.key of ``cert_dir`` when there, else a
    self-signed pair: written into ``cert_dir`` when one is named (a restart keeps it), held
    in memory when not (nothing of it outlives the process)."""
    context = tls_policy.server_context()
    directory = None if cert_dir is None else Path(cert_dir)
    if directory is not None and (directory / "tls.crt").exists() and (directory / "tls.key").exists():
        context.load_cert_chain(str(directory / "tls.crt"), str(directory / "tls.key"))
        return context
    serving = self_signed_serving_certificate(("localhost", socket.gethostname()))
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "tls.crt").write_bytes(serving.cert_pem)
        key = directory / "tls.key"
        key.touch(mode=0o600)
        key.write_bytes(serving.key_pem)
    tls_policy.load_pair(context, serving.cert_pem, serving.key_pem)
    return context


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "0.0.0.0", int(port)


def _dump(manager: QueueManager) -> None:
    for line in manager.core.debug_dump():
        log.info("dump: %s", line)


async def run_manager(settings: Settings, stop: asyncio.Event, extras: tuple[Extra, ...] = (),
                      manager_extras: tuple[ManagerExtra, ...] = ()) -> None:
    with starting("the Configuration"):
        qps, burst = client_limits(settings.config)
        core_config = config_from(settings.config)
        retention.after_finished(settings.config)  # refused here, not as the manager starts
        retention.after_deactivated_by_kueue(settings.config)
        custom_labels = custom_labels_from(settings.config)
        dispatcher_settings(settings.config)  # multiKueue.dispatcherName and its config
    check_kubeconfig(settings.kubeconfig)
    with starting("loading the kubeconfig"):
        client = await connect(settings.kubeconfig, qps=qps, burst=burst)
    metrics = KueueMetrics(ReplicaRole.FOLLOWER if settings.leader_elect else ReplicaRole.STANDALONE,
                           custom=custom_labels)
    # Events go out on the same connections with a request budget of their own, as Kueue's
    # event broadcaster has its own client: they never wait for, nor delay, an admission.
    events = EventRecorder(client_transport(client.sharing_pool(TokenBucket(OVERALL[1], OVERALL[0]))))
    manager = QueueManager(client, core_config, job_config=settings.config, metrics=metrics, events=events)
    # Reviews on the same connections with a request budget of their own (bounded further by
    # the reviewers' own budgets): a flood of bearer tokens never delays a Lease renewal.
    reviewers = cluster_reviewers(client.sharing_pool(TokenBucket(REVIEW_QPS, REVIEW_BURST)))
    health = HealthChecks()
    health.add_liveness("ping", lambda: True)
    health.add_readiness("informers", lambda: all(i.has_synced for i in manager.informers.values()))
    runners = []
    stoppers: list[Callable[[], Awaitable[None]]] = []
    try:
        with starting("serving metrics and probes"):
            host, port = split_address(settings.metrics_address)
            health_host, health_port = split_address(settings.health_address)
            tls = metrics_tls(settings)
            guard = cluster_metrics_guard(reviewers)
            if (host, port) == (health_host, health_port):
                runner, _ = await start_site(build_app(metrics, health, metrics_guard=guard), host, port,
                                             ssl_context=tls, limits=METRICS_LIMITS)
                runners.append(runner)
            else:
                runner, bound = await start_site(build_app(metrics, metrics_guard=guard), host, port,
                                                 ssl_context=tls, limits=METRICS_LIMITS)
                runners.append(runner)
                log.info("metrics on %s://%s:%d/metrics", "https" if tls else "http", host, bound)
                runner, bound = await start_site(build_app(health=health), health_host, health_port)
                runners.append(runner)
                log.info("probes on %s:%d", health_host, bound)
        # The servers the command composes, then the first reads: where an unreachable or
        # refusing API server shows first.
        with starting("starting against the API server"):
            for extra in extras:
                stoppers.append(await extra(client))
            for manager_extra in manager_extras:
                stoppers.append(await manager_extra(client, manager, reviewers))
            await manager.start_informers()
        with contextlib.suppress(NotImplementedError, RuntimeError):  # no signals off the main thread
            asyncio.get_running_loop().add_signal_handler(signal.SIGUSR2, _dump, manager)
        if settings.leader_elect:
            identity = f"{socket.gethostname()}_{os.getpid()}"
            lease = settings.lease
            elector = LeaderElector(client, namespace=lease.namespace or settings.namespace,
                                    identity=identity, name=lease.name, lease_duration_s=lease.duration_s,
                                    renew_deadline_s=lease.renew_deadline_s,
                                    retry_period_s=lease.retry_period_s,
                                    on_started_leading=manager.lead, on_lost_lease=manager.lose_lease)
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
        # One line a benchmark (or an operator) can read: what this run cost kube-apiserver.
        log.info("shutting down: %s", client.request_summary())
        await manager.stop()
        log.info("events: %s", events.summary())  # after stop: those sent on the way out too
        for stopper in stoppers:
            await stopper()
        for runner in runners:
            await runner.cleanup()
        await client.close()


def serve(settings: Settings, extras: tuple[Extra, ...] = (),
          manager_extras: tuple[ManagerExtra, ...] = ()) -> int:
    tls_policy.configure(settings.tls)  # before any server makes its context

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await run_manager(settings, stop, extras, manager_extras)
    run_main(main())
    return 0


def main(args: argparse.Namespace) -> int:
    configure_cli_logging(args.log_level)
    return exit_code(lambda: serve(settings_from(args)))
