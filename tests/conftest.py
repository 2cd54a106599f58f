"""Shared test helpers: where the repository and the read-only shared notes are."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared reference folder beside the checkout; absent on a user's machine."""
    if not SHARED.is_dir():
        pytest.skip("../shared (Kueue reference data) is not beside this checkout")
    return SHARED
