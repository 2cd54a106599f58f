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
    RemoteSettingsChanged,
    ResponseReceived,
    StreamEnded,
    StreamReset,
    WindowUpdated,
)
from h2.settings import SettingCodes, Settings


@dataclass
class Response:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    reset: bool = False


class H2Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 receive_window: int | None = None) -> None:
        self.reader, self.writer = reader, writer
        self.h2 = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
        if receive_window is not None:  # a small one makes the server wait for window updates
            self.h2.local_settings = Settings(client=True, initial_values={
                SettingCodes.INITIAL_WINDOW_SIZE: receive_window})
        self.pending: dict[int, tuple[Response, asyncio.Future[Response]]] = {}
        self.window_waiters: list[asyncio.Future[None]] = []
        self.windows_waited = 0  # how often a window update was awaited (flow control at work)
        self.h2.initiate_connection()
        self.writer.write(self.h2.data_to_send())
        self.pump = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, port: int, context: ssl.SSLContext, receive_window: int | None = None) -> H2Client:
        context.set_alpn_protocols(["h2"])
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context,
                                                       server_hostname="localhost")
        return cls(reader, writer, receive_window)

    @property
    def alpn(self) -> str | None:
        ssl_object = self.writer.get_extra_info("ssl_object")
        return None if ssl_object is None else ssl_object.selected_alpn_protocol()

    async def request(self, method: str, path: str, body: bytes = b"") -> Response:
        stream_id = self.h2.get_next_available_stream_id()
        headers = [(":method", method), (":path", path), (":scheme", "https"),
                   (":authority", "localhost"), ("content-type", "application/json")]
        self.h2.send_headers(stream_id, headers, end_stream=not body)
        done: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self.pending[stream_id] = (Response(), done)
        sent = 0
        while sent < len(body):  # within the server's flow-control windows, frame by frame
            window = min(self.h2.local_flow_control_window(stream_id), self.h2.max_outbound_frame_size)
            if window <= 0:
                self.writer.write(self.h2.data_to_send())
                await self._window_opened()
                continue
            chunk = body[sent:sent + window]
            sent += len(chunk)
            self.h2.send_data(stream_id, chunk, end_stream=sent == len(body))
        self.writer.write(self.h2.data_to_send())
        return await done

    async def _window_opened(self) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.window_waiters.append(waiter)
        await waiter

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
        elif isinstance(event, WindowUpdated | RemoteSettingsChanged):
            waiters, self.window_waiters = self.window_waiters, []
            for waiter in waiters:
                if not waiter.done():
                    self.windows_waited += 1
                    waiter.set_result(None)
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
