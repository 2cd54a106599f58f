"""Test-only fault injection into the running manager, off unless the environment asks.

The fault suite needs a leader whose own work fails (not a kill: a bug) to check that the
term ends and the other replica takes over. A replica started with
``PYKUEUE_FAULT_INJECTION_DIR=<dir>`` raises :class:`InjectedFault` at a named point once a
file of that name exists in ``<dir>`` (``fail-scheduling``: the leader's next scheduling
cycle). Nothing ships with the variable set (a unit test checks the manifests, the chart
and the image), and a replica that has it logs a warning at start.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

ENVIRONMENT_VARIABLE = "PYKUEUE_FAULT_INJECTION_DIR"
FAIL_SCHEDULING = "fail-scheduling"


class InjectedFault(RuntimeError):
    """Raised where a test asked for a fault."""


@dataclass(frozen=True)
class FaultHooks:
    directory: Path | None = None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> FaultHooks:
        value = environ.get(ENVIRONMENT_VARIABLE)
        if not value:
            return cls()
        log.warning("fault injection is enabled (%s is set): for tests only", ENVIRONMENT_VARIABLE)
        return cls(Path(value))

    def check(self, point: str) -> None:
        """Raise when the test created ``point`` in the fault directory."""
        if self.directory is not None and (self.directory / point).exists():
            raise InjectedFault(f"fault injected at {point}")
