"""One coordination Lease as kube-apiserver keeps it, for leader-election tests: 404 until
created, compare-and-swap writes, and a switch that makes every request fail (an outage)."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.kube.client import ApiError, WriteFence


class FakeLease:
    def __init__(self, holder: str | None = None, renewed: str = "t0") -> None:
        self.obj: dict[str, Any] | None = None
        if holder is not None:
            self.obj = {"metadata": {"name": "l", "namespace": "ns", "resourceVersion": "1"},
                        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "renewTime": renewed}}
        self.rv = 1
        self.down = False
        self.fence = WriteFence()  # as the client's: closed when the Lease is lost

    def fence_writes(self, reason: str) -> None:
        self.fence.close(reason)

    def renewed_by_holder(self) -> None:
        """The holder renews: a new record, seen as a change."""
        assert self.obj is not None
        self.rv += 1
        self.obj["spec"]["renewTime"] = f"t{self.rv}"
        self.obj["metadata"]["resourceVersion"] = str(self.rv)

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> dict[str, Any]:
        if self.down:
            raise ConnectionRefusedError("kube-apiserver is away")
        self.fence.check(method, path)
        if method == "GET":
            if self.obj is None:
                raise ApiError(404)
            return copy.deepcopy(self.obj)
        stale = self.obj is not None and \
            body["metadata"].get("resourceVersion") != self.obj["metadata"]["resourceVersion"]
        if stale:
            raise ApiError(409, "Conflict")
        self.rv += 1
        stored = copy.deepcopy(body)
        stored["metadata"] = {**body["metadata"], "resourceVersion": str(self.rv)}
        self.obj = stored
        return copy.deepcopy(stored)
