"""The TAS scheduler dev up runs is the install's configuration with loopback addresses."""

from __future__ import annotations

from pathlib import Path

from pykueue.devcluster.tas_scheduler import ClientTLS, dev_config, shipped_config, tas_scheduler_config


def test_dev_up_changes_only_where_the_scheduler_connects() -> None:
    tls = ClientTLS(Path("/d/ca.crt"), Path("/d/tls.crt"), Path("/d/tls.key"))
    shipped = shipped_config()
    dev = dev_config("https://127.0.0.1:1234", tls, Path("/d/sa.kubeconfig"))
    assert dev["clientConnection"] == {**shipped["clientConnection"], "kubeconfig": "/d/sa.kubeconfig"}
    (ext,), (shipped_ext,) = dev["extenders"], shipped["extenders"]
    assert ext["urlPrefix"] == "https://127.0.0.1:1234"
    assert ext["tlsConfig"] == {"caFile": "/d/ca.crt", "certFile": "/d/tls.crt", "keyFile": "/d/tls.key"}
    assert {k: v for k, v in ext.items() if k not in ("urlPrefix", "tlsConfig")} == \
        {k: v for k, v in shipped_ext.items() if k not in ("urlPrefix", "tlsConfig")}
    rest = {k: v for k, v in dev.items() if k not in ("clientConnection", "extenders")}
    assert rest == {k: v for k, v in shipped.items() if k not in ("clientConnection", "extenders")}
    assert rest["leaderElection"]["leaderElect"] is True  # leader-elected under its own lease, as installed


def test_a_test_scheduler_takes_a_profile_of_its_own() -> None:
    from pykueue.devcluster.components import Layout

    tls = ClientTLS(Path("/d/ca.crt"), Path("/d/tls.crt"), Path("/d/tls.key"))
    config = tas_scheduler_config(Layout(Path("/state")), "https://127.0.0.1:1", tls, "mine")
    assert [p["schedulerName"] for p in config["profiles"]] == ["mine"]
    assert config["leaderElection"] == {"leaderElect": False}
