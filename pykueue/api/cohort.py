"""Cohort: a node of the quota-sharing tree that ClusterQueues and other cohorts join."""

from __future__ import annotations

from pykueue.api.fields import Model, f
from pykueue.api.meta import DNS1123_SUBDOMAIN
from pykueue.api.quota import FairSharing, FairSharingStatus, ResourceGroup, resource_groups_field
from pykueue.api.resource import Resource


class CohortSpec(Model):
    parent_name: str | None = f(max_length=253, pattern=DNS1123_SUBDOMAIN)
    resource_groups: list[ResourceGroup] | None = resource_groups_field()
    fair_sharing: FairSharing | None = f()


class CohortStatus(Model):
    fair_sharing: FairSharingStatus | None = f()


class Cohort(Resource):
    KIND = "Cohort"
    PLURAL = "cohorts"
    SINGULAR = "cohort"
    SHORT_NAMES = ("co",)
    STATUS_SUBRESOURCE = True

    spec: CohortSpec | None = f()
    status: CohortStatus | None = f()
