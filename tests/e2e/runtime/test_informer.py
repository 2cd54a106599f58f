"""The generic informer against the real control plane: list+watch, and surviving 410 Gone."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from pykueue.kube.client import KubeClient, connect
from pykueue.kube.informer import EventType, Informer
from pykueue.kube.resources import CONFIG_MAPS, NAMESPACES
from tests.e2e.conftest import DevCluster
from tests.e2e.runtime.helpers import SELECTOR, Recorder, age_out_watch_history, config_map

pytestmark = pytest.mark.e2e


@pytest.fixture
async def client(dev_cluster: DevCluster) -> AsyncIterator[KubeClient]:
    async with await connect(dev_cluster.kubeconfig) as kube:
        yield kube


async def test_list_then_watch_sees_add_update_delete(client: KubeClient, namespace: str) -> None:
    path = CONFIG_MAPS.collection_path(namespace)
    await client.create(path, config_map("before", namespace, v="1"))
    informer = Informer(client, CONFIG_MAPS, namespace=namespace, label_selector=SELECTOR)
    recorder = Recorder()
    informer.add_handler(recorder)
    informer.start()
    try:
        await informer.wait_synced(30)
        assert informer.has_synced
        assert "before" in recorder.names(EventType.ADDED)
        assert informer.get(f"{namespace}/before") is not None

        await client.create(path, config_map("live", namespace, v="1"))
        await recorder.wait_for("ADDED live", lambda: "live" in recorder.names(EventType.ADDED))
        await client.patch(CONFIG_MAPS.object_path("live", namespace), {"data": {"v": "2"}})
        await recorder.wait_for("MODIFIED live", lambda: "live" in recorder.names(EventType.MODIFIED))
        modified = next(e for e in recorder.events if e[0] is EventType.MODIFIED and e[1] == "live")
        assert modified[2] is not None and modified[2]["data"] == {"v": "1"}, "old object is passed"
        live = informer.get_by_name("live", namespace)
        assert live is not None and live["data"] == {"v": "2"}
        # Cached without managedFields (memory); an update written from the cached copy
        # leaves the stored ones as they were.
        assert "managedFields" not in live["metadata"]
        assert all("managedFields" not in o["metadata"] for o in informer.items())
        await client.replace(CONFIG_MAPS.object_path("live", namespace), {**live, "data": {"v": "3"}})
        stored = await client.get(CONFIG_MAPS.object_path("live", namespace))
        assert stored["data"] == {"v": "3"} and stored["metadata"].get("managedFields")

        await client.delete(CONFIG_MAPS.object_path("before", namespace))
        await recorder.wait_for("DELETED before", lambda: "before" in recorder.names(EventType.DELETED))
        assert informer.get(f"{namespace}/before") is None
        assert informer.lists == 1, "a healthy watch needs no re-list"
    finally:
        await informer.stop()


@pytest.mark.late  # the watch cache of a cluster up for a while ages out history at once
async def test_an_expired_watch_relists_and_synthesizes_every_missed_change(
        client: KubeClient, namespace: str, dev_cluster: DevCluster) -> None:
    path = CONFIG_MAPS.collection_path(namespace)
    for name in ("keep", "change", "remove"):
        await client.create(path, config_map(name, namespace, v="1"))
    informer = Informer(client, CONFIG_MAPS, namespace=namespace, label_selector=SELECTOR)
    recorder = Recorder()
    informer.add_handler(recorder)
    informer.start()
    await informer.wait_synced(30)
    assert sorted(recorder.names(EventType.ADDED)) == ["change", "keep", "remove"]
    await informer.stop()

    # While the informer is away: one add, one update, one delete.
    await client.create(path, config_map("new", namespace, v="1"))
    await client.patch(CONFIG_MAPS.object_path("change", namespace), {"data": {"v": "2"}})
    await client.delete(CONFIG_MAPS.object_path("remove", namespace))
    await age_out_watch_history(dev_cluster.kubeconfig, namespace, "1")
    recorder.events.clear()

    # Resume from a resourceVersion the apiserver no longer has: it must answer 410.
    informer.start(resume_from="1")
    try:
        await recorder.wait_for("the synthesized diff", lambda: len(recorder.events) >= 3)
        assert informer.lists == 2, "the 410 must have caused exactly one re-list"
        missed = sorted((kind.value, name) for kind, name, _ in recorder.events)
        assert missed == [("ADDED", "new"), ("DELETED", "remove"), ("MODIFIED", "change")]
        deleted = next(e for e in recorder.events if e[1] == "remove")
        assert deleted[2] is not None and deleted[2]["data"] == {"v": "1"}, "last known state is passed"
        server = await client.get(path, {"labelSelector": SELECTOR})
        on_server = sorted(f"{namespace}/{item['metadata']['name']}" for item in server["items"])
        assert sorted(informer.keys()) == on_server

        # And it keeps watching after the re-list.
        await client.create(path, config_map("after", namespace, v="1"))
        await recorder.wait_for("ADDED after", lambda: "after" in recorder.names(EventType.ADDED))
    finally:
        await informer.stop()


async def test_lists_page_through_large_collections(client: KubeClient, namespace: str) -> None:
    path = CONFIG_MAPS.collection_path(namespace)
    for i in range(5):
        await client.create(path, config_map(f"cm-{i}", namespace, v=str(i)))
    informer = Informer(client, CONFIG_MAPS, namespace=namespace, label_selector=SELECTOR, page_size=2)
    gets_before = client.requests_by_verb["get"]
    informer.start()
    try:
        await informer.wait_synced(30)
        assert sorted(informer.keys()) == [f"{namespace}/cm-{i}" for i in range(5)]
        assert client.requests_by_verb["get"] - gets_before == 3, "5 objects in pages of 2"
        assert all(obj["kind"] == "ConfigMap" and obj["apiVersion"] == "v1" for obj in informer.items())
    finally:
        await informer.stop()


async def test_cluster_scoped_resources_are_keyed_by_name(client: KubeClient, namespace: str) -> None:
    informer = Informer(client, NAMESPACES, label_selector=f"kubernetes.io/metadata.name={namespace}")
    informer.start()
    try:
        await informer.wait_synced(30)
        assert informer.keys() == [namespace]
        assert informer.get_by_name(namespace) is not None
    finally:
        await informer.stop()
