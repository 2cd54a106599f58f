"""Rewrite ``gotypes.json`` from the Kueue release the dev cluster pins for kueuectl.

A maintainer's tool, run after bumping that pin: ``python -m pykueue.kueuectl.gotypes.regenerate``.
It copies the pinned module definition (``pykueue/devcluster/go/kueuectl``) into a temporary
directory next to ``schema_gen.go`` and runs it with the Go toolchain; modules come from
the Go module cache or proxy as for any build.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PINNED_MODULE = HERE.parents[1] / "devcluster" / "go" / "kueuectl"


def regenerate() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in ("go.mod", "go.sum"):
            text = (PINNED_MODULE / name).read_text()
            if name == "go.mod":
                # Our own module path, and no tool directive: only the requirements matter.
                lines = [line for line in text.splitlines() if not line.startswith(("module ", "tool "))]
                text = "module gotypes\n" + "\n".join(lines) + "\n"
            (work / name).write_text(text)
        shutil.copy(HERE / "schema_gen.go", work / "main.go")
        result = subprocess.run(["go", "run", "-mod=mod", "main.go"], cwd=work, capture_output=True,
                                text=True, check=False)
        if result.returncode != 0:
            sys.exit(f"generating the schema failed:\n{result.stderr}")
        (HERE / "gotypes.json").write_text(result.stdout)


if __name__ == "__main__":
    regenerate()
