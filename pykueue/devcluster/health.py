"""Waiting for components to become healthy, with a deadline and a useful failure.

Every wait polls an endpoint until it answers 200 or the deadline passes; it also stops
early when the process being waited for has died, so a crash is reported in a second
with the end of its log instead of after a long timeout.
"""

from __future__ import annotations

import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from pykueue.devcluster.processes import ProcessRecord, is_running, log_tail

_POLL_S = 0.25


class StartupError(RuntimeError):
    """A component did not become healthy; the message carries the end of its log."""


def http_ok(url: str, context: ssl.SSLContext | None = None, timeout_s: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, context=context, timeout=timeout_s) as resp:
            return int(resp.status) == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def wait_for(what: str, check: Callable[[], bool], deadline_s: float,
             process: ProcessRecord | None = None) -> float:
    """Poll ``check`` until true; returns the seconds it took."""
    started = time.monotonic()
    while True:
        if check():
            return time.monotonic() - started
        if process is not None and not is_running(process):
            raise StartupError(f"{process.name} exited while waiting for {what}; "
                               f"log {process.log}:\n{log_tail(process)}")
        if time.monotonic() - started > deadline_s:
            detail = "" if process is None else f"; log {process.log}:\n{log_tail(process)}"
            raise StartupError(f"timed out after {deadline_s:.0f}s waiting for {what}{detail}")
        time.sleep(_POLL_S)
