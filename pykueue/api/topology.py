"""Topology: the ordered node-label levels (block, rack, host) TAS places pods along."""

from __future__ import annotations

from pykueue.api.fields import Model, Rule, f
from pykueue.api.meta import QUALIFIED_NAME
from pykueue.api.resource import Resource

HOSTNAME_LABEL = "kubernetes.io/hostname"


class TopologyLevel(Model):
    node_label: str = f(required=True, min_length=1, max_length=316, pattern=QUALIFIED_NAME)


class TopologySpec(Model):
    levels: list[TopologyLevel] = f(required=True, min_items=1, max_items=16, list_type="atomic", rules=(
        Rule("self == oldSelf || (self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname' && "
             "oldSelf[size(oldSelf) - 1].nodeLabel == 'kubernetes.io/hostname')",
             "levels are mutable only when kubernetes.io/hostname is the lowest level both before and "
             "after the change"),
        Rule("size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0", "must be unique"),
        Rule("size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || "
             "self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'",
             "the kubernetes.io/hostname label can only be used at the lowest level of topology"),
    ))


class Topology(Resource):
    KIND = "Topology"
    PLURAL = "topologies"
    SINGULAR = "topology"
    SHORT_NAMES = ("topo",)

    spec: TopologySpec | None = f()
