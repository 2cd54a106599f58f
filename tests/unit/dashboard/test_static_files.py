"""The page ships in the package: every file the server serves is package data, and the
page loads nothing from elsewhere."""

from __future__ import annotations

import fnmatch
import re
import tomllib

from pykueue.manager.runtime.dashboard import server
from tests.conftest import REPO

STATIC = REPO / "pykueue" / "manager" / "runtime" / "dashboard" / "static"


def test_every_served_file_is_package_data() -> None:
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "pykueue.manager.runtime.dashboard"]
    served = {"index.html", "login.html", *server.STATIC_FILES}
    assert served == {p.name for p in STATIC.iterdir()}
    for name in served:
        assert any(fnmatch.fnmatch(f"static/{name}", pattern) for pattern in patterns), name


def test_no_external_resources() -> None:
    for path in STATIC.iterdir():
        text = path.read_text()
        assert not re.search(r"(src|href)=\"(https?:)?//", text), path.name
        assert "http://" not in text and "https://" not in text, path.name
