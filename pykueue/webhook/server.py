"""Starting the webhook against a cluster: certificates first, then TLS, then requests.

Order matters for the apiserver: the serving pair and every caBundle must be in place before
anything reports ready, or creations would fail verification under ``failurePolicy: Fail``.
:func:`start_webhook` therefore returns only after the first :class:`CertRotator`
reconcile (Secret, files, caBundles) succeeded; ``pykueue run`` starts it before the
informers, so its readiness (informers synced) cannot turn true earlier. Rotation then runs
in the background and reloads the live TLS context in place.

Facts for job admission come from small informers of their own (Namespaces, LocalQueues,
WorkloadPriorityClasses, ClusterQueues, AdmissionChecks), with bounded GETs as fallback for
owners and for anything not synced yet.
"""

from __future__ import annotations

import argparse
import logging
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from pykueue.api import keys
from pykueue.api.access import ApiAccess
from pykueue.certs import rotation
from pykueue.certs.names import service_dns_names
from pykueue.certs.rotation import CertRotator
from pykueue.kube import resources as res
from pykueue.kube.client import KubeClient
from pykueue.kube.http_limits import KiB, Listener, MiB, ServerLimits, serve
from pykueue.kube.informer import Informer
from pykueue.kube.ratelimit import TokenBucket
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.webhook.app import WebhookDeps, make_app
from pykueue.webhook.facts import ApiLookup, owner_access, related_access
from pykueue.webhook.review import MAX_CONVERSION_BYTES, MAX_REVIEW_BYTES

log = logging.getLogger(__name__)

MUTATING_CONFIG = "pykueue-mutating-webhook-configuration"
VALIDATING_CONFIG = "pykueue-validating-webhook-configuration"
CONVERTED_CRDS = tuple(
    f"{plural}.{keys.GROUP}"
    for plural in (
        "admissionchecks",
        "clusterqueues",
        "cohorts",
        "localqueues",
        "multikueueclusters",
        "multikueueconfigs",
        "provisioningrequestconfigs",
        "resourceflavors",
        "topologies",
        "workloadpriorityclasses",
        "workloads",
    )
)
FACT_KINDS = (
    res.NAMESPACES,
    res.LOCAL_QUEUES,
    res.WORKLOAD_PRIORITY_CLASSES,
    res.CLUSTER_QUEUES,
    res.ADMISSION_CHECKS,
    res.RESOURCE_FLAVORS,  # a pod's implied topology (ClusterQueue of TAS flavors only)
)
# The calls of :func:`start_webhook`, as RBAC (``api.access``): an informer of each fact kind
# (a GET of one while it has not synced), and the rotator's Secret and named caBundle targets.
API_ACCESS: tuple[ApiAccess, ...] = (
    *(ref.access("get", "list", "watch") for ref in FACT_KINDS),
    *rotation.api_access(mutating=(MUTATING_CONFIG,), validating=(VALIDATING_CONFIG,), crds=CONVERTED_CRDS),
)


def api_access() -> tuple[ApiAccess, ...]:
    """:data:`API_ACCESS`, the GETs of the ancestor walk (``webhook.facts.owner_access``) and of
    the objects a kind's validation reads besides the job (``webhook.facts.related_access``)."""
    return (*API_ACCESS, *owner_access(), *related_access())
DEFAULT_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"

# The webhook's own API budget (fact lookups that miss the informers, and the informers).
LOOKUP_QPS = 20.0
LOOKUP_BURST = 40


def webhook_reads(client: KubeClient) -> KubeClient:
    """The client the webhook reads with: the same connections, a rate limit of its own.
    Crafted reviews that miss the informers must not spend the budget Lease renewals and
    status writes draw from (a starved renewal costs the leader its Lease)."""
    return client.sharing_pool(TokenBucket(LOOKUP_QPS, LOOKUP_BURST))

# Anyone in the cluster can reach :9443 (kube-apiserver has no client certificate for it), so
# these limits are what keeps a flood from the admission path. Bodies: see webhook.review.
# kube-apiserver opens a connection per concurrent call (HTTP/1.1): a burst of pod creations
# needs a few hundred; beyond the cap a caller gets 503 at once. 128 requests are handled at a
# time, a few milliseconds each; at most 32 MiB of bodies are held (one maximal conversion
# list, or a few maximal reviews, with every ordinary review beside them).
LIMITS = ServerLimits(
    name="webhook", max_body_bytes=MAX_REVIEW_BYTES, body_bytes_by_path=(("/convert", MAX_CONVERSION_BYTES),),
    max_connections=1024, max_in_flight=128, max_buffered_bytes=32 * MiB,
    header_timeout_s=10.0, body_timeout_s=10.0, keepalive_s=60.0, max_header_bytes=16 * KiB)


@dataclass(frozen=True)
class WebhookSettings:
    address: str = ":9443"
    cert_dir: str = DEFAULT_CERT_DIR
    namespace: str = "kueue-system"
    service_name: str = "pykueue-webhook-service"
    secret_name: str = "pykueue-webhook-server-cert"
    extra_ips: tuple[str, ...] = ()
    extra_dns: tuple[str, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--webhook-bind-address", default=":9443", help="host:port of the HTTPS webhook")
    parser.add_argument(
        "--webhook-cert-dir",
        default=None,
        help=f"where the serving pair is written (default: config's, else {DEFAULT_CERT_DIR})",
    )
    parser.add_argument(
        "--webhook-ip",
        action="append",
        default=[],
        help="extra IP SAN of the serving certificate (repeatable), e.g. 127.0.0.1",
    )


def settings_from(args: argparse.Namespace, config: Mapping[str, Any], namespace: str) -> WebhookSettings:
    certs = config.get("internalCertManagement") or {}
    return WebhookSettings(
        address=args.webhook_bind_address,
        cert_dir=args.webhook_cert_dir or (config.get("webhook") or {}).get("certDir") or DEFAULT_CERT_DIR,
        namespace=namespace,
        service_name=certs.get("webhookServiceName") or "pykueue-webhook-service",
        secret_name=certs.get("webhookSecretName") or "pykueue-webhook-server-cert",
        extra_ips=tuple(args.webhook_ip),
        config=dict(config),
    )


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "0.0.0.0", int(port)


async def serve_webhook(app: web.Application, host: str, port: int,
                        ssl_context: ssl.SSLContext | None) -> Listener:
    """Listen for ``app`` under the webhook's :data:`LIMITS` (port 0: a free one)."""
    return await serve(app, host, port, LIMITS, ssl_context=ssl_context,
                       render=lambda status, reason: web.json_response({"error": reason}, status=status))


async def start_webhook(client: Any, settings: WebhookSettings) -> tuple[Callable[[], Awaitable[None]], int]:
    """Serve the webhook; returns its stop function and the bound port."""
    rotator = CertRotator(
        client=client,
        namespace=settings.namespace,
        secret_name=settings.secret_name,
        dns_names=(*service_dns_names(settings.service_name, settings.namespace), *settings.extra_dns),
        ip_addresses=settings.extra_ips,
        cert_dir=Path(settings.cert_dir),
        mutating=(MUTATING_CONFIG,),
        validating=(VALIDATING_CONFIG,),
        crds=CONVERTED_CRDS,
    )
    await rotator.reconcile()
    reads = webhook_reads(client)
    informers = {ref.kind: Informer(reads, ref) for ref in FACT_KINDS}
    for informer in informers.values():
        informer.start()
    deps = WebhookDeps(
        policy=AdmissionPolicy.from_config(settings.config),
        lookup=ApiLookup(reads, informers),
        ready=lambda: rotator.ready,
    )
    host, port = split_address(settings.address)
    listener = await serve_webhook(make_app(deps), host, port, rotator.context)
    bound = listener.port
    rotator.start()
    log.info("webhook on https://%s:%d", host, bound)

    async def stop() -> None:
        await rotator.stop()
        await listener.cleanup()
        for informer in informers.values():
            await informer.stop()

    return stop, bound
