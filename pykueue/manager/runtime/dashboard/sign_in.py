"""Signing in to the dashboard: the form, and the checks that the form really came from it.

A token is exchanged for a session only by ``POST /login`` from the sign-in page, never by a
link: otherwise another site could sign a visitor in as the site's own identity (login CSRF)
and read what the visitor then does. The POST must therefore

* come from this origin: the browser's ``Origin`` header (or, without one, ``Referer``) names
  the host the request was sent to (a page on another port of the same machine is another
  origin, and cookies alone would not tell it apart);
* carry the form's token: an HMAC of a random nonce and an expiry under a key of this process,
  which a page of another origin cannot read from our form. It is stateless, so a flood of
  sign-in pages costs no memory.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import secrets
import time
from collections.abc import Callable
from importlib import resources
from string import Template
from urllib.parse import urlsplit

from aiohttp import web

FORM_TTL_S = 600.0


class FormTokens:
    def __init__(self, key: bytes | None = None, ttl_s: float = FORM_TTL_S,
                 clock: Callable[[], float] = time.time) -> None:
        self._key = key or secrets.token_bytes(32)
        self._ttl_s, self._clock = ttl_s, clock

    def issue(self) -> str:
        payload = f"{secrets.token_urlsafe(16)}.{int(self._clock() + self._ttl_s)}"
        return f"{payload}.{self._mac(payload)}"

    def valid(self, value: str) -> bool:
        payload, _, mac = value.rpartition(".")
        _, _, expires = payload.partition(".")
        if not (expires.isascii() and expires.isdigit() and len(expires) <= 12):
            return False
        if not hmac.compare_digest(mac.encode(), self._mac(payload).encode()):
            return False
        return self._clock() < int(expires)

    def _mac(self, payload: str) -> str:
        return hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()


def same_origin(request: web.Request) -> bool:
    """Whether the browser says the request comes from a page of the host it was sent to."""
    source = request.headers.get("Origin") or request.headers.get("Referer")
    if not source or source == "null":
        return False
    return urlsplit(source).netloc.lower() == request.host.lower()


_PAGE = Template(resources.files(__package__).joinpath("static", "login.html").read_text())


def page(form_token: str, message: str = "") -> str:
    return _PAGE.substitute(csrf=html.escape(form_token), message=html.escape(message))
