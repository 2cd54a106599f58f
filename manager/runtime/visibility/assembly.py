"""Wiring the visibility server to a cluster: what ``pykueue run`` calls at start-up.

Reads the aggregator's requestheader configuration from kube-apiserver, makes the serving
certificate, builds the application with SubjectAccessReview authorization, and can write
the certificate into the APIService's ``caBundle`` so the aggregator verifies the server
instead of skipping TLS verification.
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import Sequence
from dataclasses import dataclass

from aiohttp import web
from kubernetes_asyncio.client import ApiClient, ApiregistrationV1Api

from api.keys import VISIBILITY_GROUP
from manager.runtime.visibility.auth import (
    RequestHeaderAuthenticator,
    SubjectAccessReviewAuthorizer,
    load_request_header_config,
)
from manager.runtime.visibility.discovery import VERSION, VERSIONS
from manager.runtime.visibility.provider import PendingWorkloadsProvider
from manager.runtime.visibility.server import make_app
from manager.runtime.visibility.tls import (
    DEFAULT_DNS_NAMES,
    ServingCertificate,
    self_signed_serving_certificate,
    server_ssl_context,
)

API_SERVICE_NAME = f"{VERSION}.{VISIBILITY_GROUP}"
# One APIService per served version, all pointing at this server.
API_SERVICE_NAMES = tuple(f"{v}.{VISIBILITY_GROUP}" for v in VERSIONS)


@dataclass(frozen=True)
class VisibilityServer:
    app: web.Application
    serving: ServingCertificate
    client_ca_pem: str

    def ssl_context(self) -> ssl.SSLContext:
        return server_ssl_context(self.serving, self.client_ca_pem)


async def build_visibility_server(api: ApiClient, provider: PendingWorkloadsProvider,
                                  dns_names: Sequence[str] = DEFAULT_DNS_NAMES,
                                  serving: ServingCertificate | None = None) -> VisibilityServer:
    """``serving`` is the certificate to present (default: a fresh self-signed one)."""
    request_header = await load_request_header_config(api)
    serving = serving or self_signed_serving_certificate(tuple(dns_names))
    app = make_app(provider, RequestHeaderAuthenticator(request_header), SubjectAccessReviewAuthorizer(api))
    return VisibilityServer(app, serving, request_header.client_ca_pem)


async def inject_ca_bundle(api: ApiClient, serving: ServingCertificate, name: str = API_SERVICE_NAME,
                           ca_pem: bytes | None = None) -> None:
    """Point the APIService's trust at ``ca_pem`` (default: this server's own self-signed
    certificate); needs ``patch`` on it."""
    ca_bundle = base64.b64encode(ca_pem or serving.cert_pem).decode()
    patch = {"spec": {"caBundle": ca_bundle, "insecureSkipTLSVerify": False}}
    await ApiregistrationV1Api(api).patch_api_service(name, patch)
