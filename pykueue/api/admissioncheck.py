"""AdmissionCheck: a named gate a workload must pass, run by an external controller."""

from __future__ import annotations

from pykueue.api.fields import Model, Rule, f
from pykueue.api.meta import DNS1123_LABEL, DNS1123_SUBDOMAIN, Condition, conditions_field
from pykueue.api.resource import Resource


class AdmissionCheckParametersReference(Model):
    api_group: str = f(required=True, min_length=1, max_length=253, pattern=DNS1123_SUBDOMAIN)
    kind: str = f(required=True, min_length=1, max_length=63, pattern=r"^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$")
    name: str = f(required=True, min_length=1, max_length=63, pattern=DNS1123_LABEL)


class AdmissionCheckSpec(Model):
    controller_name: str = f(required=True, min_length=1, max_length=253,
                             rules=(Rule("self == oldSelf", "field is immutable"),))
    parameters: AdmissionCheckParametersReference | None = f()


class AdmissionCheckStatus(Model):
    conditions: list[Condition] | None = conditions_field()


class AdmissionCheck(Resource):
    KIND = "AdmissionCheck"
    PLURAL = "admissionchecks"
    SINGULAR = "admissioncheck"
    SHORT_NAMES = ("ac",)
    STATUS_SUBRESOURCE = True

    spec: AdmissionCheckSpec | None = f()
    status: AdmissionCheckStatus | None = f()
