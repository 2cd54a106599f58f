"""``pykueue webhook``: the admission webhook alone (``pykueue run`` composes it with the rest)."""

from __future__ import annotations

import argparse
import asyncio
import signal

from pykueue.api.config import DEFAULT_NAMESPACE
from pykueue.kube.client import connect
from pykueue.kube.config_file import load_config
from pykueue.kube.event_loop import run_main
from pykueue.kube.logging import configure_cli_logging
from pykueue.kube.startup import check_kubeconfig, exit_code, starting
from pykueue.webhook import server


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig file; in-cluster config when omitted")
    parser.add_argument("--config", default=None, help="Kueue Configuration YAML (defaults when absent)")
    parser.add_argument("--log-level", default="INFO")
    server.add_arguments(parser)


def main(args: argparse.Namespace) -> int:
    configure_cli_logging(args.log_level)
    return exit_code(lambda: _serve(args))


def _serve(args: argparse.Namespace) -> int:
    with starting(f"--config {args.config}"):
        config = load_config(args.config)
        settings = server.settings_from(args, config, str(config.get("namespace") or DEFAULT_NAMESPACE))

    async def run() -> None:
        stop_event = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop_event.set)
        check_kubeconfig(args.kubeconfig)
        with starting("loading the kubeconfig"):
            client = await connect(args.kubeconfig)
        try:
            with starting("starting against the API server"):
                stop, _ = await server.start_webhook(client, settings)
            await stop_event.wait()
            await stop()
        finally:
            await client.close()

    run_main(run())
    return 0
