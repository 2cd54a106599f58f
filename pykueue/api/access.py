"""What pykueue's code asks of kube-apiserver, as values: the rows its install's RBAC grants.

Every module that calls the API states what it calls next to the calls, as a table of
:class:`ApiAccess` rows named ``API_ACCESS`` (or a function ``api_access`` where the rows
follow from a registry the code itself walks: the job kinds, the owner kinds of the ancestor
walk). ``pykueue.run.api_access`` gathers the tables of every part ``pykueue run`` composes,
and ``tests/unit/deploy/test_rbac_covers_code_paths.py`` checks that the install's roles grant
exactly their union: every row granted, no grant without a row.

A grant that no call makes but that the API still demands (Kubernetes'
OwnerReferencesPermissionEnforcement admission plugin asks for ``update`` on
``<owner>/finalizers`` before it admits an object whose owner reference blocks the owner's
deletion, and for ``delete`` on an object whose owner references change) is a row too, with
``why`` saying so. This module sits at the bottom so every layer can name the value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

EVERY_NAMESPACE: Final = ""
"""Cluster-scoped objects, or namespaced ones in any namespace: the ClusterRole grants it."""

OWN_NAMESPACE: Final = "(pykueue's namespace)"
"""Only in the namespace pykueue runs in (its Leases, its certificate and kubeconfig
Secrets): a Role in that namespace grants it."""

VERBS: Final = frozenset({"get", "list", "watch", "create", "update", "patch", "delete"})


@dataclass(frozen=True)
class ApiAccess:
    """Verbs one code path uses on one API resource (``group``, ``resource``: the plural, or
    ``plural/subresource``), limited to the objects ``names`` when it only ever addresses
    those, in ``namespace`` (:data:`EVERY_NAMESPACE`, :data:`OWN_NAMESPACE` or a namespace's
    name)."""

    group: str
    resource: str
    verbs: tuple[str, ...]
    names: tuple[str, ...] = ()
    namespace: str = EVERY_NAMESPACE
    why: str = ""
    """Set when the grant is needed for something other than a call: the reason."""

    def __post_init__(self) -> None:
        unknown = set(self.verbs) - VERBS
        if unknown or not self.verbs:
            raise ValueError(f"{self.resource}: verbs must be some of {sorted(VERBS)}, not {self.verbs}")

    @property
    def plural(self) -> str:
        return self.resource.partition("/")[0]

    @property
    def subresource(self) -> str:
        return self.resource.partition("/")[2]
