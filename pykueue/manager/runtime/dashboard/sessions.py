"""Signed-in browsers: an opaque session id in the cookie, the identity behind it kept here.

The cookie used to hold the bearer token itself; anything that could read a cookie (a proxy's
log, a shared machine's browser profile) then had a Kubernetes credential. Now the browser
holds a random id that means nothing outside this process, mapped here to the token's user
and the token (held in memory only, to be reviewed again through the cache on every request,
so a revoked or expired token ends the session within the cache's seconds).

Sessions end after ``TTL_S`` in all, ``IDLE_S`` unused, at sign-out, or when the token stops
being valid. Each replica has its own (``kubectl port-forward`` reaches one pod); a restart
signs everyone out. The store is bounded: only a valid token makes a session, and beyond
``MAX_SESSIONS`` the least recently used one goes.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from pykueue.manager.runtime.visibility.auth import UserInfo

TTL_S = 8 * 3600.0
IDLE_S = 3600.0
MAX_SESSIONS = 1024


@dataclass
class Session:
    token: str
    user: UserInfo
    expires_at: float
    last_used: float


class SessionStore:
    def __init__(self, ttl_s: float = TTL_S, idle_s: float = IDLE_S, max_sessions: int = MAX_SESSIONS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s, self.idle_s, self.max_sessions, self._clock = ttl_s, idle_s, max_sessions, clock
        self._sessions: dict[str, Session] = {}  # least recently used first

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self, token: str, user: UserInfo) -> str:
        now = self._clock()
        self._sessions = {k: s for k, s in self._sessions.items() if self._alive(s, now)}
        while len(self._sessions) >= self.max_sessions:
            del self._sessions[next(iter(self._sessions))]
        session_id = secrets.token_urlsafe(32)
        self._sessions[session_id] = Session(token, user, now + self.ttl_s, now)
        return session_id

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        session = self._sessions.pop(session_id, None)
        now = self._clock()
        if session is None or not self._alive(session, now):
            return None
        session.last_used = now
        self._sessions[session_id] = session  # now the most recently used
        return session

    def end(self, session_id: str | None) -> None:
        if session_id:
            self._sessions.pop(session_id, None)

    def _alive(self, session: Session, now: float) -> bool:
        return now < session.expires_at and now - session.last_used < self.idle_s
