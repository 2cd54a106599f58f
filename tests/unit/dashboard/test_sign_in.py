"""Dashboard sessions and the sign-in form's checks: opaque ids that expire, a bounded store,
form tokens only this process can make, and the same-origin rule."""

from __future__ import annotations

from aiohttp.test_utils import make_mocked_request

from pykueue.manager.runtime.dashboard.sessions import SessionStore
from pykueue.manager.runtime.dashboard.sign_in import FormTokens, page, same_origin
from pykueue.manager.runtime.visibility.auth import UserInfo


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_session_id_is_opaque_and_ends_when_idle_or_old() -> None:
    clock = Clock()
    store = SessionStore(ttl_s=100, idle_s=10, clock=clock)
    session_id = store.create("the-token", UserInfo("alice"))
    assert "the-token" not in session_id and len(session_id) >= 40
    for step in range(1, 10):  # used every 9 s: kept alive until its lifetime ends
        clock.now = step * 9.0
        assert store.get(session_id) is not None
    clock.now = 101.0
    assert store.get(session_id) is None
    other = store.create("t", UserInfo("bob"))
    clock.now = 112.0  # 11 s unused
    assert store.get(other) is None
    assert store.get(None) is None and store.get("made-up") is None


def test_the_store_is_bounded_the_least_recently_used_going_first() -> None:
    store = SessionStore(max_sessions=3)
    ids = [store.create(f"t{i}", UserInfo(f"u{i}")) for i in range(3)]
    assert store.get(ids[0]) is not None  # now the most recently used
    newest = store.create("t3", UserInfo("u3"))
    assert len(store) == 3
    assert store.get(ids[1]) is None and store.get(ids[0]) is not None and store.get(newest) is not None
    store.end(newest)
    assert store.get(newest) is None


def test_form_tokens_are_ours_and_expire() -> None:
    clock = Clock()
    forms = FormTokens(ttl_s=60, clock=clock)
    token = forms.issue()
    assert forms.valid(token)
    assert not FormTokens(clock=clock).valid(token)  # another process's key
    nonce, expires, mac = token.split(".")
    assert not forms.valid(f"{nonce}.{int(expires) + 1000}.{mac}")  # a longer life is a forgery
    for junk in ("", "...", "a.b.c", "x." + "9" * 5000 + ".y", "\u00e9.1.\u00e9"):
        assert not forms.valid(junk)
    clock.now = 61.0
    assert not forms.valid(token)


def test_same_origin_compares_the_browsers_origin_with_the_host_asked() -> None:
    def request(**headers: str) -> bool:
        sent = make_mocked_request("POST", "/login", headers={"Host": "127.0.0.1:8084", **headers})
        return same_origin(sent)

    assert request(Origin="http://127.0.0.1:8084")
    assert request(Referer="http://127.0.0.1:8084/login")
    assert not request(Origin="http://127.0.0.1:9999")  # another port is another origin
    assert not request(Origin="https://evil.example", Referer="http://127.0.0.1:8084/login")
    assert not request(Origin="null") and not request()


def test_the_page_escapes_what_it_shows() -> None:
    html = page('"><script>', "<b>no</b>")
    assert "<script>" not in html and "&lt;b&gt;no&lt;/b&gt;" in html
    assert 'value="&quot;&gt;&lt;script&gt;"' in html
