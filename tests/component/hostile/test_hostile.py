"""Every endpoint under hostile load: malformed requests, slow connections, bad tokens.

The servers run in a process of their own (:mod:`.servers`, all of them on one event loop as in
``pykueue run``, with their real TLS and limits, logging at DEBUG); this process attacks them
over loopback in four phases, once for the module, and the tests below read the outcome:

1. 500 slow connections per endpoint (silent, a head that never ends, a body that never
   ends), with a good request to each endpoint while they are held;
2. at least 10,000 seeded malformed requests per endpoint, all endpoints at once;
3. 10,000 requests with invalid bearer tokens to ``/metrics`` and to the dashboard;
4. a good request to each endpoint, the server's counters, and its log.

Claims: no 5xx but the documented 503 at a cap (and 429 at the review budget); no hang;
every slow connection cut within its timeout; kube-apiserver asked a bounded number of
TokenReviews; memory bounded; the server alive and answering after; no token in its log.
The figures are printed (``pytest -s``) and attached to the test report.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import ssl
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pykueue.extender.endpoints import LIMITS as EXTENDER_LIMITS
from pykueue.kube.endpoints import METRICS_LIMITS, PROBE_LIMITS
from pykueue.kube.http_limits import ServerLimits
from pykueue.manager.jobs.registry import webhook_path
from pykueue.manager.runtime.dashboard.server import LIMITS as DASHBOARD_LIMITS
from pykueue.manager.runtime.token_review import NEGATIVE_TTL_S, TOKEN_REVIEW_BURST, TOKEN_REVIEWS_PER_S
from pykueue.manager.runtime.visibility.server import LIMITS as VISIBILITY_LIMITS
from pykueue.webhook.review import MAX_CONVERSION_BYTES, MAX_REVIEW_BYTES
from pykueue.webhook.server import LIMITS as WEBHOOK_LIMITS
from tests.component.extender.scenario import N11, N12, names_args, pod
from tests.conftest import REPO

from . import generator
from .slow import Slow, slow_connection
from .wire import Probe, Tally, Target, flood, one

SEED = 20260511
MALFORMED_PER_ENDPOINT = 10_200
BAD_TOKENS = 10_000
SLOW_PER_ENDPOINT = 500
WORKERS = 12
SLACK_S = 4.0  # a loaded machine's lateness on top of a timeout
ENDPOINTS = ("webhook", "extender", "visibility", "dashboard", "metrics", "probes")
LIMITS: dict[str, ServerLimits] = {"webhook": WEBHOOK_LIMITS, "extender": EXTENDER_LIMITS,
                                   "visibility": VISIBILITY_LIMITS, "dashboard": DASHBOARD_LIMITS,
                                   "metrics": METRICS_LIMITS, "probes": PROBE_LIMITS}
SLOW_BODY_PATHS = {"webhook": "/convert", "extender": "/filter", "visibility": "/apis", "dashboard": "/login",
                   "metrics": "/metrics", "probes": "/healthz"}
CAP_REASONS = (b"open connections", b"requests in flight", b"held in memory")


@dataclass
class Campaign:
    good_token: str
    tallies: dict[str, Tally] = field(default_factory=dict)
    bad_tokens: dict[str, Tally] = field(default_factory=dict)
    slow: dict[str, list[Slow]] = field(default_factory=dict)
    good_while_slow: dict[str, int | None] = field(default_factory=dict)
    good_after: dict[str, int | None] = field(default_factory=dict)
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    log: str = ""
    exit_code: int | None = None

    def figures(self) -> dict[str, Any]:
        return {
            "runtime_s": {k: round(v, 1) for k, v in self.seconds.items()},
            "malformed": {name: {"tried": t.tried, "5xx": sum(n for s, n in t.statuses.items() if s >= 500),
                                 "5xx_not_a_cap": len(_not_cap_refusals(t)), "hangs": dict(t.hangs),
                                 "closed_unanswered": dict(t.unanswered),
                                 "statuses": dict(sorted(t.statuses.items()))}
                          for name, t in self.tallies.items()},
            "slow": {name: {"tried": len(s), "max_held_s": round(max((x.held_s for x in s), default=0), 1),
                            "answers": dict(Counter(x.status for x in s))} for name, s in self.slow.items()},
            "bad_tokens": {name: {"tried": t.tried, "statuses": dict(t.statuses)}
                           for name, t in self.bad_tokens.items()},
            "token_reviews": _token_reviews(self),
            "memory_mb": {phase: round(s["memory"]["VmRSS"] / 2**20) for phase, s in self.stats.items()},
            "peak_memory_mb": round(self.stats["after"]["memory"]["VmHWM"] / 2**20),
            "good_while_slow": self.good_while_slow, "good_after": self.good_after,
            "crashes": 0 if self.exit_code in (None, 0, -15) else 1,
        }


def _token_reviews(campaign: Campaign) -> int:
    """The TokenReviews kube-apiserver got during the bad-token phase."""
    reviews: int = campaign.stats["after"]["token_reviews"] - campaign.stats["before_tokens"]["token_reviews"]
    return reviews


def _not_cap_refusals(tally: Tally) -> list[tuple[str, int, bytes]]:
    return [e for e in tally.server_errors if not (e[1] == 503 and any(r in e[2] for r in CAP_REASONS))]


def _contexts(directory: Path) -> dict[str, ssl.SSLContext | None]:
    def verifying(ca: Path, client: str | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(ca))
        if client is not None:
            context.load_cert_chain(str(directory / f"{client}.crt"), str(directory / f"{client}.key"))
        return context

    return {
        "webhook": verifying(directory / "webhook" / "ca.crt"),
        "extender": verifying(directory / "extender-ca.crt", "extender-pykueue-tas-scheduler"),
        "extender-intruder": verifying(directory / "extender-ca.crt", "extender-intruder"),
        "visibility": verifying(directory / "visibility.crt", "front-proxy-client"),
        "visibility-anonymous": verifying(directory / "visibility.crt"),
        "dashboard": None,
        "metrics": verifying(directory / "metrics.crt"),
        "probes": None,
    }


def _good_requests(token: str) -> dict[str, bytes]:
    review = generator.admission_review(generator.JOB, generator.JOB_GVK)
    filter_args = names_args(pod(0), [N11, N12])
    auth = (("Authorization", f"Bearer {token}"),)
    return {
        "webhook": generator.http("POST", webhook_path("mutate", generator.JOB_GVK),
                                  json.dumps(review).encode()),
        "extender": generator.http("POST", "/filter", json.dumps(filter_args).encode()),
        "visibility": generator.http("GET", f"{generator.VISIBILITY}/clusterqueues/cq/pendingworkloads",
                                     headers=(("X-Remote-User", "alice"),
                                              ("X-Remote-Group", "pykueue-hostile-viewers"))),
        "dashboard": generator.http("GET", "/api/overview", headers=auth),
        "metrics": generator.http("GET", "/metrics", headers=auth),
        "probes": generator.http("GET", "/healthz"),
    }


def _malformed(token: str) -> dict[str, list[tuple[str, bytes, int]]]:
    n = MALFORMED_PER_ENDPOINT
    return {
        "webhook": generator.webhook_probes(SEED, n, MAX_REVIEW_BYTES, MAX_CONVERSION_BYTES),
        "extender": generator.extender_probes(SEED + 1, n, EXTENDER_LIMITS.max_body_bytes),
        "visibility": generator.visibility_probes(SEED + 2, n),
        "dashboard": generator.dashboard_probes(SEED + 3, n, token),
        "metrics": generator.metrics_probes(SEED + 4, n, token),
        "probes": generator.metrics_probes(SEED + 5, n, token, path="/healthz"),
    }


async def _stats(control: Target) -> dict[str, Any]:
    answer = await one(control, generator.http("GET", "/stats"))
    stats: dict[str, Any] = json.loads(answer.body)
    return stats


async def _attack(campaign: Campaign, ports: dict[str, int], directory: Path) -> None:
    contexts = _contexts(directory)

    def target(name: str, port_of: str | None = None) -> Target:
        return Target(name, ports[port_of or name], contexts[name])

    targets = {name: target(name) for name in ENDPOINTS}
    control = Target("control", ports["control"])
    good = _good_requests(campaign.good_token)
    malformed = _malformed(campaign.good_token)  # built before the clock starts
    started = time.monotonic()
    campaign.stats["start"] = await _stats(control)

    # 1. Slow connections, with a good request to each endpoint while they are held.
    handshakes = asyncio.Semaphore(64)
    slow_tasks = {name: [asyncio.ensure_future(slow_connection(
        t, ("silent", "head", "head", "head", "body")[i % 5], SLOW_BODY_PATHS[name], 40.0, handshakes))
        for i in range(SLOW_PER_ENDPOINT)] for name, t in targets.items()}
    await asyncio.sleep(4.0)
    answers = await asyncio.gather(*(one(t, good[name]) for name, t in targets.items()),
                                   return_exceptions=True)
    for name, answer in zip(targets, answers, strict=True):
        campaign.good_while_slow[name] = getattr(answer, "status", None)
    for name, tasks in slow_tasks.items():
        campaign.slow[name] = list(await asyncio.gather(*tasks))
    campaign.seconds["slow"] = time.monotonic() - started

    # 2. Malformed requests, every endpoint at once.
    phase = time.monotonic()
    extra = {"extender": target("extender-intruder", "extender"),
             "visibility": target("visibility-anonymous", "visibility")}
    floods = []
    for name, probes in malformed.items():
        tally = campaign.tallies[name] = Tally()
        as_probes = [Probe(kind, data, withheld) for kind, data, withheld in probes]
        if name in extra:  # a share of them from a caller the endpoint must refuse first
            cut = len(as_probes) // 10
            floods.append(flood(extra[name], as_probes[:cut], tally, 2))
            as_probes = as_probes[cut:]
        floods.append(flood(targets[name], as_probes, tally, WORKERS))
    await asyncio.gather(*floods)
    campaign.seconds["malformed"] = time.monotonic() - phase

    # 3. Bad tokens: a client repeating 200 made-up tokens, and one making up a new one each time.
    campaign.stats["before_tokens"] = await _stats(control)
    phase = time.monotonic()
    token_floods = []
    for i, (name, path) in enumerate((("metrics", "/metrics"), ("dashboard", "/api/overview"))):
        tally = campaign.bad_tokens[name] = Tally()
        raw = generator.bad_token_probes(SEED + 10 + i, BAD_TOKENS, path, pool=200, unique_share=0.2)
        probes = [Probe(kind, data) for kind, data, _ in raw]
        token_floods.append(flood(targets[name], probes, tally, WORKERS))
    await asyncio.gather(*token_floods)
    campaign.seconds["bad_tokens"] = time.monotonic() - phase

    # 4. Still there?
    for name, t in targets.items():
        campaign.good_after[name] = (await one(t, good[name])).status
    campaign.stats["after"] = await _stats(control)
    campaign.seconds["total"] = time.monotonic() - started


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    directory = tmp_path_factory.mktemp("hostile")
    good_token = f"hostile-good-{secrets.token_hex(8)}"
    log_path = directory / "server.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen([sys.executable, "-m", "tests.component.hostile.servers", str(directory),
                                   good_token], cwd=REPO, stdout=subprocess.PIPE, stderr=log)
    result = Campaign(good_token)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line, f"the servers did not start: {log_path.read_text()[-3000:]}"
        asyncio.run(_attack(result, json.loads(line), directory))
        result.exit_code = server.poll()  # None: still running, as it should be
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
        result.log = log_path.read_text(errors="replace")
    (directory / "figures.json").write_text(json.dumps(result.figures(), indent=1))
    print("\nhostile figures:", json.dumps(result.figures(), indent=1))
    return result


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_malformed_requests_get_no_5xx_and_no_hang(campaign: Campaign, endpoint: str,
                                                   record_property: Any) -> None:
    tally = campaign.tallies[endpoint]
    record_property("figures", json.dumps(campaign.figures()["malformed"][endpoint]))
    assert tally.tried >= 10_000
    assert _not_cap_refusals(tally) == []
    assert sum(tally.hangs.values()) == 0
    # Refusals at a cap are the exception under this load, not the rule.
    assert sum(n for s, n in tally.statuses.items() if s >= 500) < tally.tried // 10


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_slow_connections_are_cut_within_their_timeouts(campaign: Campaign, endpoint: str) -> None:
    limits = LIMITS[endpoint]
    slow = campaign.slow[endpoint]
    assert len(slow) == SLOW_PER_ENDPOINT
    bound = max(limits.header_timeout_s, limits.body_timeout_s) + SLACK_S
    assert max(s.held_s for s in slow) <= bound, sorted(s.held_s for s in slow)[-5:]
    # Beyond the connection cap a slow client is told so at once.
    refused = [s for s in slow if s.status == 503]
    assert all(s.held_s < SLACK_S for s in refused)
    if limits.max_connections >= SLOW_PER_ENDPOINT + 20:
        assert refused == [] and campaign.good_while_slow[endpoint] == 200
    else:  # full: a newcomer is refused at once, never left waiting
        assert campaign.good_while_slow[endpoint] in (200, 503)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_the_server_answers_a_good_request_after(campaign: Campaign, endpoint: str) -> None:
    assert campaign.exit_code is None, "the server process ended"
    assert campaign.good_after[endpoint] == 200


@pytest.mark.parametrize("endpoint", ("metrics", "dashboard"))
def test_bad_tokens_are_refused(campaign: Campaign, endpoint: str) -> None:
    tally = campaign.bad_tokens[endpoint]
    assert tally.tried == BAD_TOKENS and sum(tally.hangs.values()) == 0
    assert _not_cap_refusals(tally) == []
    # 401 when reviewed (or remembered as refused), 429 beyond the review budget.
    assert set(tally.statuses) <= {401, 429, 503}
    assert tally.statuses[401] >= 1000


def test_bad_tokens_cost_a_bounded_number_of_token_reviews(campaign: Campaign) -> None:
    reviews = _token_reviews(campaign)
    elapsed = campaign.seconds["bad_tokens"] + 1.0
    # The budget bounds it whatever the tokens; the negative cache bounds the repeated ones.
    assert reviews <= TOKEN_REVIEW_BURST + TOKEN_REVIEWS_PER_S * elapsed
    assert reviews <= 2 * 200 * (1 + elapsed / NEGATIVE_TTL_S) + TOKEN_REVIEWS_PER_S * elapsed
    assert reviews < BAD_TOKENS * 2 // 20  # a twentieth of what an uncached server would ask
    assert campaign.stats["after"]["cached_tokens"] <= 2 * 4096  # both caches stay bounded


def test_memory_stays_bounded(campaign: Campaign) -> None:
    start = campaign.stats["start"]["memory"]
    after = campaign.stats["after"]["memory"]
    # Conversions of tens of megabytes are parsed a couple at a time: well under the pod's 2 GiB.
    assert after["VmHWM"] < 1024 * 2**20
    assert after["VmRSS"] - start["VmRSS"] < 512 * 2**20
    assert campaign.stats["after"]["sessions"] == 0  # no bad token made a session
    for name, stats in campaign.stats["after"]["listeners"].items():
        assert stats["open"] <= LIMITS[name].max_connections


def test_no_credential_reaches_the_log_at_debug(campaign: Campaign) -> None:
    assert " DEBUG " in campaign.log  # it did log at DEBUG
    assert campaign.good_token not in campaign.log
    assert "hostile-bad" not in campaign.log
    # Malformed input is the sender's fault: no error, no traceback, however much of it.
    assert " ERROR " not in campaign.log and "Traceback" not in campaign.log
