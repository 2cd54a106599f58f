"""Every label, annotation, finalizer, condition type and reason pykueue reads or writes.

One module so that the webhook, the reconcilers, the extender and the core agree on the
spelling; the values are Kueue's, so objects written by either system read the same.
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "kueue.x-k8s.io"
V1BETA1: Final = "v1beta1"
V1BETA2: Final = "v1beta2"
API_VERSION: Final = f"{GROUP}/{V1BETA2}"
API_VERSION_V1BETA1: Final = f"{GROUP}/{V1BETA1}"
CONFIG_GROUP: Final = "config.kueue.x-k8s.io"
CONFIG_API_VERSION: Final = f"{CONFIG_GROUP}/{V1BETA2}"
VISIBILITY_GROUP: Final = "visibility.kueue.x-k8s.io"

_P: Final = "kueue.x-k8s.io/"

# -- labels and annotations on jobs, templates and pods ------------------------------------
QUEUE_NAME: Final = _P + "queue-name"
QUEUE_NAME_ANNOTATION: Final = _P + "queue-name"  # v0.12's annotation form; v0.19 reads only the label
PRIORITY_CLASS: Final = _P + "priority-class"
MAX_EXEC_TIME_SECONDS: Final = _P + "max-exec-time-seconds"
PREBUILT_WORKLOAD_NAME: Final = _P + "prebuilt-workload-name"
JOB_MIN_PARALLELISM: Final = _P + "job-min-parallelism"
JOB_COMPLETIONS_EQUAL_PARALLELISM: Final = _P + "job-completions-equal-parallelism"
STOPPING: Final = _P + "stopping"
ELASTIC_JOB: Final = _P + "elastic-job"
ADMISSION_GATED_BY: Final = _P + "admission-gated-by"
MANAGED: Final = _P + "managed"
POD_SUSPENDING_PARENT: Final = _P + "pod-suspending-parent"
POD_GROUP_SERVING: Final = _P + "pod-group-serving"
POD_GROUP_NAME: Final = _P + "pod-group-name"
POD_GROUP_TOTAL_COUNT: Final = _P + "pod-group-total-count"
POD_GROUP_FAST_ADMISSION: Final = _P + "pod-group-fast-admission"
POD_GROUP_POD_INDEX: Final = _P + "pod-group-pod-index"
POD_GROUP_POD_INDEX_LABEL: Final = _P + "pod-group-pod-index-label"
ROLE_HASH: Final = _P + "role-hash"
RETRIABLE_IN_GROUP: Final = _P + "retriable-in-group"
IS_GROUP_WORKLOAD: Final = _P + "is-group-workload"
JOB_UID: Final = _P + "job-uid"
JOB_OWNER_GVK: Final = _P + "job-owner-gvk"
JOB_OWNER_NAME: Final = _P + "job-owner-name"
COMPONENT_WORKLOAD_INDEX: Final = _P + "component-workload-index"
PODSET: Final = _P + "podset"
WORKLOAD_ANNOTATION: Final = _P + "workload"
LOCAL_QUEUE_NAME: Final = _P + "local-queue-name"
CLUSTER_QUEUE_NAME: Final = _P + "cluster-queue-name"
POD_INDEX_OFFSET: Final = _P + "pod-index-offset"
MULTIKUEUE_ORIGIN: Final = _P + "multikueue-origin"
MULTIKUEUE_ORIGIN_UID: Final = _P + "multikueue-origin-uid"
WORKLOAD_SLICE_NAME: Final = _P + "workload-slice-name"
WORKLOAD_SLICE_REPLACEMENT_FOR: Final = _P + "workload-slice-replacement-for"
PROVREQ_ANNOTATION_PREFIX: Final = "provreq.kueue.x-k8s.io/"

# -- Topology Aware Scheduling pod-template annotations -----------------------------------
PODSET_REQUIRED_TOPOLOGY: Final = _P + "podset-required-topology"
PODSET_PREFERRED_TOPOLOGY: Final = _P + "podset-preferred-topology"
PODSET_UNCONSTRAINED_TOPOLOGY: Final = _P + "podset-unconstrained-topology"
PODSET_SLICE_REQUIRED_TOPOLOGY: Final = _P + "podset-slice-required-topology"
PODSET_SLICE_SIZE: Final = _P + "podset-slice-size"
PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: Final = _P + "podset-slice-required-topology-constraints"
PODSET_GROUP_NAME: Final = _P + "podset-group-name"
TAS_LABEL: Final = _P + "tas"  # set on pod templates admitted with a topology assignment
# Any of these on a pod template asks for topology-aware placement.
TOPOLOGY_ANNOTATIONS: Final = (
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_UNCONSTRAINED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
)

# -- scheduling gates and finalizers ------------------------------------------------------
ADMISSION_GATE: Final = _P + "admission"
TOPOLOGY_GATE: Final = _P + "topology"
ELASTIC_JOB_GATE: Final = ELASTIC_JOB
RESOURCE_IN_USE_FINALIZER: Final = _P + "resource-in-use"
MANAGED_POD_FINALIZER: Final = MANAGED
SAFE_TO_FORGET_FINALIZER: Final = _P + "safe-to-forget"

DEFAULT_LOCAL_QUEUE: Final = "default"
DEFAULT_PRIORITY_CLASS: Final = "default"
MULTIKUEUE_CONTROLLER: Final = "kueue.x-k8s.io/multikueue"
PROVISIONING_REQUEST_CONTROLLER: Final = "kueue.x-k8s.io/provisioning-request"

# -- labels of other projects that pykueue reads -------------------------------------------
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
JOB_COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"
LWS_NAME: Final = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX: Final = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX: Final = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_LEADER_NAME: Final = "leaderworkerset.sigs.k8s.io/leader-name"
KUBEFLOW_REPLICA_INDEX: Final = "training.kubeflow.org/replica-index"
KUBEFLOW_JOB_NAME: Final = "training.kubeflow.org/job-name"
KUBEFLOW_OPERATOR_NAME: Final = "training.kubeflow.org/operator-name"
CONTROLLER_REVISION_HASH: Final = "controller-revision-hash"
STATEFULSET_POD_NAME: Final = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"


class WorkloadCondition:
    """Workload condition types."""

    QUOTA_RESERVED: Final = "QuotaReserved"
    ADMITTED: Final = "Admitted"
    FINISHED: Final = "Finished"
    EVICTED: Final = "Evicted"
    PREEMPTED: Final = "Preempted"
    REQUEUED: Final = "Requeued"
    PODS_READY: Final = "PodsReady"
    DEACTIVATION_TARGET: Final = "DeactivationTarget"


class Reason:
    """Condition and event reasons written on Workloads and queues."""

    # QuotaReserved / Admitted
    QUOTA_RESERVED: Final = "QuotaReserved"
    ADMITTED: Final = "Admitted"
    PENDING: Final = "Pending"
    INADMISSIBLE: Final = "Inadmissible"
    WAITING: Final = "Waiting"
    WAITING_FOR_PODS_READY: Final = "WaitingForPodsReady"
    UNSATISFIED_CHECKS: Final = "UnsatisfiedChecks"
    NO_MATCHING_FLAVOR: Final = "NoMatchingFlavor"
    EXCEEDS_MAX_QUOTA: Final = "ExceedsMaxQuota"
    WAITING_FOR_QUOTA: Final = "WaitingForQuota"
    TOPOLOGY_PLACEMENT_FAILED: Final = "TopologyPlacementFailed"
    WAITING_FOR_PREEMPTED_WORKLOADS: Final = "WaitingForPreemptedWorkloads"
    # Evicted
    PREEMPTED: Final = "Preempted"
    PODS_READY_TIMEOUT: Final = "PodsReadyTimeout"
    ADMISSION_CHECK: Final = "AdmissionCheck"
    CLUSTER_QUEUE_STOPPED: Final = "ClusterQueueStopped"
    LOCAL_QUEUE_STOPPED: Final = "LocalQueueStopped"
    DEACTIVATED: Final = "Deactivated"
    DEACTIVATED_DUE_TO_REQUEUING_LIMIT_EXCEEDED: Final = "DeactivatedDueToRequeuingLimitExceeded"
    DEACTIVATED_DUE_TO_ADMISSION_CHECK: Final = "DeactivatedDueToAdmissionCheck"
    DEACTIVATED_DUE_TO_MAXIMUM_EXECUTION_TIME_EXCEEDED: Final = (
        "DeactivatedDueToMaximumExecutionTimeExceeded"
    )
    NODE_FAILURES: Final = "NodeFailures"
    # Preempted
    IN_CLUSTER_QUEUE: Final = "InClusterQueue"
    IN_COHORT_RECLAMATION: Final = "InCohortReclamation"
    IN_COHORT_FAIR_SHARING: Final = "InCohortFairSharing"
    IN_COHORT_RECLAIM_WHILE_BORROWING: Final = "InCohortReclaimWhileBorrowing"
    # Requeued
    BACKOFF_FINISHED: Final = "BackoffFinished"
    REACTIVATED: Final = "Reactivated"
    CLUSTER_QUEUE_RESTARTED: Final = "ClusterQueueRestarted"
    LOCAL_QUEUE_RESTARTED: Final = "LocalQueueRestarted"
    REQUEUING_LIMIT_EXCEEDED: Final = "RequeuingLimitExceeded"
    # PodsReady
    STARTED: Final = "Started"
    RECOVERED: Final = "Recovered"
    WAIT_FOR_START: Final = "WaitForStart"
    WAIT_FOR_RECOVERY: Final = "WaitForRecovery"
    # Finished
    SUCCEEDED: Final = "Succeeded"
    FAILED: Final = "Failed"
    OWNER_NOT_FOUND: Final = "OwnerNotFound"  # Finished: its job was deleted, the Workload orphaned
    WORKLOAD_SLICE_REPLACED: Final = "WorkloadSliceReplaced"  # an elastic job's slice, superseded
    OUT_OF_SYNC: Final = "OutOfSync"  # a slice its job no longer matches
    # ClusterQueue / LocalQueue Active
    READY: Final = "Ready"
    STOPPED: Final = "Stopped"
    FLAVOR_NOT_FOUND: Final = "FlavorNotFound"
    ADMISSION_CHECK_NOT_FOUND: Final = "AdmissionCheckNotFound"
    ADMISSION_CHECK_INACTIVE: Final = "AdmissionCheckInactive"
    MULTIPLE_MULTIKUEUE_ADMISSION_CHECKS: Final = "MultipleMultiKueueAdmissionChecks"
    MULTIKUEUE_ADMISSION_CHECK_APPLIED_PER_FLAVOR: Final = "MultiKueueAdmissionCheckAppliedPerFlavor"
    MULTIKUEUE_WITH_PROVISIONING_REQUEST: Final = "MultiKueueWithProvisioningRequest"
    TOPOLOGY_NOT_FOUND: Final = "TopologyNotFound"
    CLUSTER_QUEUE_DOES_NOT_EXIST: Final = "ClusterQueueDoesNotExist"
    CLUSTER_QUEUE_IS_INACTIVE: Final = "ClusterQueueIsInactive"
    TERMINATING: Final = "Terminating"


class CheckState:
    """Admission check states on ``Workload.status.admissionChecks[].state``."""

    PENDING: Final = "Pending"
    READY: Final = "Ready"
    RETRY: Final = "Retry"
    REJECTED: Final = "Rejected"

    ALL: Final = (PENDING, READY, RETRY, REJECTED)

# -- TAS node failure ----------------------------------------------------------------------
# v0.12-v0.13 marker of the node to replace; HEAD uses Workload.status.unhealthyNodes.
NODE_TO_REPLACE_ANNOTATION: Final = "alpha.kueue.x-k8s.io/node-to-replace"

# -- pykueue extensions (no Kueue counterpart) ----------------------------------------------
# Workload annotation: pod UID -> node the extender is binding it to. Replicas of the
# scheduler extender serialise the last slot of a domain through it (resourceVersion CAS).
TAS_BIND_CLAIMS: Final = _P + "tas-bind-claims"
