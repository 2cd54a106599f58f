"""ProvisioningRequestConfig: parameters of the cluster-autoscaler ProvisioningRequest check."""

from __future__ import annotations

from pykueue.api.fields import Items, Model, f
from pykueue.api.meta import DNS1123_SUBDOMAIN, QUALIFIED_NAME
from pykueue.api.resource import Resource


class ProvisioningRequestRetryStrategy(Model):
    backoff_limit_count: int | None = f(default=3, fmt="int32")
    backoff_base_seconds: int | None = f(default=60, fmt="int32")
    backoff_max_seconds: int | None = f(default=1800, fmt="int32")


class PodSetUpdateNodeSelector(Model):
    key: str = f(required=True, min_length=1, max_length=317, pattern=QUALIFIED_NAME)
    value_from_provisioning_class_detail: str = f(required=True, min_length=1, max_length=32768)


class ProvisioningRequestPodSetUpdates(Model):
    node_selector: list[PodSetUpdateNodeSelector] | None = f(max_items=8, list_type="map", map_keys=("key",))


class ProvisioningRequestConfigSpec(Model):
    provisioning_class_name: str = f(required=True, min_length=1, max_length=253, pattern=DNS1123_SUBDOMAIN)
    parameters: dict[str, str] | None = f(items=Items(max_length=255))
    managed_resources: list[str] | None = f(max_items=100, list_type="set")
    retry_strategy: ProvisioningRequestRetryStrategy | None = f(
        default={"backoffBaseSeconds": 60, "backoffLimitCount": 3, "backoffMaxSeconds": 1800})
    pod_set_updates: ProvisioningRequestPodSetUpdates | None = f()
    pod_set_merge_policy: str | None = f(enum=("IdenticalPodTemplates",
                                               "IdenticalWorkloadSchedulingRequirements"))


class ProvisioningRequestConfig(Resource):
    KIND = "ProvisioningRequestConfig"
    PLURAL = "provisioningrequestconfigs"
    SINGULAR = "provisioningrequestconfig"
    SHORT_NAMES = ("prc",)

    spec: ProvisioningRequestConfigSpec | None = f()
