"""``pykueue extender``: serve the TAS scheduler extender alone, over mutual TLS.

Reads cluster credentials from ``--kubeconfig`` (or the in-cluster service account when
omitted, else ``$KUBECONFIG``), builds the app with ``make_app`` and serves until interrupted.
Callers must present a client certificate issued to one of ``--allowed-client``. Two ways
to hold the certificates:

- ``--cert-secret NAME``: the extender keeps them itself, in Secrets of ``--namespace``
  (``extender.certificates``: a CA of its own, the serving pair in ``NAME``, the first allowed
  client's pair in ``--client-secret`` for the scheduler to mount), renewed as the webhook's
  are; every replica shares the CA through the Secret. The install runs it so.
- ``--tls-cert-file``, ``--tls-private-key-file`` and ``--client-ca-file``: files made
  elsewhere, e.g. for a scheduler outside the cluster.

The scheduler's calls go over HTTP/2 when its client offers it, others' over HTTP/1.1
(``extender.server``). ``--health-probe-bind-address`` serves ``/healthz`` and ``/readyz``
over plain HTTP for the kubelet (the extender's own port asks every caller for a certificate).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import ssl
import sys
from pathlib import Path

from pykueue.certs.rotation import CertRotator, require_client_certificates, server_context
from pykueue.extender import certificates
from pykueue.extender.app import ExtenderDeps, make_app
from pykueue.extender.kube_port import KubeClusterPort
from pykueue.extender.server import serve
from pykueue.kube.client import KubeClient, connect
from pykueue.kube.endpoints import HealthChecks, build_app, start_site
from pykueue.kube.event_loop import run_main
from pykueue.kube.logging import configure_cli_logging
from pykueue.kube.startup import check_kubeconfig, exit_code, starting

TAS_SCHEDULER = certificates.TAS_SCHEDULER_CLIENT
# kube-scheduler binds concurrently; a few kept-alive API connections serve that, where a
# pool as wide as the burst would open (and TLS-handshake) one per concurrent bind.
API_CONNECTIONS = 8
FILE_FLAGS = ("tls_cert_file", "tls_private_key_file", "client_ca_file")

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=8888, help="HTTPS port (default 8888)")
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default all)")
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig file; in-cluster config when omitted")
    parser.add_argument("--prefix", default="", help="path prefix of the verbs, e.g. /tas")
    parser.add_argument("--cert-secret", default=None, metavar="NAME",
                        help="keep a CA, the serving pair and the scheduler's client pair in Secrets "
                             "of --namespace, this one holding the serving pair (the install's: "
                             f"{certificates.SERVER_SECRET!r}); instead of the three TLS files")
    parser.add_argument("--namespace", default=certificates.NAMESPACE,
                        help=f"namespace of the Secrets and the Service (default {certificates.NAMESPACE!r})")
    parser.add_argument("--client-secret", default=certificates.TAS_SCHEDULER_CLIENT_SECRET,
                        help="with --cert-secret: the Secret of the first allowed client's pair "
                             f"(default {certificates.TAS_SCHEDULER_CLIENT_SECRET!r})")
    parser.add_argument("--service-name", default=certificates.SERVICE,
                        help="with --cert-secret: the Service whose DNS names the serving certificate "
                             f"carries (default {certificates.SERVICE!r})")
    parser.add_argument("--tls-cert-file", help="serving certificate (PEM), without --cert-secret")
    parser.add_argument("--tls-private-key-file", help="its private key (PEM)")
    parser.add_argument("--client-ca-file", help="CA that issued the callers' client certificates")
    parser.add_argument("--allowed-client", action="append", default=None,
                        help="common name a caller's certificate must carry (repeatable; "
                             f"default {TAS_SCHEDULER!r})")
    parser.add_argument("--scheduler-name", default=TAS_SCHEDULER,
                        help="bind only pods of this scheduler profile")
    parser.add_argument("--health-probe-bind-address", default=None, metavar="HOST:PORT",
                        help="serve /healthz and /readyz over plain HTTP here (default: not served)")
    parser.add_argument("--log-level", default="INFO")


def check_tls_source(args: argparse.Namespace) -> str | None:
    """Why the certificate flags do not name one source, or None when they do."""
    files = [f"--{name.replace('_', '-')}" for name in FILE_FLAGS if getattr(args, name)]
    if args.cert_secret is not None:
        return f"--cert-secret and {', '.join(files)} exclude each other" if files else None
    if len(files) < len(FILE_FLAGS):
        missing = [f"--{name.replace('_', '-')}" for name in FILE_FLAGS if not getattr(args, name)]
        return f"either --cert-secret or all of the TLS files are needed (missing {', '.join(missing)})"
    return None


def _file_context(args: argparse.Namespace) -> ssl.SSLContext:
    # The library's errors for these files do not always name the file: the step does.
    cert, key = Path(args.tls_cert_file), Path(args.tls_private_key_file)
    with starting(f"--tls-cert-file {cert}, --tls-private-key-file {key}"):
        context = server_context(cert, key)
    with starting(f"--client-ca-file {args.client_ca_file}"):
        require_client_certificates(context, Path(args.client_ca_file).read_bytes())
    return context


async def _secret_rotator(args: argparse.Namespace, kube: KubeClient, client_name: str) -> CertRotator:
    rotator = certificates.secret_rotator(kube, args.namespace, secret=args.cert_secret,
                                          service=args.service_name, client_secret=args.client_secret,
                                          client_name=client_name)
    with starting(f"keeping the certificates in Secrets {args.namespace}/{args.cert_secret} and "
                  f"{args.namespace}/{args.client_secret}"):
        await rotator.reconcile()
    return rotator


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "0.0.0.0", int(port)


async def _serve(args: argparse.Namespace) -> None:
    check_kubeconfig(args.kubeconfig)
    with starting("loading the kubeconfig"):
        # Its own client and rate limit: kube-scheduler's binds go through here.
        kube = await connect(args.kubeconfig, max_connections=API_CONNECTIONS)
    async with kube, contextlib.AsyncExitStack() as stack:
        allowed = args.allowed_client or [TAS_SCHEDULER]
        app = make_app(ExtenderDeps(port=KubeClusterPort(kube), prefix=args.prefix, freeze_gc=True,
                                    allowed_clients=frozenset(allowed), scheduler_name=args.scheduler_name))
        # One access-log line per filter/bind call is a measurable share of the
        # extender's CPU per scheduled pod; keep it for --log-level DEBUG only.
        access_log = logging.getLogger("aiohttp.access") if args.log_level.upper() == "DEBUG" else None
        rotator = None if args.cert_secret is None else await _secret_rotator(args, kube, allowed[0])
        context = _file_context(args) if rotator is None else rotator.context
        assert context is not None  # a reconciled rotator serves its pair
        health = HealthChecks()
        if rotator is not None:
            health.add_readiness("certificates", lambda: rotator.ready)
            rotator.start()
            stack.push_async_callback(rotator.stop)
        with starting(f"listening on {args.host}:{args.port}"):
            server = await serve(app, args.host, args.port, context, access_log=access_log)
        stack.push_async_callback(server.stop)
        if args.health_probe_bind_address:
            host, port = _split(args.health_probe_bind_address)
            with starting(f"listening for probes on {host}:{port}"):
                probes, _ = await start_site(build_app(health=health), host, port)
            stack.push_async_callback(probes.cleanup)
        log.info("TAS extender listening on https://%s:%d%s for %s (%s)", args.host, server.port, args.prefix,
                 ", ".join(sorted(allowed)),
                 "certificates from files" if rotator is None
                 else f"certificates kept in Secret {args.namespace}/{args.cert_secret}")
        await asyncio.Event().wait()


def main(args: argparse.Namespace) -> int:
    configure_cli_logging(args.log_level)
    problem = check_tls_source(args)
    if problem is not None:
        print(f"pykueue extender: {problem}", file=sys.stderr)
        return 2
    return exit_code(lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    with contextlib.suppress(KeyboardInterrupt):
        run_main(_serve(args))
    return 0
