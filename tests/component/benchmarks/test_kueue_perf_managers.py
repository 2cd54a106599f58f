"""The Kueue manager wrapper against a stand-in process: start, readiness, metrics, stop, rusage;
and the scrape of pykueue's /metrics, which needs a bearer token.

The stand-in is a small Python program that behaves as ``minimalkueue`` does towards the
benchmark: it takes ``--kubeconfig`` and ``--metricsPort``, serves client-go's request
counter on that port, burns a little CPU and exits on SIGINT.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import time
from pathlib import Path

import pytest
from aiohttp import web

from benchmarks.kueue_perf_managers import SCRAPE_TIMEOUT_S, KueueManager, http_get, peak_rss_mb
from pykueue.kube.endpoints import build_app, start_site
from pykueue.manager.runtime.metrics import KueueMetrics

STAND_IN = """\
import argparse, http.server, signal, sys, threading, time
parser = argparse.ArgumentParser()
parser.add_argument("--kubeconfig")
parser.add_argument("--metricsPort", type=int)
parser.add_argument("--enableTAS", action="store_true")
parser.add_argument("--zap-log-level", default="default")
args = parser.parse_args()
open(args.kubeconfig + ".seen", "w").write(("tas" if args.enableTAS else "plain") + " " + args.zap_log_level)
BODY = (b'rest_client_requests_total{code="200",host="h",method="GET"} 7\\n'
        b'rest_client_requests_total{code="200",host="h",method="PUT"} 5\\n'
        b'kueue_admission_attempts_total{result="success"} 3\\n'
        b'kueue_admission_attempts_total{result="inadmissible"} 8\\n')
class Metrics(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(0.5)  # a page that takes long to render
        self.send_response(200); self.end_headers(); self.wfile.write(BODY)
    def log_message(self, *a):
        pass
server = http.server.HTTPServer(("127.0.0.1", args.metricsPort), Metrics)
threading.Thread(target=server.serve_forever, daemon=True).start()
stop = threading.Event()
signal.signal(signal.SIGINT, lambda *_: stop.set())
end = time.process_time() + 0.2
while time.process_time() < end:
    pass
stop.wait(60)
sys.exit(0)
"""


@pytest.fixture
def stand_in(tmp_path: Path) -> Path:
    script = tmp_path / "minimalkueue"
    script.write_text(f"#!{sys.executable}\n{STAND_IN}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


async def test_started_waited_for_read_and_stopped(stand_in: Path, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("")
    seen = Path(f"{kubeconfig}.seen")
    polls = 0

    async def ready() -> bool:
        nonlocal polls
        polls += 1
        return seen.is_file()

    manager = KueueManager(stand_in, kubeconfig, ready, tmp_path, enable_tas=True, tag="-t", log_level=3)
    started = time.monotonic()
    await manager.start()
    assert seen.read_text() == "tas 3" and polls >= 1
    stats = await manager.stop()
    assert stats.api_requests == 12 and stats.api_requests_by_verb == {"get": 7, "put": 5}
    assert stats.scheduling_cycles == 11  # its kueue_admission_attempts_total
    assert stats.cpu_s >= 0.15 and stats.peak_rss_mb > 1
    # Its own peak, not floored by this (larger) test process as rusage's ru_maxrss would be.
    ours = peak_rss_mb(os.getpid())
    assert ours is not None and stats.peak_rss_mb < ours
    assert 0 < stats.wall_s <= time.monotonic() - started - 0.5  # the scrape is not the run's
    assert stats.stop_s is not None and stats.stop_s < 10
    assert manager.child.proc is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(manager.child.proc.pid, os.WNOHANG)  # reaped


async def test_a_manager_that_exits_early_is_an_error_naming_its_log(tmp_path: Path) -> None:
    script = tmp_path / "minimalkueue"
    script.write_text(f"#!{sys.executable}\nimport sys\nprint('no kubeconfig')\nsys.exit(3)\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)

    async def never() -> bool:
        return False

    manager = KueueManager(script, tmp_path / "kubeconfig", never, tmp_path)
    with pytest.raises(RuntimeError, match=r"exited \(3\) before it was ready; see .*minimalkueue.log"):
        await manager.start()
    assert "no kubeconfig" in (tmp_path / "minimalkueue.log").read_text()


async def test_pykueue_metrics_are_read_with_the_bearer_token() -> None:
    async def guard(request: web.Request) -> web.Response | None:
        return None if request.headers.get("Authorization") == "Bearer t0ken" else web.Response(status=401)

    runner, port = await start_site(build_app(KueueMetrics(), metrics_guard=guard), "127.0.0.1", 0)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        assert await asyncio.to_thread(http_get, url) is None
        assert await asyncio.to_thread(http_get, url, "wrong") is None
        text = await asyncio.to_thread(http_get, url, "t0ken")
    finally:
        await runner.cleanup()
    assert text is not None and "kueue_pending_workloads" in text


async def test_a_slow_metrics_page_is_waited_for_up_to_the_timeout_given() -> None:
    async def slow(_: web.Request) -> web.Response:
        await asyncio.sleep(0.5)  # a page that takes long to render
        return web.Response(text="kueue_pending_workloads 1\n")

    app = web.Application()
    app.router.add_get("/metrics", slow)
    runner, port = await start_site(app, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        assert await asyncio.to_thread(http_get, url, None, 0.1) is None
        assert await asyncio.to_thread(http_get, url, None, SCRAPE_TIMEOUT_S) == "kueue_pending_workloads 1\n"
    finally:
        await runner.cleanup()
