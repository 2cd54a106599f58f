"""The shipped KubeSchedulerConfiguration wires exactly the verbs the extender serves."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from pykueue.devcluster.tas_scheduler import shipped_config

from .conftest import Extender
from .scenario import binding_args, load

# Field names of k8s.io/kube-scheduler/config/v1 Extender (json tags).
EXTENDER_FIELDS = {
    "urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb", "enableHTTPS",
    "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable",
}


def extender_config() -> dict[str, Any]:
    config = shipped_config()
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    (ext,) = config["extenders"]
    return dict(ext)


def test_extender_entry_is_well_formed() -> None:
    ext = extender_config()
    assert set(ext) <= EXTENDER_FIELDS
    assert ext["nodeCacheCapable"] is True and ext["ignorable"] is False
    assert ext["httpTimeout"].endswith("s")


def test_only_filter_and_bind_are_called() -> None:
    # A prioritize call would cost both processes a third request (and pod copy) per pod;
    # filter alone keeps TAS pods to their assigned domains. Validation wants a weight only
    # with a prioritizeVerb.
    ext = extender_config()
    assert (ext["filterVerb"], ext["bindVerb"]) == ("filter", "bind")
    assert "prioritizeVerb" not in ext and "weight" not in ext


async def test_every_configured_verb_is_served(extender: Extender) -> None:
    ext = extender_config()
    prefix = urlparse(ext["urlPrefix"]).path.rstrip("/")
    bodies = {
        "filterVerb": load("args_node_names.json"),
        "prioritizeVerb": load("args_node_names.json"),
        "bindVerb": binding_args(0, "block-1-rack-1-node-1"),
    }
    for field, body in bodies.items():
        if field not in ext:
            continue
        status, reply = await extender.post(f"{prefix}/{ext[field]}".lstrip("/"), body)
        assert status == 200, field
        assert isinstance(reply, list if field == "prioritizeVerb" else dict)
