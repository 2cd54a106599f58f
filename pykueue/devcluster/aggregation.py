"""Register an aggregated API served by a process on the host with the dev cluster.

kube-aggregator reaches an APIService through its Service. A normal Service cannot point at
127.0.0.1 (Endpoints and EndpointSlices reject loopback addresses), but with
``--enable-aggregator-routing=false`` (see ``components.py``) the aggregator resolves a
Service of type ExternalName to ``<externalName>:<APIService port>`` directly, without
endpoints. So a host process listening on ``localhost:<port>`` is registered as an
ExternalName Service ``localhost`` plus an APIService naming that port. The aggregator then
verifies the serving certificate for ``<service>.<namespace>.svc`` against ``caBundle``.

``pykueue dev up`` and the e2e tests apply these objects; they are plain dicts so callers
can use kubectl or an API client alike.
"""

from __future__ import annotations

import base64
from typing import Any

HOST_NAME = "localhost"


def host_service(namespace: str, name: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"type": "ExternalName", "externalName": HOST_NAME,
                 "ports": [{"name": "https", "port": port, "protocol": "TCP"}]},
    }


def api_service(group: str, version: str, namespace: str, service: str, port: int,
                ca_bundle_pem: bytes | None) -> dict[str, Any]:
    """The APIService; without a CA bundle the serving certificate is not verified."""
    spec: dict[str, Any] = {
        "group": group,
        "version": version,
        "service": {"namespace": namespace, "name": service, "port": port},
        # Kueue's values for its visibility API.
        "groupPriorityMinimum": 100,
        "versionPriority": 100,
    }
    if ca_bundle_pem is None:
        spec["insecureSkipTLSVerify"] = True
    else:
        spec["caBundle"] = base64.b64encode(ca_bundle_pem).decode()
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": f"{version}.{group}"}, "spec": spec}


def host_api_service_manifests(group: str, version: str, namespace: str, service: str, port: int,
                               ca_bundle_pem: bytes | None = None) -> list[dict[str, Any]]:
    """Namespace, ExternalName Service and APIService, in apply order."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        host_service(namespace, service, port),
        api_service(group, version, namespace, service, port, ca_bundle_pem),
    ]
