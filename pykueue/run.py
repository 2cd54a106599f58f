"""``pykueue run``: the default deployment, every server part in one process.

The queue manager always runs. The other parts (admission webhook, scheduler extender,
visibility API) are composed when their modules import cleanly and expose the factory
this module knows; a part that is missing is logged as skipped, not fatal, so the
command works while those parts are being built.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from pykueue.api.access import ApiAccess
from pykueue.certs.rotation import CertRotator
from pykueue.kube.logging import configure_cli_logging
from pykueue.kube.startup import exit_code
from pykueue.manager.runtime import cli as manager_cli
from pykueue.manager.runtime.token_review import Reviewers

log = logging.getLogger(__name__)

DEFAULT_VISIBILITY_ADDRESS = ":8082"
VISIBILITY_SERVICE = "pykueue-visibility-server"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    manager_cli.add_arguments(parser)
    extender = parser.add_mutually_exclusive_group()
    extender.add_argument("--extender-bind-address", default="127.0.0.1:0",
                          help="host:port of the kube-scheduler extender (port 0 picks one)")
    extender.add_argument("--no-extender", action="store_true",
                          help="serve no extender in this process (the install runs `pykueue extender` "
                               "under a ServiceAccount of its own)")
    parser.add_argument("--visibility-bind-address", default=DEFAULT_VISIBILITY_ADDRESS,
                        help="host:port of the visibility API server (Kueue's is :8082)")
    parser.add_argument("--dashboard-bind-address", default=None,
                        help="host:port of the read-only web dashboard (default: the Configuration's "
                             "dashboard.bindAddress; off when neither is set)")
    parser.add_argument("--dashboard-cert-dir", default=None,
                        help="tls.crt and tls.key the dashboard serves when bound beyond loopback "
                             "(default: a self-signed pair made at start-up)")
    parser.add_argument("--visibility-service-name", default=VISIBILITY_SERVICE,
                        help="the Service the APIService names (its DNS names go in the serving certificate)")
    from pykueue.webhook import server as webhook_server
    webhook_server.add_arguments(parser)


def _webhook(args: argparse.Namespace, settings: manager_cli.Settings) -> manager_cli.Extra:
    # Started before the informers: readiness cannot pass before certs and caBundles are in place.
    from pykueue.webhook import server as webhook_server

    webhook_settings = webhook_server.settings_from(args, settings.config, settings.namespace)

    async def start(client: Any) -> Callable[[], Awaitable[None]]:
        stop, _ = await webhook_server.start_webhook(client, webhook_settings)
        return stop
    return start


# The extender's Secrets and the TAS scheduler's client identity: ``extender.certificates``.


def _extender(args: argparse.Namespace, settings: manager_cli.Settings) -> manager_cli.Extra | None:
    if args.no_extender:
        log.info("extender off (--no-extender)")
        return None
    try:
        app_module = importlib.import_module("pykueue.extender.app")
        certificates = importlib.import_module("pykueue.extender.certificates")
        port_module = importlib.import_module("pykueue.extender.kube_port")
        server_module = importlib.import_module("pykueue.extender.server")
    except ImportError as exc:
        log.info("extender skipped: %s", exc)
        return None
    from pykueue.manager.jobs.admission import AdmissionPolicy

    scheduler_name = AdmissionPolicy.from_config(settings.config).tas_scheduler
    client_name = certificates.TAS_SCHEDULER_CLIENT

    async def start(client: Any) -> Callable[[], Awaitable[None]]:
        # Mutual TLS: a serving pair and the scheduler's client pair from one CA of our own,
        # kept in Secrets like the webhook's; only that client may call.
        rotator = certificates.secret_rotator(client, settings.namespace,
                                              ip_addresses=("127.0.0.1", *args.webhook_ip))
        await rotator.reconcile()
        rotator.start()
        # The manager's connection pool, but a rate limit of its own: kube-scheduler's
        # binds must not queue behind the manager's status writes.
        kube = client.sharing_pool()
        app: web.Application = app_module.make_app(app_module.ExtenderDeps(
            port=port_module.KubeClusterPort(kube), allowed_clients=frozenset({client_name}),
            scheduler_name=scheduler_name))
        host, port = manager_cli.split_address(args.extender_bind_address)
        # HTTP/2 for the TAS scheduler (ALPN), HTTP/1.1 for probes and other callers.
        server = await server_module.serve(app, host, port, rotator.context)
        bound = server.port
        log.info("extender on %s:%d (mutual TLS; client %s; binds pods of %s)", host, bound,
                 client_name, scheduler_name)

        async def stop() -> None:
            await rotator.stop()
            await server.stop()  # the pool is the manager's: it closes it
        return stop
    return start


VISIBILITY_SECRET = "pykueue-visibility-server-cert"


def _visibility(args: argparse.Namespace, settings: manager_cli.Settings) -> manager_cli.ManagerExtra:
    """The aggregated visibility API, serving the manager's queues on every replica from a
    Secret-kept certificate that is rotated in place; its CAs go into the APIServices'
    caBundle when they exist."""
    from pykueue.manager.runtime.controllers.pending_view import CorePendingWorkloads
    from pykueue.manager.runtime.visibility.assembly import (
        API_SERVICE_NAMES,
        build_rotating_visibility_server,
    )
    from pykueue.manager.runtime.visibility.server import start as start_visibility
    from pykueue.manager.runtime.visibility.tls import service_dns_names

    async def start(client: Any, manager: Any, reviewers: Reviewers) -> Callable[[], Awaitable[None]]:
        dns = ("localhost", *service_dns_names(args.visibility_service_name, settings.namespace))
        # One CA for every replica, kept in a Secret like the webhook's: the APIService has a
        # single caBundle, and whichever replica the aggregator reaches must match it.
        rotator = CertRotator(client=client, namespace=settings.namespace, secret_name=VISIBILITY_SECRET,
                              dns_names=dns, ip_addresses=("127.0.0.1",),
                              api_services=API_SERVICE_NAMES)  # one per served version
        app, context = await build_rotating_visibility_server(
            client, CorePendingWorkloads(manager.core), rotator, reviewers.authorizer)
        host, port = manager_cli.split_address(args.visibility_bind_address)
        runner, bound = await start_visibility(app, context, host, port)
        rotator.start()
        log.info("visibility API on %s:%d", host, bound)

        async def stop() -> None:
            await rotator.stop()
            await runner.cleanup()
        return stop
    return start


def dashboard_address(args: argparse.Namespace, config: dict[str, Any]) -> str | None:
    """Where the dashboard listens: the flag, else the Configuration's field, else nowhere."""
    section = config.get("dashboard") or {}
    return args.dashboard_bind_address or (section.get("bindAddress") if isinstance(section, dict) else None)


LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")


def dashboard_listen(address: str) -> tuple[str, int]:
    """The host and port of a dashboard address. Unlike the other servers', an address
    without a host (``:8084``, as the install's Configuration has it) is loopback only: the
    dashboard speaks plain HTTP, so it is reached by ``kubectl port-forward`` (which connects
    to the pod's loopback), and serving every interface takes a host named on purpose."""
    host, port = manager_cli.split_address(address)
    return ("127.0.0.1" if not address.rpartition(":")[0] else host), port


def dashboard_tls(cert_dir: str | None) -> ssl.SSLContext:
    """The dashboard's server context when it is exposed: the pair in ``cert_dir``, else a
    self-signed one (kept in that directory, or in memory only), as for /metrics."""
    return manager_cli.serving_context(cert_dir)


def _dashboard(args: argparse.Namespace, settings: manager_cli.Settings) -> manager_cli.ManagerExtra | None:
    """The read-only web dashboard over the manager's core, on every replica (each keeps the
    same queues from its informers); callers authenticate with a bearer token."""
    address = dashboard_address(args, settings.config)
    if not address:
        return None
    from pykueue.manager.runtime.dashboard.changes import ChangeFeed
    from pykueue.manager.runtime.dashboard.server import make_app
    from pykueue.manager.runtime.dashboard.server import start as start_dashboard
    from pykueue.manager.runtime.metrics import ReplicaRole
    from pykueue.manager.scenario.explain import explain_record

    host, port = dashboard_listen(address)

    async def start(client: Any, manager: Any, reviewers: Reviewers) -> Callable[[], Awaitable[None]]:
        # Only the Lease holder evaluates workloads; a follower shows the reasons it stored.
        feed = ChangeFeed(manager.core, follower=lambda: manager.metrics.role is ReplicaRole.FOLLOWER)
        app = make_app(feed, reviewers.authenticator, reviewers.authorizer, explain_record)
        # Beyond loopback the session cookie and the sign-in's token cross a network: HTTPS.
        context = None if host in LOOPBACK_HOSTS else dashboard_tls(args.dashboard_cert_dir)
        runner, bound = await start_dashboard(app, host, port, context)
        log.info("dashboard on %s://%s:%d/", "http" if context is None else "https", host, bound)

        async def stop() -> None:
            await runner.cleanup()
        return stop
    return start


def api_access() -> tuple[ApiAccess, ...]:
    """What ``pykueue run --no-extender`` (the install's manager) asks of the API, as RBAC
    (``api.access``): the manager (with the reviews the dashboard and /metrics make), the
    webhook and the visibility API. The install's roles grant exactly this
    (``tests/unit/deploy``); the extender's are ``extender.kube_port.API_ACCESS``."""
    from pykueue.manager.runtime.visibility import assembly
    from pykueue.webhook import server as webhook_server

    return (*manager_cli.api_access(), *webhook_server.api_access(), *assembly.API_ACCESS)


def main(args: argparse.Namespace) -> int:
    configure_cli_logging(args.log_level)

    def run() -> int:
        settings = manager_cli.settings_from(args)
        extras = [e for e in (_webhook(args, settings), _extender(args, settings)) if e is not None]
        manager_extras = [e for e in (_visibility(args, settings), _dashboard(args, settings))
                          if e is not None]
        return manager_cli.serve(settings, tuple(extras), tuple(manager_extras))
    return exit_code(run)
