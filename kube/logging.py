"""Structured logging (one JSON object per line) and the graceful-shutdown sequence.

JSON lines because the manager runs in a pod whose logs are collected and queried by field;
``extra={...}`` fields given to a log call become top-level keys. The shutdown helper turns
SIGTERM/SIGINT into an ordered stop: the leader elector first (its cancellation stops the
leader-only work and releases the Lease so a standby takes over immediately), then work
queues, informers and servers, each awaited before the next so nothing writes after the
component it depends on is gone.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

_RESERVED = frozenset(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RESERVED and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def setup_logging(level: str | int = "INFO", *, stream: TextIO | None = None,
                  json_lines: bool = True) -> None:
    """Route the root logger to one handler on ``stream`` (stderr by default)."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else
                         logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    # The kube client logs every request body at DEBUG; keep it quiet unless asked for.
    logging.getLogger("kubernetes_asyncio").setLevel(logging.WARNING)


Step = asyncio.Task[Any] | Callable[[], Awaitable[Any]]


class GracefulShutdown:
    """Wait for SIGTERM/SIGINT (or ``request()``), then stop components in the given order."""

    def __init__(self) -> None:
        self.requested = asyncio.Event()
        self.signal_received: int | None = None
        self._installed: list[int] = []

    def install(self, signals: Iterable[int] = (signal.SIGTERM, signal.SIGINT)) -> None:
        loop = asyncio.get_running_loop()
        for signum in signals:
            loop.add_signal_handler(signum, self._on_signal, signum)
            self._installed.append(signum)

    def uninstall(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in self._installed:
            loop.remove_signal_handler(signum)
        self._installed.clear()

    def _on_signal(self, signum: int) -> None:
        logging.getLogger(__name__).info("received %s, shutting down", signal.Signals(signum).name)
        self.signal_received = signum
        self.requested.set()

    def request(self) -> None:
        self.requested.set()

    async def wait(self) -> None:
        await self.requested.wait()

    @staticmethod
    async def stop_in_order(steps: Sequence[Step], timeout_s: float = 10.0) -> None:
        """Cancel each task (or await each async callable) in turn, each bounded by ``timeout_s``."""
        log = logging.getLogger(__name__)
        for step in steps:
            if isinstance(step, asyncio.Task):
                step.cancel()
                # Wait (bounded) without cancelling again: the step decides how long its cleanup takes.
                await asyncio.wait([step], timeout=timeout_s)
                if step.done() and not step.cancelled() and step.exception() is not None:
                    log.error("%s ended with an error", step.get_name(), exc_info=step.exception())
            else:
                try:
                    result = step()
                    if inspect.isawaitable(result):
                        async with asyncio.timeout(timeout_s):
                            await result
                except TimeoutError:
                    log.error("shutdown step %r timed out", step)
                except Exception:
                    log.exception("shutdown step %r failed", step)
