"""The pod sets of an AppWrapper's components, as the AppWrapper API (v1.2.2) defines them.

An AppWrapper (workload.codeflare.dev/v1beta2) wraps whole Kubernetes objects in
``spec.components[].template``. Each component's pod sets are those it declares
(``podSets[]``: a ``path`` into the component to a pod template, and ``replicas``, default 1);
a component that declares none gets them inferred from its kind: a batch Job's template with
``min(parallelism, completions)`` pods, a JobSet's replicated jobs, a PyTorchJob's Master and
Worker, a RayCluster's or RayJob's head and worker groups, a Pod, a Deployment's or
StatefulSet's template with its ``replicas``. Once the AppWrapper controller has seen an
AppWrapper it records those pod sets in ``status.componentStatus[].podSets``, and that record
wins over the spec from then on (the AppWrapper's webhook keeps the spec's components
immutable, so the two agree).

A path is ``template`` followed by ``.field`` and ``[index]`` steps. The template of a pod set
is the part of the pod template Kueue's Workload keeps, with the API server's defaults filled
in where the AppWrapper library fills them (so a Workload built before and after the wrapped
object exists is the same).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pykueue.api.quantity import Quantity, QuantityError
from pykueue.api.wire import JSON
from pykueue.manager.jobs.job_fields import get_path

TEMPLATE = "template"
# The pod index label an inferred pod set names for Kueue's topology placement.
TAS_POD_INDEX_LABEL = "workload.codeflare.dev.appwrapper/tas-pod-index-label"
TAS_SUB_GROUP_INDEX_LABEL = "workload.codeflare.dev.appwrapper/tas-sub-group-index-label"
TAS_SUB_GROUP_COUNT = "workload.codeflare.dev.appwrapper/tas-sub-group-count"
_JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
_JOBSET_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
_PYTORCH_REPLICA_INDEX = "training.kubeflow.org/replica-index"

_STEP = re.compile(r"\.([^.\[]+)|\[([^\]]*)\]")


class PathError(ValueError):
    """A pod set path that does not lead to a pod template of the component."""


def value_at(obj: Mapping[str, Any], path: str) -> Any:
    """The value ``path`` names inside a component (its leading ``template`` is the component)."""
    if not path.startswith(TEMPLATE):
        raise PathError("first element of the path must be 'template'")
    cursor: Any = obj
    rest = path[len(TEMPLATE):]
    done = TEMPLATE
    while rest:
        step = _STEP.match(rest)
        if step is None:
            raise PathError(f"at path position '{done}' invalid path element '{rest}'")
        key, index = step.group(1), step.group(2)
        if key is not None:
            if not isinstance(cursor, Mapping):
                raise PathError(f"at path position '{done}.' non-map value")
            if key not in cursor:
                raise PathError(f"at path position '{done}.' missing field '{key}'")
            cursor = cursor[key]
        else:
            if not re.fullmatch(r"-?\d+", index or ""):
                raise PathError(f"at path position '{done}' invalid index expression '{index}'")
            if not isinstance(cursor, list):
                raise PathError(f"at path position '{done}' found non-array value")
            i = int(index)
            if not 0 <= i < len(cursor):
                raise PathError(f"at path position '{done}' out of bounds index '{i}'")
            cursor = cursor[i]
        done += step.group(0)
        rest = rest[step.end():]
    return cursor


def _int_at(root: Mapping[str, Any], path: str) -> int | None:
    try:
        value = value_at(root, path)
    except PathError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _replicas_at(root: Mapping[str, Any], path: str) -> int:
    """A replica count: 1 when the field is absent; a non-integer is an error."""
    parent, _, name = path.rpartition(".")
    holder = value_at(root, parent) if parent else root
    if not isinstance(holder, Mapping):
        raise PathError(f"at path position '{parent}' non-map value")
    value = holder.get(name)
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int):
        raise PathError(f"at path position '{path}' non-int value {value}")
    return value


def _pod_set(replicas: int, path: str, annotations: Mapping[str, str] | None = None) -> JSON:
    ps: JSON = {"replicas": replicas, "path": path}
    if annotations:
        ps["annotations"] = dict(annotations)
    return ps


def _ray_pod_sets(root: Mapping[str, Any], prefix: str) -> list[JSON]:
    sets = [_pod_set(1, prefix + "headGroupSpec.template")]
    try:
        workers = value_at(root, prefix + "workerGroupSpecs")
    except PathError:
        workers = None
    for i in range(len(workers) if isinstance(workers, list) else 0):
        group = f"{prefix}workerGroupSpecs[{i}]."
        try:
            value_at(root, group + TEMPLATE)
        except PathError:
            continue
        sets.append(_pod_set(_replicas_at(root, group + "replicas"), group + TEMPLATE))
    return sets


_SIMPLE = {("", "v1", "Pod"): (TEMPLATE, ""),
           ("apps", "v1", "Deployment"): ("template.spec.template", "template.spec.replicas"),
           ("apps", "v1", "StatefulSet"): ("template.spec.template", "template.spec.replicas")}


def infer_pod_sets(component: Mapping[str, Any]) -> list[JSON]:
    """The pod sets the AppWrapper library infers for a component of a kind it knows (none
    for another kind). Raises :class:`PathError` for a malformed one."""
    root = component
    api_version = str(component.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    gvk = (group, version, str(component.get("kind") or ""))
    sets: list[JSON] = []
    if gvk == ("batch", "v1", "Job"):
        replicas = _int_at(root, "template.spec.parallelism")
        replicas = 1 if replicas is None else replicas
        completions = _int_at(root, "template.spec.completions")
        if completions is not None and completions < replicas:
            replicas = completions
        sets.append(_pod_set(replicas, "template.spec.template",
                             {TAS_POD_INDEX_LABEL: _JOB_COMPLETION_INDEX}))
    elif gvk == ("jobset.x-k8s.io", "v1alpha2", "JobSet"):
        jobs = get_path(component, "spec", "replicatedJobs")
        for i in range(len(jobs) if isinstance(jobs, list) else 0):
            prefix = f"template.spec.replicatedJobs[{i}]."
            try:
                value_at(root, prefix + TEMPLATE)
            except PathError:
                continue
            pods = _int_at(root, prefix + "template.spec.parallelism")
            pods = 1 if pods is None else pods
            completions = _int_at(root, prefix + "template.spec.completions")
            if completions is not None and completions < pods:
                pods = completions
            count = _int_at(root, prefix + "replicas")
            count = 1 if count is None else count
            sets.append(_pod_set(count * pods, prefix + "template.spec.template",
                                 {TAS_POD_INDEX_LABEL: _JOB_COMPLETION_INDEX,
                                  TAS_SUB_GROUP_INDEX_LABEL: _JOBSET_JOB_INDEX,
                                  TAS_SUB_GROUP_COUNT: str(count)}))
    elif gvk == ("kubeflow.org", "v1", "PyTorchJob"):
        for role in ("Master", "Worker"):
            prefix = f"template.spec.pytorchReplicaSpecs.{role}."
            try:
                value_at(root, prefix + TEMPLATE)
            except PathError:
                continue
            sets.append(_pod_set(_replicas_at(root, prefix + "replicas"), prefix + TEMPLATE,
                                 {TAS_POD_INDEX_LABEL: _PYTORCH_REPLICA_INDEX}))
    elif gvk == ("ray.io", "v1", "RayCluster"):
        sets = _ray_pod_sets(root, "template.spec.")
    elif gvk == ("ray.io", "v1", "RayJob"):
        sets = _ray_pod_sets(root, "template.spec.rayClusterSpec.")
    elif gvk in _SIMPLE:
        path, replicas_path = _SIMPLE[gvk]
        try:
            value_at(root, path)
        except PathError:
            pass
        else:
            sets.append(_pod_set(_replicas_at(root, replicas_path) if replicas_path else 1, path))
    for ps in sets:
        try:
            pod_template(component, str(ps["path"]))
        except PathError as exc:
            raise PathError(f"{ps['path']} does not refer to a v1.PodSpecTemplate: {exc}") from exc
    return sets


def components(aw: Mapping[str, Any]) -> list[JSON]:
    items = get_path(aw, "spec", "components")
    return [c if isinstance(c, dict) else {} for c in items] if isinstance(items, list) else []


def component_template(component: Mapping[str, Any]) -> JSON:
    template = component.get("template")
    return template if isinstance(template, dict) else {}


def component_pod_sets(aw: Mapping[str, Any]) -> list[list[JSON]]:
    """Each component's pod sets: the controller's record in the status once it made one
    for every component, else those declared, else those inferred."""
    comps = components(aw)
    recorded = get_path(aw, "status", "componentStatus")
    if isinstance(recorded, list) and len(recorded) == len(comps):
        return [[ps for ps in (c or {}).get("podSets") or () if isinstance(ps, dict)] for c in recorded]
    result = []
    for comp in comps:
        declared = [ps for ps in comp.get("podSets") or () if isinstance(ps, dict)]
        result.append(declared or infer_pod_sets(component_template(comp)))
    return result


def replicas(pod_set: Mapping[str, Any]) -> int:
    value = pod_set.get("replicas")
    return 1 if value is None else int(value)


# -- the pod template Kueue keeps ---------------------------------------------------------


def _image_tag(image: str) -> str | None:
    """The tag of an image reference, ``latest`` when it has neither tag nor digest; None
    when it does not parse."""
    if not image or image != image.strip() or any(c.isupper() for c in image.split("/")[-1].split(":")[0]):
        return None
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.rpartition(":")[2] if ":" in last else ""
    return tag or ("" if digest else "latest")


def _resource_list(values: Any) -> JSON:
    """A resource list as the library writes it: each quantity rounded up to milli-units, in
    its canonical form (the component is stored as given, so the API server did neither)."""
    out: JSON = {}
    for name, value in (values.items() if isinstance(values, dict) else ()):
        try:
            q = Quantity.parse(value)
        except QuantityError:
            out[name] = value
            continue
        out[name] = str(Quantity.from_milli(q.milli_value(), q.format))
    return out


def _containers(items: Any) -> list[JSON]:
    out = []
    for c in items if isinstance(items, list) else ():
        c = c if isinstance(c, dict) else {}
        dst: JSON = {"name": c.get("name", "")}
        for key in ("image", "command", "args"):
            if c.get(key):
                dst[key] = c[key]
        resources = {k: _resource_list(v) for k, v in (c.get("resources") or {}).items()
                     if k in ("requests", "limits") and v}
        dst["resources"] = resources
        dst["terminationMessagePath"] = c.get("terminationMessagePath") or "/dev/termination-log"
        dst["terminationMessagePolicy"] = c.get("terminationMessagePolicy") or "File"
        policy = c.get("imagePullPolicy")
        if not policy:
            policy = "Always" if _image_tag(str(c.get("image") or "")) == "latest" else "IfNotPresent"
        dst["imagePullPolicy"] = policy
        if c.get("securityContext"):
            dst["securityContext"] = c["securityContext"]
        out.append(dst)
    return out


def pod_template(component: Mapping[str, Any], path: str) -> JSON:
    """The pod template at ``path`` of a component, reduced to what Kueue's Workload keeps.

    The AppWrapper library copies labels, annotations and the scheduling-relevant part of the
    pod spec, defaulting what the API server would default (restart policy, DNS policy,
    scheduler name, preemption policy, image pull policy, termination message settings). Its
    termination grace period is set to the default 30 seconds only when the source has none;
    a source's own value is not carried over (as the library does). Raises
    :class:`PathError` when the path leads nowhere or to something without a ``spec``.
    """
    candidate = value_at(component, path)
    if not isinstance(candidate, Mapping):
        raise PathError(f"at path position '{path}' non-map value")
    spec = candidate.get("spec")
    if not isinstance(spec, dict):
        raise PathError(f"content at {path} does not contain a spec")
    out_meta: JSON = {}
    src_meta = candidate.get("metadata")
    if isinstance(src_meta, dict):
        for key in ("labels", "annotations"):
            if isinstance(src_meta.get(key), dict):
                out_meta[key] = {k: v for k, v in src_meta[key].items() if isinstance(v, str)}
    out: JSON = {}
    if spec.get("initContainers"):
        out["initContainers"] = _containers(spec["initContainers"])
    out["containers"] = _containers(spec.get("containers"))
    out["restartPolicy"] = spec.get("restartPolicy") or "Always"
    if spec.get("terminationGracePeriodSeconds") is None:
        out["terminationGracePeriodSeconds"] = 30
    out["dnsPolicy"] = spec.get("dnsPolicy") or "ClusterFirst"
    for key in ("nodeSelector", "nodeName"):
        if spec.get(key):
            out[key] = spec[key]
    out["securityContext"] = spec.get("securityContext") or {}
    if spec.get("affinity"):
        out["affinity"] = spec["affinity"]
    out["schedulerName"] = spec.get("schedulerName") or "default-scheduler"
    for key in ("tolerations", "priorityClassName"):
        if spec.get(key):
            out[key] = spec[key]
    out["preemptionPolicy"] = spec.get("preemptionPolicy") or "PreemptLowerPriority"
    if spec.get("overhead"):
        out["overhead"] = _resource_list(spec["overhead"])
    if spec.get("topologySpreadConstraints"):
        out["topologySpreadConstraints"] = spec["topologySpreadConstraints"]
    result: JSON = {"spec": out}
    if out_meta:
        result["metadata"] = out_meta
    return result


def pod_sets(aw: Mapping[str, Any]) -> list[tuple[JSON, JSON]]:
    """(AppWrapper pod set, its pod template) for every pod set of every component, in order;
    a pod set whose template cannot be read is left out (as the library does)."""
    result = []
    for comp, sets in zip(components(aw), component_pod_sets(aw), strict=False):
        template = component_template(comp)
        for ps in sets:
            try:
                result.append((ps, pod_template(template, str(ps.get("path") or ""))))
            except PathError:
                continue
    return result
