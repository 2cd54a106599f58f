"""``pykueue simulate FILE... [--json]``: run the scheduling core over scenario files.

No cluster is involved: the files' objects are applied in order, the scenario's steps
run on simulated time, and the final state of every Workload and ClusterQueue is
printed (a table, or the JSON object of the design contract). Invalid input exits 2
with a one-line reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pykueue.manager.scenario.loader import ScenarioError, load
from pykueue.manager.scenario.report import result, table
from pykueue.manager.scenario.runner import Simulation

EXIT_INVALID = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="scenario YAML files, read as one world")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def simulate(paths: list[str]) -> dict[str, Any]:
    """Load and run scenario files; raises ScenarioError on invalid input."""
    sim = Simulation(load(paths))
    sim.run()
    return result(sim.core)


def main(args: argparse.Namespace) -> int:
    try:
        data = simulate(list(args.files))
    except ScenarioError as exc:
        print(f"pykueue simulate: {exc}", file=sys.stderr)
        return EXIT_INVALID
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=False))
    else:
        print(table(data))
    return 0
