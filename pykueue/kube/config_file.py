"""The Kueue Configuration file every process starts from (``--config``).

The manager, the webhook and ``pykueue run`` read the same YAML file; reading it lives here
so no process imports another's command line to get at it. Defaulting and validation of
its fields stay with the models in ``api.config`` and with each process's settings.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import yaml

log = logging.getLogger(__name__)

def load_config(path: str | None) -> dict[str, Any]:
    """The file's mapping; ``{}`` (Kueue's defaults) when no path is given or the file is absent."""
    if not path or not Path(path).exists():
        if path:
            log.info("config file %s absent: using defaults", path)
        return {}
    data = yaml.safe_load(Path(path).read_text())
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a Kueue Configuration mapping")
    return data
