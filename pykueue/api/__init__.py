"""Typed models of the kueue.x-k8s.io API and of the Kubernetes objects pykueue reads.

* ``api.fields``: the declarative field framework (``Model.from_dict``, ``to_dict``,
  ``with_defaults``; ``FieldError`` names the failing field path).
* One module per kind (``api.clusterqueue``, ``api.workload`` ...), ``api.meta`` for shared
  Kubernetes types and ``api.config`` for the manager Configuration file.
* ``api.registry``: (apiVersion, kind) -> model, and the plural/scope of each kind.
* ``api.wire``: the ``JSON`` alias for raw objects and their lenient ``meta()``.
* ``api.conversion``: v1beta1 <-> v1beta2 documents; ``api.validation``: declared bounds.
* ``api.schema`` / ``api.v1beta1`` / ``api.crdgen``: the CRDs generated from the models.

This package is the bottom layer and imports nothing else of pykueue.
"""
