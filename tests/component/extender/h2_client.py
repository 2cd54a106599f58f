"""A minimal HTTP/2 client over TLS for the tests: concurrent requests on one connection."""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    ResponseReceived,
    StreamEnded,
    StreamReset,
)


@dataclass
class Response:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    reset: bool = False


class H2Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.h2 = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
        self.pending: dict[int, tuple[Response, asyncio.Future[Response]]] = {}
        self.connections_opened = 1
        self.h2.initiate_connection()
        self.writer.write(self.h2.data_to_send())
        self.pump = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, port: int, context: ssl.SSLContext) -> H2Client:
        context.set_alpn_protocols(["h2"])
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context,
                                                       server_hostname="localhost")
        return cls(reader, writer)

    @property
    def alpn(self) -> str | None:
        ssl_object = self.writer.get_extra_info("ssl_object")
        return None if ssl_object is None else ssl_object.selected_alpn_protocol()

    async def request(self, method: str, path: str, body: bytes = b"") -> Response:
        stream_id = self.h2.get_next_available_stream_id()
        headers = [(":method", method), (":path", path), (":scheme", "https"),
                   (":authority", "localhost"), ("content-type", "application/json")]
        self.h2.send_headers(stream_id, headers, end_stream=not body)
        if body:  # small bodies only: within the default flow-control window
            self.h2.send_data(stream_id, body, end_stream=True)
        done: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self.pending[stream_id] = (Response(), done)
        self.writer.write(self.h2.data_to_send())
        return await done

    async def _read(self) -> None:
        try:
            while data := await self.reader.read(65536):
                for event in self.h2.receive_data(data):
                    self._on_event(event)
                self.writer.write(self.h2.data_to_send())
        except (ConnectionError, ssl.SSLError) as exc:
            self._fail(exc)
        self._fail(ConnectionResetError("connection closed"))

    def _on_event(self, event: object) -> None:
        if isinstance(event, ResponseReceived) and event.stream_id in self.pending:
            response = self.pending[event.stream_id][0]
            response.headers = {str(k): str(v) for k, v in event.headers or ()}
            response.status = int(response.headers[":status"])
        elif isinstance(event, DataReceived) and event.stream_id in self.pending:
            self.pending[event.stream_id][0].body += event.data or b""
            self.h2.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id)
        elif isinstance(event, StreamEnded | StreamReset) and event.stream_id in self.pending:
            response, done = self.pending.pop(event.stream_id)
            response.reset = isinstance(event, StreamReset)
            if not done.done():
                done.set_result(response)
        elif isinstance(event, ConnectionTerminated):
            self._fail(ConnectionResetError(f"GOAWAY {event.error_code}"))

    def _fail(self, exc: BaseException) -> None:
        for _, done in self.pending.values():
            if not done.done():
                done.set_exception(exc)
        self.pending.clear()

    async def close(self) -> None:
        self.pump.cancel()
        self.writer.close()
        await asyncio.gather(self.pump, return_exceptions=True)
