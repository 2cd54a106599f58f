"""The JobSet a TrainJob becomes, computed from the TrainJob and its training runtime the way
Kueue computes it (Kueue v0.19.2 ``getChildJobSet``, which runs Kubeflow Trainer v2.2's own
runtime code): Kueue never reads the JobSet the trainer made; it builds the same one again.

The steps, in Kueue's order:

1. the runtime's JobSet template, each replicated job's Job template strategic-merged with the
   TrainJob's ``spec.runtimePatches`` that name it, in the order of the patches (Kueue's own
   patch included);
2. pods per Job: its ``parallelism`` (1 when unset); a job labelled as the trainer step takes
   the runtime's ``mlPolicy.numNodes`` (1 when unset) when the runtime has an ML policy; at
   least 1. The ML policy plugins then apply the TrainJob's ``trainer.numNodes``: to the
   trainer step under plain ML (no torch, MPI or JAX policy), torch, JAX and XGBoost, and to
   the job named ``node`` under MPI (one less, at least 1, when the launcher runs as a node);
   ``parallelism`` and ``completions`` are set to that count;
3. the initializer steps run one Job (``replicas: 1``) and their container gets the TrainJob's
   storage URI, environment and secret; the trainer step runs one Job and its ``node``
   container gets the TrainJob's image, command, args, resources per node and environment
   (resources and environment also reach the ``node`` job of an MPI runtime whose launcher
   runs as a node);
4. under coscheduling every pod carries the pod-group label naming the TrainJob.

What the plugins only write into the trainer's own bookkeeping (the torch, MPI, JAX and XGBoost
environment variables, ports and volumes, the Flux init container and command) never reaches
Kueue's JobSet, so it is left out here as well; neither changes a pod set's count or requests.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.api.wire import JSON, meta
from pykueue.manager.core.objects import ObjectError
from pykueue.manager.jobs.job_fields import int_or
from pykueue.manager.jobs.jobset.lifecycle import job_spec, pods_count
from pykueue.manager.jobs.related import Related, RelatedKey, RelatedKind, found

GROUP = "trainer.kubeflow.org"
VERSION = "v1alpha1"
CLUSTER_TRAINING_RUNTIME = RelatedKind(GROUP, VERSION, "ClusterTrainingRuntime", "clustertrainingruntimes",
                                       False)
TRAINING_RUNTIME = RelatedKind(GROUP, VERSION, "TrainingRuntime", "trainingruntimes", True)
RUNTIME_KINDS = (CLUSTER_TRAINING_RUNTIME, TRAINING_RUNTIME)

ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER = "trainer"
DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
NODE = "node"
LAUNCHER = "launcher"
STORAGE_URI_ENV = "STORAGE_URI"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"  # the coscheduling plugin's


def spec_of(obj: Mapping[str, Any]) -> JSON:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _dict(value: Any) -> JSON | None:
    return value if isinstance(value, dict) else None


# -- the runtime a TrainJob names ------------------------------------------------------------


def runtime_ref(trainjob: Mapping[str, Any]) -> tuple[str, str, str]:
    """(apiGroup, kind, name) of ``spec.runtimeRef``, with the CRD's defaults for the first two
    (what the API server stores for a TrainJob that leaves them out)."""
    ref = _dict(spec_of(trainjob).get("runtimeRef")) or {}
    group = ref.get("apiGroup")
    kind = ref.get("kind")
    return (GROUP if group is None else str(group),
            CLUSTER_TRAINING_RUNTIME.kind if kind is None else str(kind), str(ref.get("name") or ""))


def runtime_kind(trainjob: Mapping[str, Any]) -> RelatedKind | None:
    """The runtime kind the TrainJob names, None for one the trainer does not run."""
    group, kind, _ = runtime_ref(trainjob)
    return next((k for k in RUNTIME_KINDS if (k.group, k.kind) == (group, kind)), None)


def runtime_key(trainjob: Mapping[str, Any]) -> RelatedKey | None:
    kind = runtime_kind(trainjob)
    if kind is None:
        return None
    return kind.key(runtime_ref(trainjob)[2], str(meta(trainjob).get("namespace") or ""))


def runtime_of(trainjob: Mapping[str, Any], related: Related) -> JSON:
    """The training runtime among ``related``; raises ``ObjectError`` (``RelatedMissing`` when it
    was not found) worded as Kueue's reconciler words it."""
    key = runtime_key(trainjob)
    if key is None:
        group, kind, _ = runtime_ref(trainjob)
        raise ObjectError(f"unsupported runtime: {kind}.{group}" if group else f"unsupported runtime: {kind}")
    return found(related, key, f"runtime '{key[3]}' not found")


# -- strategic merge of a runtime patch into a Job template ----------------------------------

# The lists a strategic merge patch merges by key (core/v1's patchMergeKey) among the fields a
# runtime patch may reach: a pod spec and its containers. Other lists are replaced.
_CONTAINER: dict[str, Any] = {"env": ("name", {}), "ports": ("containerPort", {}),
                              "volumeMounts": ("mountPath", {}), "volumeDevices": ("devicePath", {})}
_POD_SPEC: dict[str, Any] = {
    "volumes": ("name", {}), "initContainers": ("name", _CONTAINER), "containers": ("name", _CONTAINER),
    "ephemeralContainers": ("name", _CONTAINER), "imagePullSecrets": ("name", {}), "hostAliases": ("ip", {}),
    "schedulingGates": ("name", {}), "resourceClaims": ("name", {}),
    "topologySpreadConstraints": ("topologyKey", {}),
}
JOB_TEMPLATE: dict[str, Any] = {"spec": {"template": {"spec": _POD_SPEC}}}


def strategic_merge(original: Any, patch: Any, schema: Mapping[str, Any]) -> Any:
    """``original`` with ``patch`` applied as a strategic merge patch (maps merged key by key, a
    null deleting its key; lists of ``schema``'s fields merged by their key, others replaced)."""
    if not isinstance(original, dict) or not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(original)
    for key, value in patch.items():
        rule = schema.get(key)
        if value is None:
            out.pop(key, None)
        elif isinstance(rule, tuple) and isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = _merge_list(out[key], value, *rule)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = strategic_merge(out[key], value, rule if isinstance(rule, dict) else {})
        else:
            out[key] = copy.deepcopy(value)
    return out


def _merge_list(original: list[Any], patch: list[Any], merge_key: str, item: Mapping[str, Any]) -> list[Any]:
    out = copy.deepcopy(original)
    for element in patch:
        at = next((i for i, o in enumerate(out) if isinstance(element, dict) and isinstance(o, dict)
                   and merge_key in element and o.get(merge_key) == element[merge_key]), None)
        if at is None:
            out.append(copy.deepcopy(element))
        else:
            out[at] = strategic_merge(out[at], element, item)
    return out


def replicated_job_patches(trainjob: Mapping[str, Any]) -> list[JSON]:
    """Every replicated-job patch of ``spec.runtimePatches``, in order."""
    out: list[JSON] = []
    for patch in spec_of(trainjob).get("runtimePatches") or ():
        rt_spec = _dict((_dict(patch) or {}).get("trainingRuntimeSpec"))
        template = _dict((rt_spec or {}).get("template"))
        spec = _dict((template or {}).get("spec"))
        out += [p for p in (spec or {}).get("replicatedJobs") or () if isinstance(p, dict)]
    return out


# -- the JobSet ------------------------------------------------------------------------------


def _job_labels(rj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    labels = ((rj.get("template") or {}).get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else None


def ancestor(rj: Mapping[str, Any]) -> str | None:
    """The trainer step a replicated job is labelled as (None: not labelled)."""
    labels = _job_labels(rj)
    return None if labels is None or ANCESTOR_LABEL not in labels else str(labels[ANCESTOR_LABEL])


def _containers(rj: Mapping[str, Any], name: str) -> list[JSON]:
    pod = ((job_spec(rj).get("template") or {}).get("spec")) or {}
    return [c for c in pod.get("containers") or () if isinstance(c, dict) and c.get("name") == name]


def _upsert_env(container: JSON, env: list[Any]) -> None:
    """Each variable replaces the one of its name, or is appended."""
    if not env:
        return
    items: list[Any] = container.setdefault("env", [])
    for var in env:
        if not isinstance(var, dict):
            continue
        at = next((i for i, e in enumerate(items)
                   if isinstance(e, dict) and e.get("name") == var.get("name")), None)
        if at is None:
            items.append(copy.deepcopy(var))
        else:
            items[at] = copy.deepcopy(var)


def _policy(ml: JSON | None, name: str) -> JSON | None:
    return None if ml is None else _dict(ml.get(name)) if ml.get(name) is not None else None


def pod_counts(trainjob: Mapping[str, Any], rjs: list[JSON], ml: JSON | None) -> list[int]:
    """Pods per Job of each replicated job (step 2 of the module docstring)."""
    counts = []
    for rj in rjs:
        count = int_or(job_spec(rj).get("parallelism"), 1)
        if ancestor(rj) == TRAINER and ml is not None:
            count = int_or(ml.get("numNodes"), 1)
        counts.append(max(count, 1))
    trainer = _dict(spec_of(trainjob).get("trainer")) or {}
    num_nodes = trainer.get("numNodes")
    if not isinstance(num_nodes, int) or isinstance(num_nodes, bool):
        return counts
    steps = [ancestor(rj) for rj in rjs]
    trainer_at = steps.index(TRAINER) if TRAINER in steps else None
    torch, mpi, jax, xgboost = (_policy(ml, p) is not None for p in ("torch", "mpi", "jax", "xgboost"))
    plain = not (torch or mpi or jax)
    if trainer_at is not None and (plain or torch or jax or xgboost):
        counts[trainer_at] = num_nodes
    if mpi:
        names = [str(rj.get("name") or "") for rj in rjs]
        if NODE in names:
            launcher_as_node = (_policy(ml, "mpi") or {}).get("runLauncherAsNode") is True
            counts[names.index(NODE)] = max(num_nodes - 1, 1) if launcher_as_node else num_nodes
    return counts


def _check_mpi(rjs: list[JSON], ml: JSON | None) -> None:
    """The MPI plugin fails on a launcher job with a ``node`` container under an MPI
    implementation it cannot configure (only OpenMPI)."""
    mpi = _policy(ml, "mpi")
    if mpi is None:
        return
    implementation = str(mpi.get("mpiImplementation") or "OpenMPI")  # the CRD's default
    for rj in rjs:
        if rj.get("name") == LAUNCHER and _containers(rj, NODE) and implementation != "OpenMPI":
            raise ObjectError(f"MPI implementation for {implementation} doesn't supported")


def _initializers(trainjob: Mapping[str, Any], rjs: list[JSON]) -> None:
    initializer = _dict(spec_of(trainjob).get("initializer")) or {}
    for rj in rjs:
        step = ancestor(rj)
        for name, source in ((DATASET_INITIALIZER, "dataset"), (MODEL_INITIALIZER, "model")):
            if step != name:
                continue
            rj["replicas"] = 1
            given = _dict(initializer.get(source))
            if given is None:
                continue
            for container in _containers(rj, name):
                if given.get("storageUri") is not None:
                    _upsert_env(container, [{"name": STORAGE_URI_ENV, "value": str(given["storageUri"])}])
                _upsert_env(container, list(given.get("env") or ()))
                secret = _dict(given.get("secretRef"))
                if secret is not None:
                    container.setdefault("envFrom", []).append({"secretRef": {"name": secret.get("name")}})


def _trainer(trainjob: Mapping[str, Any], rjs: list[JSON], ml: JSON | None) -> None:
    trainer = _dict(spec_of(trainjob).get("trainer"))
    launcher_as_node = (_policy(ml, "mpi") or {}).get("runLauncherAsNode") is True
    for rj in rjs:
        step = ancestor(rj) or ""
        if step == TRAINER:
            rj["replicas"] = 1
            for container in _containers(rj, NODE):
                for field in ("image", "command", "args"):
                    if trainer is not None and trainer.get(field) is not None:
                        container[field] = copy.deepcopy(trainer[field])
        if step == TRAINER or (launcher_as_node and rj.get("name") == NODE):
            for container in _containers(rj, NODE):
                if trainer is None:
                    continue
                per_node = _dict(trainer.get("resourcesPerNode"))
                if per_node is not None and (per_node.get("limits") is not None
                                             or per_node.get("requests") is not None):
                    container["resources"] = {k: copy.deepcopy(per_node[k]) for k in ("limits", "requests")
                                              if per_node.get(k) is not None}
                _upsert_env(container, list(trainer.get("env") or ()))


def _pod_labels(trainjob: Mapping[str, Any], rjs: list[JSON], pod_group: JSON | None) -> None:
    if pod_group is None or pod_group.get("coscheduling") is None:
        return
    name = str(meta(trainjob).get("name") or "")
    for rj in rjs:
        template = rj.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        labels[POD_GROUP_LABEL] = name


def child_jobset(trainjob: Mapping[str, Any], runtime: Mapping[str, Any]) -> JSON:
    """The JobSet Kueue builds for ``trainjob`` from ``runtime`` (see the module docstring)."""
    rt_spec = spec_of(runtime)
    template = _dict(rt_spec.get("template")) or {}
    ml = _dict(rt_spec.get("mlPolicy"))
    spec = copy.deepcopy(_dict(template.get("spec")) or {})
    rjs = [rj for rj in spec.get("replicatedJobs") or () if isinstance(rj, dict)]
    spec["replicatedJobs"] = rjs
    for patch in replicated_job_patches(trainjob):
        if patch.get("template") is None:
            continue
        for rj in rjs:
            if rj.get("name") == patch.get("name"):
                rj["template"] = strategic_merge(rj.get("template") or {}, patch["template"], JOB_TEMPLATE)
    counts = pod_counts(trainjob, rjs, ml)
    _check_mpi(rjs, ml)
    for rj, count in zip(rjs, counts, strict=True):
        spec_ = rj.setdefault("template", {}).setdefault("spec", {})
        spec_["parallelism"] = spec_["completions"] = count
    _initializers(trainjob, rjs)
    _trainer(trainjob, rjs, ml)
    _pod_labels(trainjob, rjs, _dict(rt_spec.get("podGroupPolicy")))
    m = meta(trainjob)
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": m.get("name"), "namespace": m.get("namespace")}, "spec": spec}


def podsets(trainjob: Mapping[str, Any], related: Related) -> list[JSON]:
    """Kueue's TrainJob PodSets: the child JobSet's, counted as the JobSet kind counts them
    (Kueue then has the API server default them in a dry run, which the Workload's own
    creation does here)."""
    jobset = child_jobset(trainjob, runtime_of(trainjob, related))
    return [{"name": str(rj.get("name") or ""), "count": pods_count(rj),
             "template": job_spec(rj).get("template") or {}}
            for rj in jobset["spec"]["replicatedJobs"]]
