"""Objects a kind's rules read besides the job itself: the capability :class:`ReadsRelated`.

Most kinds turn a job into Workloads, start it and judge it from the job alone. A few cannot:
a TrainJob's pod sets come from the training runtime it names. Their rules stay pure all the
same; the I/O happens at the edges, where the caller already reads the cluster:

* the lifecycle declares the kinds of object it may read (:attr:`ReadsRelated.related_kinds`)
  and which ones one job refers to (:meth:`ReadsRelated.needs`, keys of the shape the
  ancestor walk uses: apiVersion, kind, namespace, name);
* the caller looks those up -- the job reconciler in informers of the related kinds, the
  webhook in its lookups, ``simulate`` in the scenario's objects -- and hands them in:
  :meth:`ReadsRelated.bind` gives the lifecycle that reads them, and a kind's
  ``to_workloads`` takes them as its second argument. A key looked up and not found maps to
  None;
* a rule that needs one that is not there raises :class:`RelatedMissing`. The reconciler
  does not get that far: a job whose related objects are not all found is retried with
  backoff and nothing else is done for it, as Kueue's reconciler fails the whole reconcile
  when it cannot build the job's pod sets.

The related kinds also give the reconciler its informers, the webhook its GETs and the
install its RBAC rows (``get``, ``list``, ``watch``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol, Self, runtime_checkable

from pykueue.api.wire import JSON
from pykueue.manager.core.objects import ObjectError

RelatedKey = tuple[str, str, str, str]
"""(apiVersion, kind, namespace, name) of a related object; the namespace is "" for a
cluster-scoped one."""

Related = Mapping[RelatedKey, JSON | None]
"""The related objects a caller found for one job, by key (None: looked up, not found)."""

NO_RELATED: Related = MappingProxyType({})


@dataclass(frozen=True)
class RelatedKind:
    """A kind of object some job kind's rules read."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def key(self, name: str, namespace: str = "") -> RelatedKey:
        return self.api_version, self.kind, namespace if self.namespaced else "", name

    def key_of(self, obj: Mapping[str, Any]) -> RelatedKey:
        """The key of an object of this kind (a listed item may carry no apiVersion/kind)."""
        m = obj.get("metadata") or {}
        return self.key(str(m.get("name") or ""), str(m.get("namespace") or ""))


class RelatedMissing(ObjectError):
    """A rule needs a related object that was not found (the caller retries later)."""

    def __init__(self, key: RelatedKey, what: str = "") -> None:
        shown = f"{key[1]} {key[2] + '/' if key[2] else ''}{key[3]}"
        super().__init__(what or f"{shown} not found")
        self.key = key


def found(related: Related, key: RelatedKey, what: str = "") -> JSON:
    """The related object of ``key``; raises :class:`RelatedMissing` (with ``what`` as its
    message, when given) when it was not found or not looked up."""
    obj = related.get(key)
    if obj is None:
        raise RelatedMissing(key, what)
    return obj


def missing(related: Related, needed: Iterable[RelatedKey]) -> list[RelatedKey]:
    return [key for key in needed if related.get(key) is None]


@runtime_checkable
class ReadsRelated(Protocol):
    """A lifecycle whose rules read objects besides the job (see the module docstring)."""

    @property
    def related_kinds(self) -> tuple[RelatedKind, ...]:
        """Every kind of object it may read."""
        ...

    def needs(self, job: Mapping[str, Any]) -> tuple[RelatedKey, ...]:
        """The related objects this job refers to (none when it names none it can use)."""
        ...

    def bind(self, related: Related) -> Self:
        """The same lifecycle, reading ``related`` (the found objects of :meth:`needs`)."""
        ...


def related_kinds_of(lifecycles: Iterable[object]) -> tuple[RelatedKind, ...]:
    """The related kinds of these lifecycles, each once, in their order."""
    out: dict[RelatedKind, None] = {}
    for lc in lifecycles:
        if isinstance(lc, ReadsRelated):
            out.update(dict.fromkeys(lc.related_kinds))
    return tuple(out)


def resolve(lc: object, job: Mapping[str, Any], lookup: Mapping[RelatedKey, JSON | None]) -> Related:
    """What ``lookup`` (every related object the caller knows) holds of what ``job`` needs."""
    if not isinstance(lc, ReadsRelated):
        return NO_RELATED
    return {key: lookup.get(key) for key in lc.needs(job)}
