"""The four ways ``status_write_cost`` sends one admission carry the same status."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.status_write_cost import METHODS, body_bytes, main, workload, write_request
from benchmarks.webhook_latency import percentile
from pykueue.kube.client import APPLY_PATCH, JSON_PATCH, MERGE_PATCH
from pykueue.kube.merge_patch import apply_merge_patch


def _stored() -> dict[str, Any]:
    obj = workload(7)
    obj["metadata"].update(resourceVersion="41", uid="u-7")
    return obj


def _after(method: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The object as kube-apiserver stores it after the write (for these bodies)."""
    verb, body, content_type, query = write_request(method, obj, 1_700_000_000.0)
    if method == "merge":
        assert (verb, content_type, query) == ("PATCH", MERGE_PATCH, {})
        assert isinstance(body, dict) and body["metadata"] == {"resourceVersion": "41"}
        return dict(apply_merge_patch(obj, body))
    if method == "put":
        assert (verb, content_type) == ("PUT", "application/json")
        assert isinstance(body, dict) and body["metadata"] == obj["metadata"] and body["spec"] == obj["spec"]
        return body
    if method == "json":
        assert (verb, content_type) == ("PATCH", JSON_PATCH)
        assert isinstance(body, list)
        assert body[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "41"}
        assert body[1]["op"] == "add" and body[1]["path"] == "/status"
        return {**obj, "status": body[1]["value"]}
    assert (verb, content_type, query) == ("PATCH", APPLY_PATCH, {"fieldManager": "status-write-cost",
                                                                  "force": "true"})
    assert isinstance(body, dict) and body["metadata"] == {"name": "w-7", "namespace": "status-write-cost"}
    return {**obj, "status": body["status"]}


def test_every_method_admits_to_the_same_status() -> None:
    obj = _stored()
    statuses = {m: _after(m, obj)["status"] for m in METHODS}
    assert len({repr(s) for s in statuses.values()}) == 1
    status = statuses["merge"]
    assert status["admission"]["clusterQueue"] == "status-write-cost"
    assert status["admission"]["podSetAssignments"][0]["resourceUsage"] == {"cpu": "1"}
    assert [c["type"] for c in status["conditions"]] == ["QuotaReserved", "Admitted"]


def test_bodies_differ_in_size_as_expected() -> None:
    obj = _stored()
    sizes = {m: body_bytes(m, obj) for m in METHODS}
    assert sizes["merge"] < sizes["put"] and sizes["apply"] < sizes["put"]


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown method 'cbor'"):
        write_request("cbor", _stored(), 0.0)


def test_percentile() -> None:
    assert percentile([3.0, 1.0, 2.0, 4.0], 0.5) == 3.0
    assert percentile([5.0], 0.99) == 5.0
    assert percentile([], 0.5) == 0.0


@pytest.mark.parametrize("argv", [["--writes", "0"], ["--rounds", "0"], ["--writes", "-3"]])
def test_no_writes_or_rounds_is_a_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)  # refused before any cluster is touched
    assert exited.value.code == 2
    assert "--writes and --rounds must be at least 1" in capsys.readouterr().err
