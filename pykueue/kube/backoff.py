"""Exponential backoff with jitter, shared by the informer (reconnects) and the work queue (retries).

Our own because kubernetes-asyncio retries nothing itself; a few lines, no dependency.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """``base * factor**n`` capped at ``cap``, then scaled by a random factor in [1-jitter, 1]."""

    base: float = 0.5
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 0.2
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempt: int) -> float:
        """Delay before retry number ``attempt`` (0 = first retry)."""
        raw = min(self.cap, self.base * self.factor ** max(0, attempt))
        return raw * (1.0 - self.jitter * self.rng.random())
