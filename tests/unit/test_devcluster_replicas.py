"""The fault suite's loopback "Service" sends each connection to a replica that takes it."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykueue.devcluster.ports import free_ports
from pykueue.devcluster.replicas import LoopbackService, Replica, Replicas

FLAG = "--webhook-bind-address"


class _Named:
    """A TCP server that answers every connection with its name, then closes it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.sendall(self.name.encode())

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept: refused from now on
        self.sock.close()


class _Stub(Replica):
    """A replica whose process and probe the test decides."""

    def __init__(self, name: str, address: str) -> None:
        super().__init__(name, [], {FLAG: address}, Path("/nonexistent"))
        self.up = True
        self.is_ready = True

    def running(self) -> bool:
        return self.up

    def ready(self) -> bool:
        return self.up and self.is_ready


def _ask(address: str) -> str:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        return conn.recv(100).decode()


@pytest.fixture
def servers() -> Iterator[list[_Named]]:
    made = [_Named("a"), _Named("b")]
    yield made
    for server in made:
        server.close()


def _service(stubs: list[_Stub]) -> tuple[LoopbackService, str]:
    listen = f"127.0.0.1:{free_ports(1)[0]}"
    service = LoopbackService({FLAG: listen}, stubs)
    service.start()
    return service, listen


def _wait_ready(service: LoopbackService, names: set[str]) -> None:
    for _ in range(100):
        if service.ready_replicas() == names:
            return
        threading.Event().wait(0.05)
    raise AssertionError(f"ready replicas {service.ready_replicas()}, wanted {names}")


def test_connections_go_to_ready_replicas_in_turn(servers: list[_Named]) -> None:
    stubs = [_Stub("a", servers[0].address), _Stub("b", servers[1].address)]
    service, listen = _service(stubs)
    try:
        _wait_ready(service, {"a", "b"})
        assert sorted(_ask(listen) for _ in range(4)) == ["a", "a", "b", "b"]
        stubs[0].is_ready = False  # starting, or stopping: no endpoint while another is ready
        _wait_ready(service, {"b"})
        assert {_ask(listen) for _ in range(4)} == {"b"}
    finally:
        service.stop()


def test_a_replica_that_refuses_is_skipped(servers: list[_Named]) -> None:
    stubs = [_Stub("a", servers[0].address), _Stub("b", servers[1].address)]
    service, listen = _service(stubs)
    try:
        _wait_ready(service, {"a", "b"})
        servers[0].close()  # killed before its probe said so
        assert {_ask(listen) for _ in range(4)} == {"b"}
        assert service.connections["b"] >= 4
    finally:
        service.stop()


def test_with_no_replica_the_connection_is_closed(servers: list[_Named]) -> None:
    stubs = [_Stub("a", servers[0].address)]
    stubs[0].up = False
    service, listen = _service(stubs)
    try:
        assert _ask(listen) == ""
        assert service.refused == 1
    finally:
        service.stop()


def test_the_supervisor_restarts_a_replica_that_exits_unasked(tmp_path: Path) -> None:
    replicas = Replicas(1, tmp_path, report=lambda _: None)
    replica = Replica("replica-0", ["sh", "-c", "exit 3"], {}, tmp_path / "replica-0.log")
    replicas.replicas.append(replica)
    replica.start()
    supervisor = threading.Thread(target=replicas._supervise, daemon=True)
    supervisor.start()
    try:
        for _ in range(100):
            if replica.starts >= 2:
                break
            threading.Event().wait(0.05)
        assert replica.starts >= 2
        assert [(e.replica, e.code) for e in replicas.exits][:1] == [("replica-0", 3)]
        replica.stop()  # asked: not started again
        starts = replica.starts
        threading.Event().wait(1.5)
        assert replica.starts == starts
    finally:
        replicas._stop_supervising.set()
        supervisor.join(5)
