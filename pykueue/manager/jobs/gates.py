"""Kueue's feature gates as the job rules see them, at Kueue v0.19.2's defaults (one table
for the whole manager: ``manager.core.features``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pykueue.manager.core.features import DEFAULTS as DEFAULT_GATES
from pykueue.manager.core.features import gate_enabled

__all__ = ["DEFAULT_GATES", "FeatureGates"]


@dataclass(frozen=True)
class FeatureGates:
    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        return gate_enabled(self.overrides, name)
