"""Free TCP ports on the loopback interface.

All ports are held open together while choosing, so one call never returns the same
port twice; the kernel may still hand one to someone else before our process binds it,
which start-up detects as a failed health check.
"""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"


def free_ports(count: int) -> list[int]:
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()
