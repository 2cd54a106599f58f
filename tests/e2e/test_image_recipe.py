"""The image's recipe, run without a container engine: the build stage's packages make a wheel,
the hashed lock installs into a fresh virtual environment, and the result runs every cluster
command while the dev tooling is absent. Needs the package index (as the image build does)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.e2e

DOCKERFILE = (REPO / "Dockerfile").read_text()


def _run(*argv: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # Nothing of this checkout may leak in (its egg-info would count as pykueue installed).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def image_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("image")
    build_stage = DOCKERFILE.split("\nFROM ")[1].split("\nFROM ")[0]
    src = root / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for package in re.findall(r"^COPY\s+(\S+)\s+\./\1\s*$", build_stage, re.M):
        shutil.copytree(REPO / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    env = root / "venv"
    venv.create(env, with_pip=True)
    pip = env / "bin" / "pip"
    wheels = root / "wheels"
    built = _run(pip, "wheel", "--quiet", "--no-deps", "--wheel-dir", wheels, ".", cwd=src)
    assert built.returncode == 0, built.stderr
    deps = _run(pip, "install", "--quiet", "--require-hashes", "--only-binary=:all:", "-r",
                REPO / "requirements.lock")
    assert deps.returncode == 0, deps.stderr
    own = _run(pip, "install", "--quiet", "--no-deps", "--no-index", f"--find-links={wheels}", "pykueue")
    assert own.returncode == 0, own.stderr
    return env


@pytest.mark.parametrize("command", ["run", "manager", "webhook", "extender", "certs"])
def test_every_cluster_command_starts_from_the_image(image_env: Path, command: str) -> None:
    result = _run(image_env / "bin" / "pykueue", command, "--help", cwd=image_env)
    assert result.returncode == 0, result.stderr
    assert f"usage: pykueue {command}" in result.stdout


def test_the_dev_tooling_is_not_in_the_image(image_env: Path) -> None:
    absent = _run(image_env / "bin" / "python", "-c", "import pykueue.devcluster", cwd=image_env)
    assert "No module named 'pykueue.devcluster'" in absent.stderr
    dev = _run(image_env / "bin" / "pykueue", "dev", cwd=image_env)
    assert (dev.returncode, dev.stderr.strip()) == (
        2, "pykueue dev: not part of this installation (run it from a source checkout)")


def test_the_image_runs_the_locked_versions(image_env: Path) -> None:
    frozen = _run(image_env / "bin" / "pip", "freeze", "--exclude-editable")
    installed = {line.split("==")[0].lower().replace("_", "-"): line.split("==")[1]
                 for line in frozen.stdout.splitlines() if "==" in line}
    lock = (REPO / "requirements.lock").read_text()
    locked = dict(re.findall(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)", lock, re.M))
    for name, version in locked.items():
        assert installed.get(name.lower().replace("_", "-")) == version, name
    assert sys.version_info[:2] == (3, 11)  # the base image's Python
