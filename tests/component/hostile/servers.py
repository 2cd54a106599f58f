"""Every pykueue server on loopback in one process, as ``pykueue run`` composes them.

``python -m tests.component.hostile.servers DIR GOOD_TOKEN`` writes the key material clients
need into DIR, starts the webhook, extender, visibility API, dashboard, metrics and probes on
free ports of 127.0.0.1 (each through its own start function, with its real TLS and limits)
on the production event loop, logs at DEBUG to stderr, and prints one JSON line with the
ports. A control port answers ``GET /stats`` (the reviews kube-apiserver got, each
listener's counters, cache and session sizes, resident memory) for the suite's assertions.
Only the kube-apiserver side is fake (:mod:`.fake_apiserver`), as in the other component tests.
"""

from __future__ import annotations

import asyncio
import gc
import json
import signal
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

from pykueue.certs.authority import ensure_bundle, issue_client, issue_serving, new_ca, self_signed_serving
from pykueue.certs.rotation import require_client_certificates, server_context, write_pair
from pykueue.extender.app import ExtenderDeps
from pykueue.extender.app import make_app as extender_app
from pykueue.extender.server import serve as serve_extender
from pykueue.kube.client import KubeClient
from pykueue.kube.connection import Connection
from pykueue.kube.endpoints import METRICS_LIMITS, HealthChecks, build_app, start_site
from pykueue.kube.event_loop import run_main
from pykueue.kube.http_limits import Listener
from pykueue.kube.kubeconfig import ClientConfig
from pykueue.kube.logging import configure_cli_logging
from pykueue.kube.ratelimit import TokenBucket
from pykueue.manager.runtime.cli import REVIEW_BURST, REVIEW_QPS
from pykueue.manager.runtime.dashboard.changes import ChangeFeed
from pykueue.manager.runtime.dashboard.server import SESSIONS
from pykueue.manager.runtime.dashboard.server import make_app as dashboard_app
from pykueue.manager.runtime.dashboard.server import start as start_dashboard
from pykueue.manager.runtime.metrics import KueueMetrics
from pykueue.manager.runtime.metrics_auth import cluster_metrics_guard
from pykueue.manager.runtime.token_review import CachedAuthorizer, CachedTokenAuthenticator, cluster_reviewers
from pykueue.manager.runtime.visibility import RequestHeaderAuthenticator
from pykueue.manager.runtime.visibility import make_app as visibility_app
from pykueue.manager.runtime.visibility.auth import RequestHeaderConfig
from pykueue.manager.runtime.visibility.server import start as start_visibility
from pykueue.manager.runtime.visibility.tls import self_signed_serving_certificate, server_ssl_context
from pykueue.manager.scenario.explain import explain_record
from pykueue.webhook.app import WebhookDeps
from pykueue.webhook.app import make_app as webhook_app
from pykueue.webhook.server import serve_webhook
from tests.component.extender.scenario import build_cluster
from tests.component.visibility.conftest import FRONT_PROXY_CLIENT, InMemoryProvider
from tests.component.visibility.conftest import issue_client as proxy_client
from tests.component.visibility.conftest import make_ca as proxy_ca
from tests.component.visibility.conftest import workload as pending_workload
from tests.unit.dashboard.fixture import world

from . import fake_apiserver

SCHEDULER = "pykueue-tas-scheduler"


def _write(directory: Path, name: str, data: bytes) -> str:
    path = directory / name
    path.write_bytes(data)
    return str(path)


def _memory() -> dict[str, int]:
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines()
                  if ":" in line)
    return {key: int(fields[key].split()[0]) * 1024 for key in ("VmRSS", "VmHWM") if key in fields}


async def _serve(directory: Path, good_token: str) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    listeners: dict[str, Listener] = {}

    reviews = fake_apiserver.Reviews(good_token)
    api_runner = web.AppRunner(fake_apiserver.make_app(reviews), access_log=None)
    await api_runner.setup()
    api_site = web.TCPSite(api_runner, "127.0.0.1", 0)
    await api_site.start()
    api = Connection(ClientConfig(host=f"http://127.0.0.1:{api_runner.addresses[0][1]}"))
    reviewers = cluster_reviewers(KubeClient(api, TokenBucket(REVIEW_QPS, REVIEW_BURST)))

    # Webhook: a serving pair of its own CA, as the rotator keeps it.
    bundle, _ = ensure_bundle(None, ["localhost"], ["127.0.0.1"])
    cert, key = write_pair(directory / "webhook", bundle)
    listeners["webhook"] = await serve_webhook(webhook_app(WebhookDeps()), "127.0.0.1", 0,
                                               server_context(cert, key))

    # Extender: mutual TLS, only the TAS scheduler's certificate may call.
    ca_crt, ca_key = new_ca()
    serving = issue_serving(ca_crt, ca_key, ["localhost"], ["127.0.0.1"])
    context = server_context(Path(_write(directory, "extender.crt", serving[0])),
                             Path(_write(directory, "extender.key", serving[1])))
    require_client_certificates(context, ca_crt)
    _write(directory, "extender-ca.crt", ca_crt)
    for name in (SCHEDULER, "intruder"):
        client_crt, client_key = issue_client(ca_crt, ca_key, name)
        _write(directory, f"extender-{name}.crt", client_crt)
        _write(directory, f"extender-{name}.key", client_key)
    extender = await serve_extender(
        extender_app(ExtenderDeps(port=build_cluster(), allowed_clients=frozenset({SCHEDULER}))),
        "127.0.0.1", 0, context)
    listeners["extender"] = extender.listener

    # Visibility: the aggregator's front-proxy CA and client; access decided by SubjectAccessReview.
    front_ca, front_key, front_cert = proxy_ca("hostile-front-proxy-ca")
    front_client = proxy_client(front_key, front_cert, FRONT_PROXY_CLIENT)
    _write(directory, "front-proxy-client.crt", front_client.cert_pem)
    _write(directory, "front-proxy-client.key", front_client.key_pem)
    visibility_serving = self_signed_serving_certificate()
    _write(directory, "visibility.crt", visibility_serving.cert_pem)
    provider = InMemoryProvider(cluster_queues={"cq": [pending_workload(f"w{i}", "lq") for i in range(5)]},
                                local_queues={("team-a", "lq"): "cq"})
    header_config = RequestHeaderConfig(client_ca_pem=front_ca.cert_pem.decode(),
                                        allowed_names=(FRONT_PROXY_CLIENT,))
    listeners["visibility"], _ = await start_visibility(
        visibility_app(provider, RequestHeaderAuthenticator(header_config), reviewers.authorizer),
        server_ssl_context(visibility_serving, header_config.client_ca_pem), "127.0.0.1", 0)

    # Dashboard: plain HTTP on loopback, the process's reviewers.
    feed = ChangeFeed(world().core)
    dashboard = dashboard_app(feed, reviewers.authenticator, reviewers.authorizer, explain_record)
    listeners["dashboard"], _ = await start_dashboard(dashboard, "127.0.0.1", 0)

    # Metrics over HTTPS (a self-signed pair, as --metrics-secure makes) and the probes.
    metrics_pair = self_signed_serving("localhost", ["localhost"], ["127.0.0.1"])
    metrics = KueueMetrics()
    metrics.report_pending("cq", 5, 1)
    listeners["metrics"], _ = await start_site(
        build_app(metrics, metrics_guard=cluster_metrics_guard(reviewers)), "127.0.0.1", 0,
        cert_file=_write(directory, "metrics.crt", metrics_pair[0]),
        key_file=_write(directory, "metrics.key", metrics_pair[1]), limits=METRICS_LIMITS)
    listeners["probes"], _ = await start_site(build_app(health=HealthChecks()), "127.0.0.1", 0)

    async def stats(_: web.Request) -> web.Response:
        gc.collect()
        authenticator, authorizer = reviewers.authenticator, reviewers.authorizer
        assert isinstance(authenticator, CachedTokenAuthenticator)
        assert isinstance(authorizer, CachedAuthorizer)
        tokens, decisions = authenticator.reviews, authorizer.reviews
        return web.json_response({
            "token_reviews": reviews.token_reviews, "access_reviews": reviews.access_reviews,
            "distinct_reviewed_tokens": len(reviews.distinct_tokens),
            "cached_tokens": len(tokens.positive_cache) + len(tokens.negative_cache),
            "cached_decisions": len(decisions.positive_cache) + len(decisions.negative_cache),
            "sessions": len(dashboard[SESSIONS]),
            "listeners": {name: vars(listener.stats) for name, listener in listeners.items()},
            "memory": _memory(),
        })

    control = web.Application()
    control.router.add_get("/stats", stats)
    control_runner = web.AppRunner(control, access_log=None)
    await control_runner.setup()
    await web.TCPSite(control_runner, "127.0.0.1", 0).start()

    ports: dict[str, Any] = {name: listener.port for name, listener in listeners.items()}
    ports["control"] = control_runner.addresses[0][1]
    print(json.dumps(ports), flush=True)
    await stop.wait()
    await extender.stop()
    for name, listener in listeners.items():
        if name != "extender":
            await listener.cleanup()
    await control_runner.cleanup()
    await api.close()
    await api_runner.cleanup()


def main() -> None:
    directory, good_token = Path(sys.argv[1]), sys.argv[2]
    (directory / "webhook").mkdir(parents=True, exist_ok=True)
    configure_cli_logging("DEBUG")
    run_main(_serve(directory, good_token))


if __name__ == "__main__":
    main()
