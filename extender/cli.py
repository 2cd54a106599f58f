"""``pykueue extender``: serve the TAS scheduler extender over HTTP.

Reads cluster credentials from ``--kubeconfig`` (or the in-cluster service account when
omitted, else ``$KUBECONFIG``), builds the app with ``make_app`` and serves until interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging

from aiohttp import web

from extender.app import ExtenderDeps, make_app
from extender.kube_port import KubeClusterPort
from kube.client import connect
from kube.event_loop import run_main


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=8888, help="HTTP port (default 8888)")
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default all)")
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig file; in-cluster config when omitted")
    parser.add_argument("--prefix", default="", help="path prefix of the verbs, e.g. /tas")
    parser.add_argument("--log-level", default="INFO")


async def _serve(args: argparse.Namespace) -> None:
    # Its own client and rate limit: kube-scheduler's binds go through here.
    async with await connect(args.kubeconfig) as kube:
        app = make_app(ExtenderDeps(port=KubeClusterPort(kube), prefix=args.prefix, freeze_gc=True))
        # One access-log line per filter/prioritize/bind call is a measurable share of the
        # extender's CPU per scheduled pod; keep it for --log-level DEBUG only.
        access_log = logging.getLogger("aiohttp.access") if args.log_level.upper() == "DEBUG" else None
        runner = web.AppRunner(app, access_log=access_log)
        await runner.setup()
        site = web.TCPSite(runner, args.host, args.port)
        await site.start()
        log = logging.getLogger(__name__)
        log.info("TAS extender listening on %s:%d%s", args.host, args.port, args.prefix)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        run_main(_serve(args))
    return 0
