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
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from manager.runtime import cli as manager_cli
from manager.runtime.endpoints import start_site

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    manager_cli.add_arguments(parser)
    parser.add_argument("--extender-bind-address", default="127.0.0.1:0",
                        help="host:port of the kube-scheduler extender (port 0 picks one)")
    from webhook import server as webhook_server
    webhook_server.add_arguments(parser)


def _webhook(args: argparse.Namespace, settings: manager_cli.Settings) -> manager_cli.Extra:
    # Started before the informers: readiness cannot pass before certs and caBundles are in place.
    from webhook import server as webhook_server

    webhook_settings = webhook_server.settings_from(args, settings.config, settings.namespace)

    async def start(client: Any) -> Callable[[], Awaitable[None]]:
        stop, _ = await webhook_server.start_webhook(client, webhook_settings)
        return stop
    return start


def _extender(address: str) -> manager_cli.Extra | None:
    try:
        app_module = importlib.import_module("extender.app")
        port_module = importlib.import_module("extender.kube_port")
    except ImportError as exc:
        log.info("extender skipped: %s", exc)
        return None

    async def start(_client: Any) -> Callable[[], Awaitable[None]]:
        # The extender speaks through its own kubernetes-asyncio port; it builds one from
        # the same kubeconfig the manager used.
        from kubernetes_asyncio import client as kclient

        api_client = kclient.ApiClient(configuration=_client._api.configuration)
        app: web.Application = app_module.make_app(app_module.ExtenderDeps(
            port=port_module.KubeClusterPort(api_client)))
        host, port = manager_cli.split_address(address)
        runner, bound = await start_site(app, host, port)
        log.info("extender on %s:%d", host, bound)

        async def stop() -> None:
            await runner.cleanup()
            await api_client.close()
        return stop
    return start


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = manager_cli.settings_from(args)
    extras = [e for e in (_webhook(args, settings), _extender(args.extender_bind_address)) if e is not None]
    for part in ("visibility",):
        log.info("%s skipped: not composed by pykueue run yet", part)
    return manager_cli.serve(settings, tuple(extras))
