"""requirements.lock, which the image installs with --require-hashes, pins every runtime
dependency of pyproject.toml at a version its floor allows, each with hashes."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO

LOCK = REPO / "requirements.lock"


def _pins() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) of each entry of the lock."""
    pins: dict[str, tuple[str, list[str]]] = {}
    for entry in re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text()):
        head = re.match(r"([A-Za-z0-9_.-]+)==([^\s;\\]+)", entry)
        if head:
            hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", entry)
            pins[canonicalize_name(head.group(1))] = (head.group(2), hashes)
    return pins


def _runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in project["dependencies"]]


def test_every_runtime_dependency_is_pinned_within_its_floor() -> None:
    pins = _pins()
    for requirement in _runtime_requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in requirements.lock: regenerate it (see the Makefile's lock)"
        version, _ = pins[name]
        assert requirement.specifier.contains(version, prereleases=True), (name, version, str(requirement))


def test_every_pin_carries_hashes() -> None:
    pins = _pins()
    assert len(pins) > len(_runtime_requirements())  # transitive dependencies are pinned too
    unhashed = sorted(name for name, (_, hashes) in pins.items() if not hashes)
    assert not unhashed, f"pinned without a hash: {unhashed}"


def test_the_floors_carry_the_fixes() -> None:
    """Releases below these have known vulnerabilities (or lack an API the client awaits)."""
    floors = {canonicalize_name(r.name): r.specifier for r in _runtime_requirements()}
    for name, too_old in {"aiohttp": "3.12.13", "h2": "4.2.0", "cryptography": "44.0.0",
                          "kubernetes-asyncio": "32.3.2", "orjson": "3.9.14"}.items():
        assert not floors[name].contains(too_old), f"{name} {floors[name]} admits {too_old}"


def test_the_lock_names_no_local_path_or_index() -> None:
    text = LOCK.read_text()
    assert "--find-links" not in text and "--index-url" not in text and "file://" not in text
