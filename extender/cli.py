"""``pykueue extender``: serve the TAS scheduler extender alone, over mutual TLS.

Reads cluster credentials from ``--kubeconfig`` (or the in-cluster service account when
omitted, else ``$KUBECONFIG``), builds the app with ``make_app`` and serves until interrupted.
Callers must present a client certificate of ``--client-ca-file`` issued to one of
``--allowed-client`` (``pykueue run`` keeps such a pair for the TAS scheduler itself; this
command takes files, e.g. for a scheduler outside the cluster). The scheduler's calls go
over HTTP/2 when its client offers it, others' over HTTP/1.1 (``extender.server``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from pathlib import Path

from certs.rotation import require_client_certificates, server_context
from extender.app import ExtenderDeps, make_app
from extender.kube_port import KubeClusterPort
from extender.server import serve
from kube.client import connect
from kube.event_loop import run_main
from kube.logging import configure_cli_logging
from kube.startup import check_kubeconfig, exit_code, starting

TAS_SCHEDULER = "pykueue-tas-scheduler"
# kube-scheduler binds concurrently; a few kept-alive API connections serve that, where a
# pool as wide as the burst would open (and TLS-handshake) one per concurrent bind.
API_CONNECTIONS = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=8888, help="HTTP port (default 8888)")
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default all)")
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig file; in-cluster config when omitted")
    parser.add_argument("--prefix", default="", help="path prefix of the verbs, e.g. /tas")
    parser.add_argument("--tls-cert-file", required=True, help="serving certificate (PEM)")
    parser.add_argument("--tls-private-key-file", required=True, help="its private key (PEM)")
    parser.add_argument("--client-ca-file", required=True,
                        help="CA that issued the callers' client certificates")
    parser.add_argument("--allowed-client", action="append", default=None,
                        help="common name a caller's certificate must carry (repeatable; "
                             f"default {TAS_SCHEDULER!r})")
    parser.add_argument("--scheduler-name", default=TAS_SCHEDULER,
                        help="bind only pods of this scheduler profile")
    parser.add_argument("--log-level", default="INFO")


async def _serve(args: argparse.Namespace) -> None:
    check_kubeconfig(args.kubeconfig)
    with starting("loading the kubeconfig"):
        # Its own client and rate limit: kube-scheduler's binds go through here.
        kube = await connect(args.kubeconfig, max_connections=API_CONNECTIONS)
    async with kube:
        allowed = frozenset(args.allowed_client or (TAS_SCHEDULER,))
        app = make_app(ExtenderDeps(port=KubeClusterPort(kube), prefix=args.prefix, freeze_gc=True,
                                    allowed_clients=allowed, scheduler_name=args.scheduler_name))
        # One access-log line per filter/bind call is a measurable share of the
        # extender's CPU per scheduled pod; keep it for --log-level DEBUG only.
        access_log = logging.getLogger("aiohttp.access") if args.log_level.upper() == "DEBUG" else None
        # The library's errors for these files do not always name the file: the step does.
        cert, key = Path(args.tls_cert_file), Path(args.tls_private_key_file)
        with starting(f"--tls-cert-file {cert}, --tls-private-key-file {key}"):
            context = server_context(cert, key)
        with starting(f"--client-ca-file {args.client_ca_file}"):
            require_client_certificates(context, Path(args.client_ca_file).read_bytes())
        with starting(f"listening on {args.host}:{args.port}"):
            server = await serve(app, args.host, args.port, context, access_log=access_log)
        log = logging.getLogger(__name__)
        log.info("TAS extender listening on https://%s:%d%s for %s", args.host, args.port, args.prefix,
                 ", ".join(sorted(allowed)))
        try:
            await asyncio.Event().wait()
        finally:
            await server.stop()


def main(args: argparse.Namespace) -> int:
    configure_cli_logging(args.log_level)
    return exit_code(lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    with contextlib.suppress(KeyboardInterrupt):
        run_main(_serve(args))
    return 0
