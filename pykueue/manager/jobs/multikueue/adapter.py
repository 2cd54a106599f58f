"""How a job kind travels to a worker cluster and how its status comes back (Kueue's
MultiKueueAdapter), as pure functions over wire dicts.

A job dispatched by MultiKueue exists twice: the user's object in the manager cluster,
suspended and with ``managedBy: kueue.x-k8s.io/multikueue`` (so neither pykueue nor the
kind's own controller runs it there), and a copy in the worker that won, with ``managedBy``
cleared so the worker's controller runs it, the origin label (whose manager made it, for
garbage collection) and the prebuilt Workload's name (the worker's pykueue runs it under the
Workload MultiKueue copied there instead of making its own): an annotation under the
WorkloadIdentifierAnnotations gate, a label without it, as Kueue's SetMultiKueueMeta writes
it. The copy's status is written back to the manager's object until it finishes.

Every kind differs only in where ``managedBy`` lives and what of the spec the worker's API
server would refuse (a Job's generated selector); :class:`SpecCopyAdapter` covers both.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pykueue.api import keys
from pykueue.api.wire import JSON, meta
from pykueue.manager.jobs.prebuilt import set_prebuilt_workload_name

# Labels the manager's API server or Kueue put on the manager's objects that must not travel.
_LOCAL_ONLY_LABELS = (keys.JOB_UID,)


class MultiKueueAdapter(Protocol):
    """What MultiKueue needs to know about one job kind."""

    def managed_by(self, job: Mapping[str, Any]) -> str | None:
        """The object's ``managedBy`` (None when unset)."""
        ...

    def remote_copy(
        self, job: Mapping[str, Any], workload_name: str, origin: str, *, identifier_annotations: bool = True
    ) -> JSON:
        """The object to create in the worker (``identifier_annotations``: the
        WorkloadIdentifierAnnotations gate, on by default, decides where the prebuilt name goes)."""
        ...

    def with_remote_status(self, local: Mapping[str, Any], remote: Mapping[str, Any]) -> JSON | None:
        """The local object carrying the remote one's status; None when they already agree."""
        ...


def clone_meta(obj: Mapping[str, Any], origin: str) -> JSON:
    """Name, namespace, labels and annotations for a copy in another cluster (nothing the
    API server owns: no uid, resourceVersion, owners or finalizers)."""
    m = meta(obj)
    labels = {k: v for k, v in (m.get("labels") or {}).items() if k not in _LOCAL_ONLY_LABELS}
    labels[keys.MULTIKUEUE_ORIGIN] = origin
    out: JSON = {"name": m.get("name"), "namespace": m.get("namespace"), "labels": labels}
    if m.get("annotations"):
        out["annotations"] = dict(m["annotations"])
    return out


def remote_workload(local: Mapping[str, Any], origin: str) -> JSON:
    """The copy of a manager Workload created in each candidate worker (same name and spec)."""
    return {"apiVersion": local.get("apiVersion") or f"{keys.GROUP}/v1beta2", "kind": "Workload",
            "metadata": clone_meta(local, origin), "spec": copy.deepcopy(dict(local.get("spec") or {}))}


@dataclass(frozen=True)
class SpecCopyAdapter:
    """A kind whose copy is its spec with ``managedBy`` cleared, and whose status is mirrored
    whole. ``switches`` is the path of the mapping holding ``managedBy`` (``spec`` for a Job,
    ``spec.runPolicy`` for a training job); ``scrub`` drops what the worker would reject."""

    switches: tuple[str, ...]
    scrub: Callable[[JSON], None] | None = None

    def _holder(self, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        current: Mapping[str, Any] = obj
        for part in self.switches:
            current = current.get(part) or {}
        return current

    def managed_by(self, job: Mapping[str, Any]) -> str | None:
        value = self._holder(job).get("managedBy")
        return str(value) if value else None

    def remote_copy(
        self, job: Mapping[str, Any], workload_name: str, origin: str, *, identifier_annotations: bool = True
    ) -> JSON:
        metadata = clone_meta(job, origin)
        set_prebuilt_workload_name(metadata, workload_name, identifier_annotations)
        out: JSON = {"apiVersion": job.get("apiVersion"), "kind": job.get("kind"), "metadata": metadata,
                     "spec": copy.deepcopy(dict(job.get("spec") or {}))}
        holder: JSON = out
        for part in self.switches:
            holder = holder.setdefault(part, {})
        holder.pop("managedBy", None)
        if self.scrub is not None:
            self.scrub(out)
        return out

    def with_remote_status(self, local: Mapping[str, Any], remote: Mapping[str, Any]) -> JSON | None:
        status = remote.get("status") or {}
        if not status or status == (local.get("status") or {}):
            return None
        out = copy.deepcopy(dict(local))
        out["status"] = copy.deepcopy(dict(status))
        return out
