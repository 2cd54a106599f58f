"""A bare HTTP/1.1 client over asyncio streams: it sends exactly the bytes it is given.

A library client would refuse (or repair) most of what the hostile suite sends: broken request
lines, bodies shorter than their Content-Length, headers without a colon. This one writes
raw bytes and reads what comes back, counting a connection the server closed without an answer
and one that did not answer in time, so the suite can tell a refusal from a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import Counter
from dataclasses import dataclass, field

ANSWER_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Target:
    name: str
    port: int
    ssl: ssl.SSLContext | None = None


@dataclass(frozen=True)
class Probe:
    """One request: ``data`` is sent as it is; ``withheld`` more body bytes were declared and
    are never sent (the connection is dropped after the answer)."""

    kind: str
    data: bytes
    withheld: int = 0


@dataclass
class Answer:
    status: int | None  # None: closed without an answer
    body: bytes = b""
    close: bool = False


@dataclass
class Tally:
    tried: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    by_kind: dict[str, Counter[int | None]] = field(default_factory=dict)
    unanswered: Counter[str] = field(default_factory=Counter)  # closed without a response, by kind
    hangs: Counter[str] = field(default_factory=Counter)  # no answer within ANSWER_TIMEOUT_S, by kind
    server_errors: list[tuple[str, int, bytes]] = field(default_factory=list)

    def count(self, kind: str, answer: Answer | None) -> None:
        self.tried += 1
        status = answer.status if answer is not None else None
        self.by_kind.setdefault(kind, Counter())[status] += 1
        if answer is None:
            self.hangs[kind] += 1
        elif status is None:
            self.unanswered[kind] += 1
        else:
            self.statuses[status] += 1
            if status >= 500:
                self.server_errors.append((kind, status, answer.body[:300]))


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.closed = False
        self.answered = 0  # requests answered on it: a server may close a used connection any time

    @classmethod
    async def open(cls, target: Target) -> Connection:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", target.port, ssl=target.ssl, server_hostname="localhost" if target.ssl else None,
            limit=1 << 20)
        return cls(reader, writer)

    async def exchange(self, probe: Probe) -> Answer:
        try:
            self.writer.write(probe.data)
            await self.writer.drain()
        except (ConnectionError, OSError):
            pass  # the server may have answered (and closed) before taking it all: read on
        answer = await self.read_answer(head_only=probe.data.startswith(b"HEAD "))
        if answer.close or probe.withheld or answer.status is None:
            self.close()
        self.answered += 1
        return answer

    async def read_answer(self, head_only: bool = False) -> Answer:
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, OSError,
                ssl.SSLError):
            return Answer(None, close=True)
        lines = head.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            return Answer(None, close=True)
        fields = (line.partition(":") for line in lines[1:] if line)
        headers = {name.strip().lower(): value.strip() for name, _, value in fields}
        close = headers.get("connection", "").lower() == "close"
        if head_only:
            return Answer(status, close=close)
        if "content-length" in headers:
            try:
                body = await self.reader.readexactly(int(headers["content-length"]))
            except (asyncio.IncompleteReadError, ConnectionError, OSError, ssl.SSLError):
                return Answer(status, close=True)
            return Answer(status, body, close)
        # A stream (server-sent events) or a body up to the close: the status is what counts.
        return Answer(status, close=True)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(Exception):
                self.writer.close()


async def flood(target: Target, probes: list[Probe], tally: Tally, workers: int) -> None:
    """Send every probe, ``workers`` connections at a time, each reused until the server (or
    the probe) ends it."""
    queue = iter(probes)

    async def worker() -> None:
        connection: Connection | None = None
        for probe in queue:
            try:
                async with asyncio.timeout(ANSWER_TIMEOUT_S):
                    if connection is None or connection.closed:
                        connection = await Connection.open(target)
                    reused = connection.answered > 0
                    answer: Answer | None = await connection.exchange(probe)
                    if answer is not None and answer.status is None and reused:
                        # Closed after its last answer (as after a 400): what any client does,
                        # send it again on a new connection; only a new one's silence counts.
                        connection = await Connection.open(target)
                        answer = await connection.exchange(probe)
            except TimeoutError:
                answer = None
                if connection is not None:
                    connection.close()
            except (ConnectionError, OSError, ssl.SSLError):
                answer = Answer(None)  # refused before anything was said
            tally.count(probe.kind, answer)
            if answer is not None and answer.status == 503 and b"open connections" in answer.body:
                await asyncio.sleep(0.05)  # the documented refusal at the connection cap: back off
        if connection is not None:
            connection.close()

    await asyncio.gather(*(worker() for _ in range(workers)))


async def one(target: Target, data: bytes) -> Answer:
    """One request on a connection of its own."""
    connection = await Connection.open(target)
    try:
        async with asyncio.timeout(ANSWER_TIMEOUT_S):
            return await connection.exchange(Probe("one", data))
    finally:
        connection.close()
