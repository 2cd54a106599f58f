"""Only the aggregator's verified front-proxy identity may assert who the user is."""

from __future__ import annotations

import ssl

import aiohttp
import pytest

from pykueue.manager.runtime.visibility import make_app
from pykueue.manager.runtime.visibility.auth import (
    AuthorizationDecision,
    RequestAttributes,
    RequestHeaderAuthenticator,
    RequestHeaderConfig,
    ReviewsThrottled,
    UserInfo,
    request_header_config_from_configmap,
    subject_access_review,
)
from pykueue.manager.runtime.visibility.server import start
from pykueue.manager.runtime.visibility.tls import ServingCertificate, server_ssl_context
from tests.component.visibility.conftest import (
    FRONT_PROXY_CLIENT,
    VIEWER_HEADERS,
    VIEWERS,
    Identities,
    InMemoryProvider,
    Server,
)

PATH = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"


@pytest.fixture(autouse=True)
def a_queue(server: Server) -> None:
    server.provider.cluster_queues["cq"] = []


async def test_without_client_certificate_is_401_even_with_headers(server: Server) -> None:
    status, body = await server.get(PATH, None, VIEWER_HEADERS)
    assert status == 401
    assert isinstance(body, dict) and body["reason"] == "Unauthorized"


async def test_certificate_not_allowed_to_assert_identities_is_401(server: Server,
                                                                   identities: Identities) -> None:
    status, _ = await server.get(PATH, identities.other_client_same_ca, VIEWER_HEADERS)
    assert status == 401


async def test_certificate_from_another_ca_is_refused(server: Server, identities: Identities) -> None:
    # Under TLS 1.3 the client learns of the rejection only when the server drops the connection.
    with pytest.raises((aiohttp.ClientError, ssl.SSLError)):
        await server.get(PATH, identities.foreign_client, VIEWER_HEADERS)


async def test_front_proxy_without_user_header_is_401(server: Server, identities: Identities) -> None:
    status, _ = await server.get(PATH, identities.front_proxy_client, {"X-Remote-Group": VIEWERS})
    assert status == 401


async def test_authenticated_but_not_authorized_is_403(server: Server, identities: Identities) -> None:
    status, body = await server.get(PATH, identities.front_proxy_client,
                                    {"X-Remote-User": "mallory", "X-Remote-Group": "system:authenticated"})
    assert status == 403
    assert isinstance(body, dict) and body["reason"] == "Forbidden"
    assert 'User "mallory"' in body["message"]


async def test_discovery_also_needs_authentication(server: Server) -> None:
    status, _ = await server.get("/apis", None)
    assert status == 401


async def test_health_needs_no_credentials(server: Server) -> None:
    assert await server.get("/healthz", None) == (200, "ok")
    assert await server.get("/readyz", None) == (200, "ok")


def test_configmap_of_kube_apiserver_is_parsed() -> None:
    config = request_header_config_from_configmap({
        "requestheader-client-ca-file": "PEM",
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
    })
    assert config == RequestHeaderConfig("PEM", ("front-proxy-client",))
    with pytest.raises(ValueError, match="aggregation layer"):
        request_header_config_from_configmap({"client-ca-file": "PEM"})


def test_extra_headers_become_user_extra() -> None:
    authenticator = RequestHeaderAuthenticator(RequestHeaderConfig("PEM", ("front-proxy-client",)))
    peer = {"subject": ((("commonName", "front-proxy-client"),),)}
    user = authenticator.authenticate(peer, {"X-Remote-User": "bob", "X-Remote-Extra-Scopes%2Fa": "x"})
    assert user == UserInfo("bob", ("system:authenticated",), {"scopes/a": ("x",)})
    assert authenticator.authenticate({"subject": ((("commonName", "intruder"),),)},
                                      {"X-Remote-User": "bob"}) is None


def test_an_authenticated_user_is_in_system_authenticated_as_kubernetes_adds_it() -> None:
    # The aggregator asks for /apis and /openapi/v2 as system:aggregator with no group; the
    # cluster's system:discovery binding admits it only through system:authenticated.
    authenticator = RequestHeaderAuthenticator(RequestHeaderConfig("PEM", ("front-proxy-client",)))
    peer = {"subject": ((("commonName", "front-proxy-client"),),)}
    aggregator = authenticator.authenticate(peer, {"X-Remote-User": "system:aggregator"})
    assert aggregator is not None and aggregator.groups == ("system:authenticated",)
    team = authenticator.authenticate(peer, {"X-Remote-User": "al", "X-Remote-Group": "system:authenticated"})
    assert team is not None and team.groups == ("system:authenticated",)
    anonymous = authenticator.authenticate(peer, {"X-Remote-User": "system:anonymous"})
    assert anonymous is not None and anonymous.groups == ()


def test_subject_access_review_names_the_subresource() -> None:
    review = subject_access_review(
        UserInfo("alice", ("team",)),
        RequestAttributes(verb="get", path="/p", resource="localqueues", subresource="pendingworkloads",
                          name="lq", namespace="ns", group="visibility.kueue.x-k8s.io", version="v1beta2"))
    attributes = review["spec"]["resourceAttributes"]
    wanted = {"resource": "localqueues", "subresource": "pendingworkloads", "namespace": "ns", "name": "lq"}
    assert wanted.items() <= attributes.items()
    assert review["spec"]["user"] == "alice" and review["spec"]["groups"] == ["team"]
    discovery = subject_access_review(UserInfo("alice"), RequestAttributes(verb="get", path="/apis"))
    assert discovery["spec"]["nonResourceAttributes"] == {"path": "/apis", "verb": "get"}
    assert "resourceAttributes" not in discovery["spec"]


@pytest.mark.parametrize(("failure", "code", "reason"), [
    (ConnectionError("kube-apiserver is away"), 503, "ServiceUnavailable"),
    (TimeoutError(), 503, "ServiceUnavailable"),
    (ReviewsThrottled("too many"), 429, "TooManyRequests")])
async def test_an_authorizer_that_cannot_answer_is_a_503_or_429_status(
        identities: Identities, serving: ServingCertificate, failure: Exception, code: int,
        reason: str) -> None:
    class Failing:
        async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> AuthorizationDecision:
            raise failure

    config = RequestHeaderConfig(client_ca_pem=identities.front_proxy_ca.cert_pem.decode(),
                                 allowed_names=(FRONT_PROXY_CLIENT,))
    provider = InMemoryProvider(cluster_queues={"cq": []})
    runner, port = await start(make_app(provider, RequestHeaderAuthenticator(config), Failing()),
                               server_ssl_context(serving, config.client_ca_pem))
    try:
        server = Server(f"https://127.0.0.1:{port}", serving, provider)
        status, body = await server.get(PATH, identities.front_proxy_client, VIEWER_HEADERS)
    finally:
        await runner.cleanup()
    assert status == code and isinstance(body, dict) and body["reason"] == reason
