"""Wiring the visibility server to a cluster: what ``pykueue run`` calls at start-up.

Reads the aggregator's requestheader configuration from kube-apiserver, builds the
application with SubjectAccessReview authorization and the TLS context it is served with.

``pykueue run`` uses :func:`build_rotating_visibility_server`: the serving pair comes from a
:class:`~certs.rotation.CertRotator` (a Secret shared by every replica), which reloads it into
the served context in place and keeps the APIServices' ``caBundle`` on the current CA, plus
the replaced one while replicas may still serve its certificate. :func:`build_visibility_server`
and :func:`inject_ca_bundle` are the fixed, self-signed variant (one process, no rotation).
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import Sequence
from dataclasses import dataclass

from aiohttp import web

from pykueue.api.access import ApiAccess
from pykueue.api.keys import VISIBILITY_GROUP
from pykueue.certs import rotation
from pykueue.certs.rotation import CertRotator
from pykueue.kube.client import KubeClient
from pykueue.manager.runtime.visibility import auth
from pykueue.manager.runtime.visibility.auth import (
    Authorizer,
    RequestHeaderAuthenticator,
    SubjectAccessReviewAuthorizer,
    load_request_header_config,
)
from pykueue.manager.runtime.visibility.discovery import VERSION, VERSIONS
from pykueue.manager.runtime.visibility.provider import PendingWorkloadsProvider
from pykueue.manager.runtime.visibility.server import make_app
from pykueue.manager.runtime.visibility.tls import (
    DEFAULT_DNS_NAMES,
    ServingCertificate,
    client_verifying_context,
    self_signed_serving_certificate,
    server_ssl_context,
)

API_SERVICE_NAME = f"{VERSION}.{VISIBILITY_GROUP}"
# One APIService per served version, all pointing at this server.
API_SERVICE_NAMES = tuple(f"{v}.{VISIBILITY_GROUP}" for v in VERSIONS)
# What the rotating server asks of the API, as RBAC (``api.access``): its rotator's Secret and
# the APIServices' caBundle (``pykueue run`` gives it ``API_SERVICE_NAMES``), and the
# requestheader ConfigMap and SubjectAccessReviews of ``auth``. (``inject_ca_bundle``, the
# fixed variant's, patches an APIService; ``pykueue run`` does not use it.)
API_ACCESS: tuple[ApiAccess, ...] = (*rotation.api_access(api_services=API_SERVICE_NAMES), *auth.API_ACCESS)


@dataclass(frozen=True)
class VisibilityServer:
    app: web.Application
    serving: ServingCertificate
    client_ca_pem: str

    def ssl_context(self) -> ssl.SSLContext:
        return server_ssl_context(self.serving, self.client_ca_pem)


async def build_visibility_server(client: KubeClient, provider: PendingWorkloadsProvider,
                                  dns_names: Sequence[str] = DEFAULT_DNS_NAMES,
                                  serving: ServingCertificate | None = None) -> VisibilityServer:
    """``serving`` is the certificate to present (default: a fresh self-signed one)."""
    request_header = await load_request_header_config(client)
    serving = serving or self_signed_serving_certificate(tuple(dns_names))
    app = make_app(provider, RequestHeaderAuthenticator(request_header),
                   SubjectAccessReviewAuthorizer(client))
    return VisibilityServer(app, serving, request_header.client_ca_pem)


async def build_rotating_visibility_server(client: KubeClient, provider: PendingWorkloadsProvider,
                                           rotator: CertRotator, authorizer: Authorizer | None = None,
                                           ) -> tuple[web.Application, ssl.SSLContext]:
    """The application and the context to serve it with, kept current by ``rotator``.

    The context verifies optional client certificates from the requestheader CA (as
    :func:`server_ssl_context` does); the rotator, given it before its first reconcile, loads
    the serving pair into it and reloads it in place on every rotation, so the listener
    never restarts. Give the rotator the APIService names (``api_services``): it then publishes
    the CAs there before it serves a certificate of a new one. Runs the first reconcile; the
    caller starts the rotator's loop. ``authorizer``: the process's cached one (default: a
    SubjectAccessReview per request).
    """
    if rotator.context is not None:
        raise ValueError("the rotator already has a context: it must get the visibility one")
    request_header = await load_request_header_config(client)
    rotator.context = client_verifying_context(request_header.client_ca_pem)
    await rotator.reconcile()
    app = make_app(provider, RequestHeaderAuthenticator(request_header),
                   authorizer or SubjectAccessReviewAuthorizer(client))
    return app, rotator.context


async def inject_ca_bundle(client: KubeClient, serving: ServingCertificate, name: str = API_SERVICE_NAME,
                           ca_pem: bytes | None = None) -> None:
    """Point the APIService's trust at ``ca_pem`` (default: this server's own self-signed
    certificate); needs ``patch`` on it."""
    ca_bundle = base64.b64encode(ca_pem or serving.cert_pem).decode()
    patch = {"spec": {"caBundle": ca_bundle, "insecureSkipTLSVerify": False}}
    await client.patch(f"/apis/apiregistration.k8s.io/v1/apiservices/{name}", patch)
