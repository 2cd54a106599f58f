"""Who is asking, and may they: delegated authentication and authorization.

Behind the aggregation layer the caller is kube-apiserver itself. It connects with the
front-proxy client certificate and names the real user in ``X-Remote-User`` /
``X-Remote-Group`` / ``X-Remote-Extra-*``. Those headers are only trusted when the TLS
client certificate chains to the requestheader CA (checked by the TLS layer) and its common
name is in the allowed list (checked here); anything else is unauthenticated. The CA, names
and header names come from ConfigMap ``kube-system/extension-apiserver-authentication``,
which kube-apiserver publishes for exactly this purpose.

Authorization is delegated to kube-apiserver with a SubjectAccessReview, so cluster RBAC
(Kueue's ``pending-workloads-*-viewer`` roles) decides.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.kube.client import KubeClient
from pykueue.kube.resources import CONFIG_MAPS

AUTHENTICATION_CONFIGMAP_NAMESPACE = "kube-system"
AUTHENTICATION_CONFIGMAP_NAME = "extension-apiserver-authentication"
# The calls below, as RBAC (``api.access``): the requestheader ConfigMap is read (granted by
# Kubernetes' own Role ``extension-apiserver-authentication-reader``, which the install
# binds in kube-system), and each request is authorized with a SubjectAccessReview.
SUBJECT_ACCESS_REVIEWS = ApiAccess("authorization.k8s.io", "subjectaccessreviews", ("create",))
API_ACCESS: tuple[ApiAccess, ...] = (
    ApiAccess("", "configmaps", ("get",), names=(AUTHENTICATION_CONFIGMAP_NAME,),
              namespace=AUTHENTICATION_CONFIGMAP_NAMESPACE),
    SUBJECT_ACCESS_REVIEWS,
)


@dataclass(frozen=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class RequestHeaderConfig:
    client_ca_pem: str
    # Empty means any certificate signed by the CA is accepted (kube-apiserver's rule).
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = ("X-Remote-User",)
    group_headers: tuple[str, ...] = ("X-Remote-Group",)
    extra_headers_prefixes: tuple[str, ...] = ("X-Remote-Extra-",)


def _json_list(data: Mapping[str, str], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = data.get(key)
    if not raw:
        return default
    values = json.loads(raw)
    return tuple(str(v) for v in values) if values else default


def request_header_config_from_configmap(data: Mapping[str, str]) -> RequestHeaderConfig:
    ca = data.get("requestheader-client-ca-file")
    if not ca:
        raise ValueError(f"{AUTHENTICATION_CONFIGMAP_NAMESPACE}/{AUTHENTICATION_CONFIGMAP_NAME} has no "
                         "requestheader-client-ca-file: the aggregation layer is not configured")
    return RequestHeaderConfig(
        client_ca_pem=ca,
        allowed_names=_json_list(data, "requestheader-allowed-names", ()),
        username_headers=_json_list(data, "requestheader-username-headers", ("X-Remote-User",)),
        group_headers=_json_list(data, "requestheader-group-headers", ("X-Remote-Group",)),
        extra_headers_prefixes=_json_list(data, "requestheader-extra-headers-prefix", ("X-Remote-Extra-",)),
    )


async def load_request_header_config(client: KubeClient) -> RequestHeaderConfig:
    configmap = await client.get(CONFIG_MAPS.object_path(AUTHENTICATION_CONFIGMAP_NAME,
                                                         AUTHENTICATION_CONFIGMAP_NAMESPACE))
    return request_header_config_from_configmap(configmap.get("data") or {})


def _common_names(peercert: Mapping[str, Any]) -> list[str]:
    # ``ssl.SSLSocket.getpeercert()`` shape: subject is a tuple of RDNs of (key, value) pairs.
    return [value for rdn in peercert.get("subject", ()) for key, value in rdn if key == "commonName"]


ANONYMOUS = "system:anonymous"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"


class RequestHeaderAuthenticator:
    def __init__(self, config: RequestHeaderConfig) -> None:
        self.config = config

    def authenticate(self, peercert: Mapping[str, Any] | None, headers: Mapping[str, str]) -> UserInfo | None:
        """The user named by the proxy headers, or None when they cannot be trusted.

        ``peercert`` must come from a TLS layer that verified the chain against the
        requestheader CA; an absent or empty one means no verified client certificate.
        """
        if not peercert:
            return None
        if self.config.allowed_names and not set(_common_names(peercert)) & set(self.config.allowed_names):
            return None
        name = next((headers[h] for h in self.config.username_headers if headers.get(h)), None)
        if not name:
            return None
        groups = tuple(value for header in self.config.group_headers
                       for value in _all_values(headers, header))
        # As every Kubernetes API server does (its authenticated-group adder): the
        # aggregator fetches /apis and /openapi as system:aggregator with no group, and the
        # cluster's default system:discovery binding is to system:authenticated. Without
        # it, discovery of this group fails and namespace deletion waits on it forever.
        if name != ANONYMOUS and not {AUTHENTICATED, UNAUTHENTICATED} & set(groups):
            groups = (*groups, AUTHENTICATED)
        extra: dict[str, tuple[str, ...]] = {}
        lowered_prefixes = [p.lower() for p in self.config.extra_headers_prefixes]
        for header in headers:
            lowered = header.lower()
            for prefix in lowered_prefixes:
                if lowered.startswith(prefix):
                    key = urllib.parse.unquote(lowered[len(prefix):])
                    extra[key] = tuple(_all_values(headers, header))
        return UserInfo(name=name, groups=groups, extra=extra)


def _all_values(headers: Mapping[str, str], header: str) -> list[str]:
    getall = getattr(headers, "getall", None)
    if getall is not None:
        return list(getall(header, []))
    value = headers.get(header)
    return [value] if value else []


@dataclass(frozen=True)
class RequestAttributes:
    """What is being asked for, in SubjectAccessReview terms."""

    verb: str
    path: str
    # Set for resource requests; None for discovery and other non-resource paths.
    resource: str | None = None
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    group: str = ""
    version: str = ""


@dataclass(frozen=True)
class AuthorizationDecision:
    allowed: bool
    reason: str = ""


class Authorizer(Protocol):
    async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> AuthorizationDecision:
        """The decision; raises when kube-apiserver cannot be asked, and
        :class:`ReviewsThrottled` when too many new questions are being asked (HTTP 429)."""
        ...


class ReviewsThrottled(Exception):
    """More new questions than the review budget allows right now (HTTP 429)."""


SUBJECT_ACCESS_REVIEWS_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def subject_access_review(user: UserInfo, attributes: RequestAttributes) -> JSON:
    spec: JSON = {"user": user.name, "groups": list(user.groups),
                  "extra": {k: list(v) for k, v in user.extra.items()}}
    if attributes.resource is None:
        spec["nonResourceAttributes"] = {"path": attributes.path, "verb": attributes.verb}
    else:
        resource = {"group": attributes.group, "version": attributes.version, "resource": attributes.resource,
                    "subresource": attributes.subresource, "name": attributes.name,
                    "namespace": attributes.namespace, "verb": attributes.verb}
        spec["resourceAttributes"] = {k: v for k, v in resource.items() if v is not None}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


class SubjectAccessReviewAuthorizer:
    """Asks kube-apiserver; needs ``create`` on ``subjectaccessreviews``."""

    def __init__(self, client: KubeClient, timeout_s: float = 5.0) -> None:
        self._client = client
        self._timeout_s = timeout_s

    async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> AuthorizationDecision:
        review = await self._client.request("POST", SUBJECT_ACCESS_REVIEWS_PATH,
                                            body=subject_access_review(user, attributes),
                                            timeout_s=self._timeout_s)
        status = review.get("status") or {}
        return AuthorizationDecision(allowed=bool(status.get("allowed")),
                                     reason=str(status.get("reason") or ""))


def allowed_by_groups(groups: Sequence[str]) -> Authorizer:
    """An authorizer that admits members of ``groups``; for a server without a cluster to ask."""

    class _GroupAuthorizer:
        async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> AuthorizationDecision:
            if set(user.groups) & set(groups):
                return AuthorizationDecision(True)
            return AuthorizationDecision(False, f"user is in none of {sorted(groups)}")

    return _GroupAuthorizer()
