"""Kubernetes Events as values: what happened to which object, worded as Kueue words it.

The decision to record an event is made where the thing happens (a status transition of a
Workload, an action of the job reconciler) and is a plain :class:`EventRecord`. Sending it
(``events.k8s.io/v1``, aggregation into series, rate limits) is the platform's business
(``kube.events``). This module sits at the bottom so both sides can name the value without
the decisions knowing anything of HTTP, or the sender anything of queueing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from pykueue.api.wire import JSON, meta

NORMAL: Final = "Normal"
WARNING: Final = "Warning"

# events.k8s.io/v1 refuses a note longer than this many bytes; Kueue cuts its messages to
# fit with a trailing " ..." (its TruncateEventMessage).
NOTE_LIMIT: Final = 1024
_ELLIPSIS: Final = " ..."


@dataclass(frozen=True)
class ObjectReference:
    """The object an event is about (``regarding``): enough for ``kubectl describe`` to find it."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""

    @classmethod
    def of(cls, obj: Mapping[str, Any], *, with_version: bool = True) -> ObjectReference:
        """The reference to a Kubernetes object dict (``with_version``: pin its resourceVersion)."""
        m = meta(obj)
        return cls(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""), str(m.get("name") or ""),
                   str(m.get("namespace") or ""), str(m.get("uid") or ""),
                   str(m.get("resourceVersion") or "") if with_version else "")

    def to_wire(self) -> JSON:
        out: JSON = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        for key, value in (("namespace", self.namespace), ("uid", self.uid),
                           ("resourceVersion", self.resource_version)):
            if value:
                out[key] = value
        return out

    @property
    def identity(self) -> str:
        """What tells this object apart from every other, namesakes included: its UID if known."""
        return self.uid or f"{self.api_version}/{self.kind}/{self.namespace}/{self.name}"


@dataclass(frozen=True)
class EventRecord:
    """One event to record. ``action`` defaults to the reason (Kueue passes the same string
    for most of its events); ``reporter`` is Kueue's ``reportingController`` for the
    component that acted (``kueue-admission``, ``kueue-workload-controller``, ...)."""

    regarding: ObjectReference
    reason: str
    note: str
    reporter: str
    type: str = NORMAL
    action: str = ""

    @property
    def event_action(self) -> str:
        return self.action or self.reason


class EventSink(Protocol):
    """Where decisions hand their events over: must return at once (no I/O in the caller)."""

    def record(self, event: EventRecord) -> None: ...


class DiscardEvents:
    """A sink for callers built without a recorder (tests, ``simulate``)."""

    def record(self, event: EventRecord) -> None:
        return None


def record_all(sink: EventSink, events: Iterable[EventRecord]) -> None:
    for event in events:
        sink.record(event)


def truncate_note(note: str) -> str:
    """The note cut to the API's limit the way Kueue cuts it (counted in UTF-8 bytes, which
    is what the API counts; a character split by the cut is dropped)."""
    raw = note.encode()
    if len(raw) <= NOTE_LIMIT:
        return note
    return raw[:NOTE_LIMIT - len(_ELLIPSIS)].decode(errors="ignore") + _ELLIPSIS
