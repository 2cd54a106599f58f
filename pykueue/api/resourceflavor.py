"""ResourceFlavor: a named set of node labels, taints and tolerations quota is split by."""

from __future__ import annotations

from pykueue.api.fields import Model, Rule, f
from pykueue.api.meta import DNS1123_SUBDOMAIN, Taint, Toleration, tolerations_field
from pykueue.api.resource import Resource


class ResourceFlavorSpec(Model):
    __rules__ = (
        Rule("!has(self.topologyName) || self.nodeLabels.size() >= 1",
             "at least one nodeLabel is required when topology is set"),
        Rule("!has(oldSelf.topologyName) || (has(self.topologyName) && "
             "self.topologyName == oldSelf.topologyName)",
             "field is immutable"),
    )

    node_labels: dict[str, str] | None = f(map_type="atomic")
    node_taints: list[Taint] | None = f(max_items=8, list_type="atomic", rules=(
        Rule("self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
             "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"),))
    tolerations: list[Toleration] | None = tolerations_field()
    topology_name: str | None = f(max_length=253, pattern=DNS1123_SUBDOMAIN)


class ResourceFlavor(Resource):
    KIND = "ResourceFlavor"
    PLURAL = "resourceflavors"
    SINGULAR = "resourceflavor"
    SHORT_NAMES = ("flavor", "flavors", "rf")

    spec: ResourceFlavorSpec | None = f()
