"""Pure helpers for starting and stopping a batch/v1 Job on admission and eviction.

Kueue starts an admitted job by unsuspending it and merging, per podset, the assigned
flavors' ``nodeLabels`` into the pod template's ``nodeSelector`` (and the flavors'
tolerations into its tolerations), plus the ``kueue.x-k8s.io/podset`` label. Stopping
suspends it again and restores the template from the Workload's own podset template,
which is the job's template as it was when the Workload was created: no extra state is
needed to undo a start. Returning JSON values (not performing I/O) keeps this testable.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from api import keys

JSON = dict[str, Any]


def condition_true(obj: Mapping[str, Any], kind: str) -> bool:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            return bool(cond.get("status") == "True")
    return False


def job_finished(job: Mapping[str, Any]) -> str | None:
    """``Succeeded``/``Failed`` once the Job controller says the job is done, else None."""
    if condition_true(job, "Complete"):
        return keys.Reason.SUCCEEDED
    if condition_true(job, "Failed"):
        return keys.Reason.FAILED
    return None


def queue_name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str((meta.get("labels") or {}).get(keys.QUEUE_NAME)
               or (meta.get("annotations") or {}).get(keys.QUEUE_NAME_ANNOTATION) or "")


def is_admitted(workload: Mapping[str, Any]) -> bool:
    return condition_true(workload, keys.WorkloadCondition.ADMITTED) and bool(
        (workload.get("status") or {}).get("admission"))


def _flavor_info(flavors: Mapping[str, Mapping[str, Any]],
                 names: list[str]) -> tuple[dict[str, str], list[JSON]]:
    labels: dict[str, str] = {}
    tolerations: list[JSON] = []
    for name in names:
        spec = (flavors.get(name) or {}).get("spec") or {}
        labels.update({str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()})
        for tol in spec.get("tolerations") or ():
            if tol not in tolerations:
                tolerations.append(dict(tol))
    return labels, tolerations


def started_template(template: Mapping[str, Any], podset: str, flavor_names: list[str],
                     flavors: Mapping[str, Mapping[str, Any]]) -> JSON:
    """The pod template of an admitted podset: flavor node labels, tolerations, podset label."""
    out = copy.deepcopy(dict(template))
    meta = out.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), keys.PODSET: podset}
    spec = out.setdefault("spec", {})
    node_labels, tolerations = _flavor_info(flavors, flavor_names)
    if node_labels:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **node_labels}
    if tolerations:
        existing = list(spec.get("tolerations") or [])
        spec["tolerations"] = existing + [t for t in tolerations if t not in existing]
    return out


def assigned_flavors(workload: Mapping[str, Any], podset: str) -> list[str]:
    """Flavor names of one podset's assignment, in resource order, without repeats."""
    for psa in ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ():
        if (psa.get("name") or "main") == podset:
            return list(dict.fromkeys(str(f) for f in (psa.get("flavors") or {}).values()))
    return []


def workload_template(workload: Mapping[str, Any], podset: str) -> JSON | None:
    for ps in (workload.get("spec") or {}).get("podSets") or ():
        if ps.get("name") == podset:
            return dict(ps.get("template") or {})
    return None


def start_job(job: Mapping[str, Any], workload: Mapping[str, Any],
              flavors: Mapping[str, Mapping[str, Any]]) -> JSON:
    """The Job (full object, same resourceVersion) unsuspended with the admitted template."""
    out = copy.deepcopy(dict(job))
    spec = out.setdefault("spec", {})
    base = workload_template(workload, "main") or spec.get("template") or {}
    spec["template"] = started_template(base, "main", assigned_flavors(workload, "main"), flavors)
    spec["suspend"] = False
    return out


def stop_job(job: Mapping[str, Any]) -> JSON:
    """The Job suspended; the template is restored in a second write (see ``restore_template``)."""
    out = copy.deepcopy(dict(job))
    out.setdefault("spec", {})["suspend"] = True
    return out


def restore_template(job: Mapping[str, Any], workload: Mapping[str, Any]) -> JSON | None:
    """The suspended Job with the Workload's original template back, or None when nothing differs.

    Only the scheduling directives the API lets us change on a suspended job are restored:
    node selector, tolerations, labels and annotations.
    """
    original = workload_template(workload, "main")
    if original is None:
        return None
    current = (job.get("spec") or {}).get("template") or {}
    out_template = copy.deepcopy(dict(current))
    o_spec, o_meta = original.get("spec") or {}, original.get("metadata") or {}
    t_spec = out_template.setdefault("spec", {})
    t_meta = out_template.setdefault("metadata", {})
    for field, src, dst in (("nodeSelector", o_spec, t_spec), ("tolerations", o_spec, t_spec),
                            ("labels", o_meta, t_meta), ("annotations", o_meta, t_meta)):
        if src.get(field):
            dst[field] = copy.deepcopy(src[field])
        else:
            dst.pop(field, None)
    if out_template == current:
        return None
    out = copy.deepcopy(dict(job))
    out["spec"]["template"] = out_template
    return out


def template_started(job: Mapping[str, Any]) -> bool:
    labels = ((((job.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {})
    return keys.PODSET in labels
