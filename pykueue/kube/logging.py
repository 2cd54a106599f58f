"""Logging for every pykueue process (text, or one JSON object per line), kept free of
credentials, and the graceful-shutdown sequence.

JSON lines because the manager runs in a pod whose logs are collected and queried by field;
``extra={...}`` fields given to a log call become top-level keys. Whatever the level, no
credential reaches a log: the kube client library's DEBUG output is whole response bodies
(TokenReviews echo the caller's token, Secrets hold keys and kubeconfigs), so that logger
never goes below INFO, and every line passes :class:`CredentialRedactor`, which masks bearer
tokens, ``token``/``password`` fields and values, JWTs and private keys, in case a message or
an exception quotes one. The shutdown helper turns
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
import re
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

_RESERVED = frozenset(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime", "taskName"}


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
# Loggers whose DEBUG lines are request or response bodies.
BODY_LOGGERS = ("kubernetes_asyncio.client.rest",)

_REDACTIONS = (
    (re.compile(r"(?i)\b(bearer\s+)[^\s\"',;]+"), r"\1[redacted]"),
    (re.compile(r"""(?i)(["']?\b(?:token|access_token|id_token|password|client[-_]key[-_]data)["']?\s*[:=]\s*"""
                r"""["']?)[^"'\s,;&}]+"""), r"\1[redacted]"),
    (re.compile(r"\beyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]*"), "[redacted JWT]"),
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S),
     "[redacted private key]"),
    (re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]{16,}"), "[redacted PEM]"),  # base64 of "-----BEGIN"
)


def redact(text: str) -> str:
    for pattern, replacement in _REDACTIONS:
        text = pattern.sub(replacement, text)
    return text


class CredentialRedactor(logging.Filter):
    """Masks credentials in a record's message and exception text (see the module docstring).

    A handler's filter, so that it sees the records of every logger the handler prints."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


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
        if record.exc_text or record.exc_info:
            entry["error"] = record.exc_text or self.formatException(record.exc_info)  # type: ignore[arg-type]
        return json.dumps(entry, default=str)


def setup_logging(level: str | int = "INFO", *, stream: TextIO | None = None,
                  json_lines: bool = True) -> None:
    """Route the root logger to one redacting handler on ``stream`` (stderr by default)."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(CredentialRedactor())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    # The kube client's chatter is rarely wanted; its DEBUG bodies never (see above).
    logging.getLogger("kubernetes_asyncio").setLevel(logging.WARNING)
    for name in BODY_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)


def configure_cli_logging(level: str) -> None:
    """What each ``pykueue`` command's ``--log-level`` sets up: text lines on stderr (or the
    handlers already there, as ``logging.basicConfig`` would keep them), every one redacting."""
    root = logging.getLogger()
    if not root.handlers:
        stderr = logging.StreamHandler(sys.stderr)
        stderr.setFormatter(logging.Formatter(TEXT_FORMAT))
        root.addHandler(stderr)
    for handler in root.handlers:
        if not any(isinstance(f, CredentialRedactor) for f in handler.filters):
            handler.addFilter(CredentialRedactor())
    root.setLevel(level.upper())
    for name in BODY_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)


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
