"""Where the dev cluster keeps things: sources in the checkout, outputs in a cache.

Built binaries and the running cluster's state live outside the repository, under
``~/.cache/pykueue`` unless ``PYKUEUE_CACHE`` names another root, so that a checkout stays
clean and several checkouts share one set of binaries. ``PYKUEUE_DEV_STATE`` moves only
the cluster's state directory.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "PYKUEUE_CACHE"
# Only the running cluster's state, e.g. to run a second, separate dev cluster that still
# shares the built binaries.
STATE_ENV = "PYKUEUE_DEV_STATE"

PACKAGE_DIR = Path(__file__).resolve().parent
GO_DIR = PACKAGE_DIR / "go"
REPO_DIR = PACKAGE_DIR.parents[1]
MANIFESTS_DIR = REPO_DIR / "manifests"
DEV_MANIFESTS_DIR = MANIFESTS_DIR / "dev"


def cache_root() -> Path:
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    return Path.home() / ".cache" / "pykueue"


def bin_root() -> Path:
    return cache_root() / "bin"


def state_dir() -> Path:
    override = os.environ.get(STATE_ENV)
    if override:
        return Path(override).expanduser()
    return cache_root() / "dev"
