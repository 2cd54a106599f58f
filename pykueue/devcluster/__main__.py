"""``python -m pykueue.devcluster build|up|down|status``: the same commands as ``pykueue dev``.

Lets ``make test`` build the binaries without going through the whole ``pykueue`` CLI.
"""

from __future__ import annotations

import argparse
import sys

from pykueue.devcluster.cli import add_arguments, main


def run() -> int:
    parser = argparse.ArgumentParser(prog="python -m pykueue.devcluster",
                                     description="local control plane of real Kubernetes binaries")
    add_arguments(parser)
    return main(parser.parse_args())


if __name__ == "__main__":
    sys.exit(run())
