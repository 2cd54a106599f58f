"""Quota types shared by ClusterQueue and Cohort: resource groups, flavor quotas and
fair-sharing weights."""

from __future__ import annotations

from typing import Any

from pykueue.api.fields import Model, Rule, f
from pykueue.api.meta import DNS1123_SUBDOMAIN
from pykueue.api.quantity import Quantity


class ResourceQuota(Model):
    name: str = f(required=True)
    nominal_quota: Quantity = f(required=True)
    borrowing_limit: Quantity | None = f()
    lending_limit: Quantity | None = f()


class FlavorQuotas(Model):
    name: str = f(required=True, max_length=253, pattern=DNS1123_SUBDOMAIN)
    resources: list[ResourceQuota] = f(required=True, min_items=1, max_items=64, list_type="map",
                                       map_keys=("name",))


class ResourceGroup(Model):
    __rules__ = (Rule("self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
                      "flavors must have the same number of resources as the coveredResources"),)

    covered_resources: list[str] = f(required=True, min_items=1, max_items=64, list_type="atomic")
    flavors: list[FlavorQuotas] = f(required=True, min_items=1, max_items=64, list_type="map",
                                    map_keys=("name",))


def resource_groups_field() -> Any:
    return f(max_items=16, list_type="atomic")


class FairSharing(Model):
    weight: Quantity | None = f(default=1)


class ResourceUsage(Model):
    name: str = f(required=True)
    total: Quantity | None = f()
    borrowed: Quantity | None = f()


class FlavorUsage(Model):
    name: str = f(required=True, max_length=253, pattern=DNS1123_SUBDOMAIN)
    resources: list[ResourceUsage] = f(required=True, max_items=64, list_type="map", map_keys=("name",))


class LocalQueueResourceUsage(Model):
    name: str = f(required=True)
    total: Quantity | None = f()


class LocalQueueFlavorUsage(Model):
    name: str = f(required=True, max_length=253, pattern=DNS1123_SUBDOMAIN)
    resources: list[LocalQueueResourceUsage] = f(required=True, max_items=64, list_type="map",
                                                 map_keys=("name",))


class AdmissionFairSharingStatus(Model):
    consumed_resources: dict[str, Quantity] = f(required=True)
    last_update: str = f(required=True, fmt="date-time")


class FairSharingStatus(Model):
    weighted_share: int = f(required=True, fmt="int64")


class LocalQueueFairSharingStatus(Model):
    weighted_share: int = f(required=True, fmt="int64")
    admission_fair_sharing_status: AdmissionFairSharingStatus | None = f()
