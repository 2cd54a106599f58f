"""The dev cluster's CRD conversion stanzas: loopback URLs survive a re-apply of the CRDs."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.devcluster.addons import _keep_loopback_conversion

INSTALLED: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "clusterqueues.kueue.x-k8s.io"},
    "spec": {"conversion": {"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"name": "pykueue-webhook-service", "namespace": "pykueue-system",
                                     "path": "/convert"}},
        "conversionReviewVersions": ["v1"]}}},
}


def _live(client_config: dict[str, Any]) -> dict[str, Any]:
    live = copy.deepcopy(INSTALLED)
    live["spec"]["conversion"]["webhook"]["clientConfig"] = client_config
    return live


def _client_config(doc: dict[str, Any]) -> dict[str, Any]:
    return dict(doc["spec"]["conversion"]["webhook"]["clientConfig"])


def test_a_registered_loopback_url_and_its_ca_are_kept() -> None:
    doc = copy.deepcopy(INSTALLED)
    _keep_loopback_conversion(doc, _live({"url": "https://127.0.0.1:4443/convert", "caBundle": "Q0E="}))
    assert _client_config(doc) == {"url": "https://127.0.0.1:4443/convert", "caBundle": "Q0E="}
    assert doc["spec"]["conversion"]["webhook"]["conversionReviewVersions"] == ["v1"]


def test_the_install_service_reference_stays_when_nothing_was_registered() -> None:
    for live in (None, _live({"service": {"name": "pykueue-webhook-service", "namespace": "pykueue-system"},
                              "caBundle": "Q0E="})):
        doc = copy.deepcopy(INSTALLED)
        _keep_loopback_conversion(doc, live)
        assert _client_config(doc) == _client_config(INSTALLED)


def test_crds_without_a_conversion_webhook_are_left_alone() -> None:
    doc: dict[str, Any] = {"kind": "CustomResourceDefinition",
                           "metadata": {"name": "pytorchjobs.kubeflow.org"},
                           "spec": {"conversion": {"strategy": "None"}}}
    before = copy.deepcopy(doc)
    _keep_loopback_conversion(doc, _live({"url": "https://127.0.0.1:4443/convert"}))
    assert doc == before
