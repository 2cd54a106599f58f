"""The DNS names of a Service, apart from :mod:`certs.authority` so that choosing names does
not load the cryptography library (about 8 MB) into processes that issue no certificate."""

from __future__ import annotations


def service_dns_names(service: str, namespace: str) -> tuple[str, ...]:
    """The names kube-apiserver may dial a Service by (it verifies ``<svc>.<ns>.svc``)."""
    base = f"{service}.{namespace}"
    return (service, base, f"{base}.svc", f"{base}.svc.cluster.local")
