"""Hostile load on a running pykueue, from a process of its own (so that its work does not slow
the measurements of the test that starts it).

``python -m tests.e2e.hostile_attack SPEC`` reads a JSON spec (``targets``: name -> port and
whether it speaks TLS; ``slow``: slow connections to hold open in all; ``seed``), opens the slow
connections, prints ``ready``, then floods every target with seeded malformed requests and
requests carrying made-up bearer tokens, round after round, until its stdin closes; then it
prints one JSON line of what it sent and what came back. The requests are the component
suite's (:mod:`tests.component.hostile.generator`); nothing here holds a credential.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import sys
from collections import Counter
from typing import Any

from pykueue.extender.endpoints import LIMITS as EXTENDER_LIMITS
from pykueue.webhook.review import MAX_CONVERSION_BYTES, MAX_REVIEW_BYTES
from tests.component.hostile import generator
from tests.component.hostile.slow import Slow, slow_connection
from tests.component.hostile.wire import Probe, Tally, Target, flood

PER_ROUND = 500
WORKERS = 4
SLOW_GIVE_UP_S = 600.0  # held until the server cuts it (or the run ends)
SLOW_PATHS = {"webhook": "/convert", "extender": "/filter", "dashboard": "/login", "metrics": "/metrics"}


def _unverified() -> ssl.SSLContext:
    """An attacker trusts nothing and presents nothing."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _probes(name: str, seed: int) -> list[Probe]:
    if name == "webhook":
        raw = generator.webhook_probes(seed, PER_ROUND, MAX_REVIEW_BYTES, MAX_CONVERSION_BYTES)
    elif name == "extender":
        raw = generator.extender_probes(seed, PER_ROUND, EXTENDER_LIMITS.max_body_bytes)
    elif name == "dashboard":
        raw = (generator.dashboard_probes(seed, PER_ROUND // 2, "not-a-token")
               + generator.bad_token_probes(seed, PER_ROUND // 2, "/api/overview", pool=200,
                                            unique_share=0.2))
    else:
        raw = (generator.metrics_probes(seed, PER_ROUND // 2, "not-a-token")
               + generator.bad_token_probes(seed, PER_ROUND // 2, "/metrics", pool=200, unique_share=0.2))
    return [Probe(kind, data, withheld) for kind, data, withheld in raw]


async def _until_stdin_closes() -> None:
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)


async def _attack(spec: dict[str, Any]) -> dict[str, Any]:
    targets = {name: Target(name, t["port"], _unverified() if t["tls"] else None)
               for name, t in spec["targets"].items()}
    handshakes = asyncio.Semaphore(32)
    names = sorted(targets)
    cut: list[Slow] = []

    async def hold(i: int) -> None:
        """One slow connection, opened again each time the server cuts it."""
        name = names[i % len(names)]
        while True:
            mode, path = ("silent", "head", "body")[i % 3], SLOW_PATHS[name]
            cut.append(await slow_connection(targets[name], mode, path, SLOW_GIVE_UP_S, handshakes))

    slow = [asyncio.ensure_future(hold(i)) for i in range(spec["slow"])]
    await asyncio.sleep(0)  # started; they open in waves of 32 while the floods begin
    print("ready", flush=True)
    stop = asyncio.ensure_future(_until_stdin_closes())
    tallies = {name: Tally() for name in targets}
    rounds = Counter[str]()

    async def keep_flooding(name: str) -> None:
        while not stop.done():
            probes = _probes(name, spec["seed"] + rounds[name])
            rounds[name] += 1
            flooding = asyncio.ensure_future(flood(targets[name], probes, tallies[name], WORKERS))
            await asyncio.wait([flooding, stop], return_when=asyncio.FIRST_COMPLETED)
            if not flooding.done():
                flooding.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await flooding

    await asyncio.gather(*(keep_flooding(name) for name in targets))
    for task in slow:
        task.cancel()
    return {
        "requests": {name: {"tried": t.tried, "statuses": {str(k): v for k, v in sorted(t.statuses.items())},
                            "5xx": sum(n for s, n in t.statuses.items() if s >= 500),
                            "server_errors": [[k, s, b.decode(errors="replace")]
                                              for k, s, b in t.server_errors],
                            "hangs": sum(t.hangs.values())}
                     for name, t in tallies.items()},
        "slow": {"held_at_once": spec["slow"], "cut_by_server": len(cut),
                 "statuses": {str(k): v for k, v in Counter(s.status for s in cut).items()}},
    }


def main() -> None:
    spec = json.loads(sys.argv[1])
    print(json.dumps(asyncio.run(_attack(spec))), flush=True)


if __name__ == "__main__":
    main()
