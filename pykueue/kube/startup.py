"""How a long-running process reports that it cannot start: one line, not a traceback.

An unreadable kubeconfig or Configuration file, an API server that cannot be reached or
refuses the process's identity, a port already taken: the operator needs the cause, and
the kubelet restarts the pod on the non-zero exit just as it would after a traceback.
Only the start-up steps are wrapped; a failure once the process runs keeps its traceback.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import yaml

from pykueue.kube.client import ApiError

log = logging.getLogger(__name__)

# What the environment, not the code, makes a start-up step fail with (an unusable kubeconfig
# raises KubeconfigError, a ValueError).
START_FAILURES: tuple[type[BaseException], ...] = (
    OSError, ValueError, TimeoutError, yaml.YAMLError, aiohttp.ClientError, ApiError)


class StartupError(Exception):
    """A start-up step failed; the message is the line the process prints."""


def one_line(exc: BaseException) -> str:
    """The exception's message on one line."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark  # its message spreads the position and a source excerpt over lines
        return f"{exc.problem} (line {mark.line + 1}, column {mark.column + 1})"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return "; ".join(lines) if lines else type(exc).__name__


@contextlib.contextmanager
def starting(step: str) -> Iterator[None]:
    """Turn the environment's failures of ``step`` into a StartupError naming the step."""
    try:
        yield
    except START_FAILURES as exc:
        raise StartupError(f"{step}: {one_line(exc)}") from exc


def check_kubeconfig(path: str | None, error: type[Exception] = StartupError) -> None:
    """A kubeconfig given but absent: raise ``error`` saying so."""
    if path is not None and not Path(path).is_file():
        raise error(f"kubeconfig {path} not found")


def exit_code(run: Callable[[], int]) -> int:
    """``run()``'s exit code, or 1 with one logged line when a start-up step failed."""
    try:
        return run()
    except StartupError as exc:
        log.debug("start-up failure", exc_info=exc)
        log.error("cannot start: %s", exc)
        return 1
