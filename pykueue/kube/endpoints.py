"""HTTP(S) endpoints every process serves the same way: ``/metrics``, the ``/healthz`` and
``/readyz`` probes, TLS server contexts and starting a site.

Kueue serves metrics on ``:8443`` (HTTPS) and probes on ``:8081``; both apps come from one
factory so a test or a small deployment may also serve them together. The metrics page is
whatever exposition the process hands in, so this module knows no metric; who may read it
is decided by the guard the process hands in too (the manager's checks a bearer token with
kube-apiserver, which this layer cannot know of), while the probes stay open. Both are served
under limits of their own (:data:`METRICS_LIMITS`, :data:`PROBE_LIMITS`; ``kube.http_limits``). Readiness is
pluggable: each component (informer sync, webhook certs, leader state...) registers a named
check, and ``/readyz`` fails while any check fails, naming it -- the way controller-runtime
reports ``[-]name failed``.
"""

from __future__ import annotations

import gzip
import inspect
import ssl
from collections.abc import Awaitable, Callable
from typing import Protocol

from aiohttp import web

from pykueue.kube import tls_policy
from pykueue.kube.http_limits import KiB, Listener, ServerLimits, serve

Check = Callable[[], bool | Awaitable[bool]]
Guard = Callable[[web.Request], Awaitable[web.Response | None]]
"""Decides whether a request may go on: ``None`` lets it through, a response refuses it."""


class BadRequest(ValueError):
    """A request body that is not a well-formed message of its endpoint: HTTP 400 with this text."""


class Exposition(Protocol):
    """Anything that renders a Prometheus text page (the manager's ``KueueMetrics``)."""

    def exposition(self) -> bytes: ...

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# The fastest level: the page's repeated label sets compress about 30:1 at it already.
GZIP_LEVEL = 1


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an ``Accept-Encoding`` header admits gzip (named or ``*``, without ``q=0``)."""
    for item in accept_encoding.split(","):
        coding, *params = (part.strip().lower() for part in item.split(";"))
        if coding not in ("gzip", "*"):
            continue
        q = next((p.removeprefix("q=") for p in params if p.startswith("q=")), "1")
        try:
            return float(q) > 0
        except ValueError:
            return False
    return False
    return False

# Scrapers and kubelets send GETs without bodies and keep a connection or two each: a few
# dozen at once is already a crowd. Probes have limits of their own (they are served on their
# own port by default), so a flood of /metrics, each costing a token review, cannot use up the
# room the kubelet's liveness probes need.
METRICS_LIMITS = ServerLimits(name="metrics", max_body_bytes=4 * KiB, max_connections=128,
                              max_in_flight=16, max_buffered_bytes=64 * KiB, json_bodies=False,
                              header_timeout_s=10.0, body_timeout_s=5.0, keepalive_s=30.0)
PROBE_LIMITS = ServerLimits(name="probes", max_body_bytes=4 * KiB, max_connections=128,
                            max_in_flight=32, max_buffered_bytes=128 * KiB, json_bodies=False,
                            header_timeout_s=10.0, body_timeout_s=5.0, keepalive_s=30.0)


class HealthChecks:
    def __init__(self) -> None:
        self.liveness: dict[str, Check] = {"ping": lambda: True}
        self.readiness: dict[str, Check] = {"ping": lambda: True}

    def add_liveness(self, name: str, check: Check) -> None:
        self.liveness[name] = check

    def add_readiness(self, name: str, check: Check) -> None:
        self.readiness[name] = check

    @staticmethod
    async def evaluate(checks: dict[str, Check]) -> dict[str, bool]:
        results: dict[str, bool] = {}
        for name, check in checks.items():
            try:
                outcome = check()
                results[name] = bool(await outcome if inspect.isawaitable(outcome) else outcome)
            except Exception:
                results[name] = False
        return results


def _probe_handler(health: HealthChecks, live: bool) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        results = await HealthChecks.evaluate(health.liveness if live else health.readiness)
        ok = all(results.values())
        if "verbose" in request.query or not ok:
            lines = [f"[{'+' if passed else '-'}]{name} {'ok' if passed else 'failed'}"
                     for name, passed in results.items()]
            lines.append("healthz check passed" if ok else "healthz check failed")
            return web.Response(status=200 if ok else 500, text="\n".join(lines) + "\n")
        return web.Response(text="ok")
    return handle


def build_app(metrics: Exposition | None = None, health: HealthChecks | None = None,
              metrics_guard: Guard | None = None) -> web.Application:
    """An app serving whichever of ``/metrics`` and the probes it is given; ``metrics_guard``
    is asked before each ``/metrics`` answer, and its refusal is the answer."""
    app = web.Application()
    if metrics is not None:
        async def serve_metrics(request: web.Request) -> web.Response:
            if metrics_guard is not None and (refused := await metrics_guard(request)) is not None:
                return refused
            body = metrics.exposition()
            headers = {"Content-Type": PROMETHEUS_CONTENT_TYPE, "Vary": "Accept-Encoding"}
            if accepts_gzip(request.headers.get("Accept-Encoding", "")):
                # As Kueue's (Go's promhttp) handler does for a scraper that asks: at 1,000
                # ClusterQueues the page is about 22 MB of text and 0.7 MB compressed.
                body = gzip.compress(body, compresslevel=GZIP_LEVEL)
                headers["Content-Encoding"] = "gzip"
            return web.Response(body=body, headers=headers)
        app.router.add_get("/metrics", serve_metrics)
    if health is not None:
        app.router.add_get("/healthz", _probe_handler(health, live=True))
        app.router.add_get("/readyz", _probe_handler(health, live=False))
    return app


def server_ssl_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    context = tls_policy.server_context()
    context.load_cert_chain(cert_file, key_file)
    return context


def _plain_refusal(status: int, reason: str) -> web.Response:
    return web.Response(status=status, text=reason + "\n")


async def start_site(app: web.Application, host: str, port: int, *, cert_file: str | None = None,
                     key_file: str | None = None, ssl_context: ssl.SSLContext | None = None,
                     limits: ServerLimits = PROBE_LIMITS) -> tuple[Listener, int]:
    """Serve ``app`` under ``limits`` (HTTPS when a certificate or a context is given);
    returns the listener and the bound port.

    Stop with ``await listener.cleanup()``. Port 0 binds a free port (tests).
    """
    context = ssl_context or (server_ssl_context(cert_file, key_file or cert_file) if cert_file else None)
    listener = await serve(app, host, port, limits, ssl_context=context, render=_plain_refusal)
    return listener, listener.port
