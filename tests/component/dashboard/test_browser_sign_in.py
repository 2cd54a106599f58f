"""Signing in and out in a real (headless) browser, against the dashboard on loopback.

What a browser adds to the component tests: it sends the ``Origin`` header the server checks
(only as the page's referrer policy allows), follows the redirects with the fragment, keeps
the session cookie from scripts, and runs the sign-in page's script. Skipped without Chromium.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator

import pytest

from pykueue.manager.runtime.dashboard.changes import ChangeFeed
from pykueue.manager.runtime.dashboard.server import make_app, start
from pykueue.manager.scenario.explain import explain_record
from tests.e2e.browser import CANDIDATES, headless_chromium
from tests.unit.dashboard.fixture import world

from .test_server import ADMIN, FakeRbac, FakeTokens

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in CANDIDATES), reason="no Chromium here")


@pytest.fixture
async def base() -> AsyncIterator[str]:
    feed = ChangeFeed(world().core, poll_s=0.05)
    listener, port = await start(make_app(feed, FakeTokens(), FakeRbac(), explain_record, heartbeat_s=0.5),
                                 "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await listener.cleanup()


@pytest.mark.parametrize("link", ["/#token={}", "/?token={}"])
async def test_a_link_with_a_token_signs_in_with_one_click_and_signs_out(base: str, link: str) -> None:
    async with headless_chromium() as page:
        await page.goto(base + link.format(ADMIN))
        await page.wait_for("the form, filled in from the link",
                            "location.pathname === '/login' && document.getElementById('token')?.value")
        assert "token" not in await page.evaluate("location.href")
        await page.evaluate("document.querySelector('form[action=\"/login\"] button').click()")
        await page.wait_for("the live page", "location.pathname === '/' "
                            "&& document.getElementById('live')?.textContent === 'live'", 15)
        assert await page.wait_for("the user", "document.getElementById('user').textContent") == \
            "signed in as admin"
        assert await page.evaluate("document.cookie") == ""  # HttpOnly: no script sees the session
        await page.evaluate("document.querySelector('form.logout button').click()")
        await page.wait_for("the sign-in form again", "location.pathname === '/login'")
        await page.goto(base + "/")
        assert await page.evaluate("location.pathname") == "/login"
