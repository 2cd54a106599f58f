"""MultiKueueCluster and MultiKueueConfig: worker clusters a manager cluster dispatches to.

Both are cluster-scoped CRDs pykueue serves; the MultiKueue admission check controller
(``manager.runtime.controllers.multikueue``) reads them and writes MultiKueueCluster status.
"""

from __future__ import annotations

from pykueue.api.fields import Items, Model, Rule, f
from pykueue.api.meta import Condition, conditions_field
from pykueue.api.resource import AGE_COLUMN, PrinterColumn, Resource


class KubeConfigSource(Model):
    location: str = f(required=True, min_length=1, max_length=256)
    location_type: str | None = f(default="Secret", enum=("Secret", "Path"))


class ClusterProfileReference(Model):
    name: str = f(required=True, min_length=1, max_length=256)


class ClusterSource(Model):
    __rules__ = (Rule("[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1",
                      "exactly one of the fields in [kubeConfig clusterProfileRef] must be set"),)

    kube_config: KubeConfigSource | None = f()
    cluster_profile_ref: ClusterProfileReference | None = f()


class MultiKueueClusterSpec(Model):
    cluster_source: ClusterSource = f(required=True)


class MultiKueueClusterStatus(Model):
    conditions: list[Condition] | None = conditions_field()


class MultiKueueCluster(Resource):
    KIND = "MultiKueueCluster"
    PLURAL = "multikueueclusters"
    SINGULAR = "multikueuecluster"
    SHORT_NAMES = ("mkc",)
    STATUS_SUBRESOURCE = True
    PRINTER_COLUMNS = (
        PrinterColumn("Connected", "string", ".status.conditions[?(@.type=='Active')].status",
                      "MultiKueueCluster is connected"),
        AGE_COLUMN,
    )

    spec: MultiKueueClusterSpec | None = f()
    status: MultiKueueClusterStatus | None = f()


class MultiKueueConfigSpec(Model):
    clusters: list[str] = f(required=True, min_items=1, max_items=20, list_type="atomic",
                            items=Items(max_length=256),
                            rules=(Rule("size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0",
                                        "must be unique"),))
    quota_management: str | None = f(enum=("Manual", "Automated"))


class MultiKueueConfig(Resource):
    KIND = "MultiKueueConfig"
    PLURAL = "multikueueconfigs"
    SINGULAR = "multikueueconfig"
    SHORT_NAMES = ("mkconf",)
    V1BETA1_DEPRECATED = False

    spec: MultiKueueConfigSpec | None = f()
