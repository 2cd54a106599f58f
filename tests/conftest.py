"""Shared test helpers: where the repository and the read-only shared notes are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run (the suite's verdict must not depend on
# the day's random seed); HYPOTHESIS_PROFILE=explore draws new ones, to look for failures.
# No per-example deadline: on a loaded 2-core machine a slow example is not a wrong one.
settings.register_profile("repeatable", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared reference folder beside the checkout; absent on a user's machine."""
    if not SHARED.is_dir():
        pytest.skip("../shared (Kueue reference data) is not beside this checkout")
    return SHARED
