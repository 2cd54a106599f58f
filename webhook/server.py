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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from api import keys
from certs.authority import service_dns_names
from certs.rotation import CertRotator
from kube import resources as res
from kube.informer import Informer
from manager.jobs.admission import AdmissionPolicy
from webhook.app import WebhookDeps, make_app
from webhook.facts import ApiLookup

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
DEFAULT_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"


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
    informers = {ref.kind: Informer(client, ref) for ref in FACT_KINDS}
    for informer in informers.values():
        informer.start()
    deps = WebhookDeps(
        policy=AdmissionPolicy.from_config(settings.config),
        lookup=ApiLookup(client, informers),
        ready=lambda: rotator.ready,
    )
    runner = web.AppRunner(make_app(deps), access_log=None)
    await runner.setup()
    host, port = split_address(settings.address)
    site = web.TCPSite(runner, host, port, ssl_context=rotator.context)
    await site.start()
    bound = int(runner.addresses[0][1]) if runner.addresses else port
    rotator.start()
    log.info("webhook on https://%s:%d", host, bound)

    async def stop() -> None:
        await rotator.stop()
        await runner.cleanup()
        for informer in informers.values():
            await informer.stop()

    return stop, bound
