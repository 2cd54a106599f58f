"""Headless Chromium driven over the Chrome DevTools Protocol, with aiohttp's websocket client.

Enough of a browser for the dashboard's end-to-end tests: open a URL, evaluate JavaScript in
the page, wait for a condition (polled against a deadline, never slept on), save a PNG.
Chromium comes from the distribution's ``chromium`` package; :func:`chromium_binary`
installs it with apt-get when it is missing and the test runs as root.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
START_DEADLINE_S = 30.0


def chromium_binary() -> str:
    """The Chromium executable, installed from the distribution when missing (as root)."""
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeError("chromium is not installed (apt-get install -y chromium) "
                           "and cannot be installed here")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update"], check=True, capture_output=True, env=env, timeout=600)
    subprocess.run(["apt-get", "install", "-y", "chromium"], check=True, capture_output=True, env=env,
                   timeout=1200)
    found = shutil.which("chromium")
    if not found:
        raise RuntimeError("apt-get installed chromium but it is not on PATH")
    return found


class CdpError(RuntimeError):
    pass


class Page:
    """One page target's CDP session."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for message in self._ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(message.data)
            future = self._waiting.pop(data.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(data)
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(CdpError("the browser closed the connection"))

    async def send(self, method: str, timeout_s: float = 30.0, **params: Any) -> dict[str, Any]:
        call_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = future
        await self._ws.send_str(json.dumps({"id": call_id, "method": method, "params": params}))
        reply = await asyncio.wait_for(future, timeout_s)
        if "error" in reply:
            raise CdpError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result") or {}
        return result

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                                 awaitPromise=True)
        if "exceptionDetails" in result:
            raise CdpError(f"{expression!r} threw: {result['exceptionDetails'].get('text')}")
        return (result.get("result") or {}).get("value")

    async def wait_for(self, what: str, expression: str, deadline_s: float = 30.0,
                       poll_s: float = 0.05) -> Any:
        """Poll ``expression`` until it is truthy; raise TimeoutError naming ``what`` at the deadline."""
        started = time.monotonic()
        last: Any = None
        while True:
            with contextlib.suppress(CdpError):  # e.g. evaluated while the document is replaced
                last = await self.evaluate(expression)
                if last:
                    return last
            if time.monotonic() - started > deadline_s:
                raise TimeoutError(f"after {deadline_s:.1f}s still waiting for {what} (last value {last!r})")
            await asyncio.sleep(poll_s)

    async def goto(self, url: str, deadline_s: float = 30.0) -> None:
        await self.send("Page.navigate", url=url)
        await self.wait_for(f"{url} to load", "document.readyState === 'complete' && location.href",
                            deadline_s)

    async def screenshot(self, path: Path) -> Path:
        data = await self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data["data"]))
        return path

    async def close(self) -> None:
        await self._ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


async def _devtools_port(profile: Path, process: subprocess.Popen[bytes]) -> int:
    # With --remote-debugging-port=0 Chromium picks a port and writes it to this file.
    marker = profile / "DevToolsActivePort"
    started = time.monotonic()
    while time.monotonic() - started < START_DEADLINE_S:
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with {process.returncode} before it listened")
        if marker.exists():
            first = marker.read_text().splitlines()[:1]
            if first and first[0].isdigit():
                return int(first[0])
        await asyncio.sleep(0.05)
    raise TimeoutError(f"chromium did not listen within {START_DEADLINE_S:.0f}s")


@contextlib.asynccontextmanager
async def headless_chromium(width: int = 1400, height: int = 1000) -> AsyncIterator[Page]:
    """A headless Chromium with one page of ``width`` x ``height``; stopped on exit."""
    binary = chromium_binary()
    # Chromium's helpers may still write to the profile for a moment after it exits.
    with tempfile.TemporaryDirectory(prefix="pykueue-chromium-", ignore_cleanup_errors=True) as profile_dir:
        profile = Path(profile_dir)
        process = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             f"--user-data-dir={profile}", "--remote-debugging-port=0", f"--window-size={width},{height}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            port = await _devtools_port(profile, process)
            async with aiohttp.ClientSession() as session:
                async with session.get(f"http://127.0.0.1:{port}/json/list") as r:
                    targets = await r.json()
                target = next(t for t in targets if t.get("type") == "page")
                ws = await session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0)
                page = Page(ws)
                try:
                    await page.send("Page.enable")
                    await page.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                                    deviceScaleFactor=1, mobile=False)
                    yield page
                finally:
                    await page.close()
        finally:
            # Its own session: the group holds exactly this browser and its helper processes.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
