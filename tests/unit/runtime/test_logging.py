"""JSON-lines logging and the ordered graceful shutdown on a real SIGTERM."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import signal

from pykueue.kube.logging import GracefulShutdown, JsonFormatter, setup_logging

DEADLINE_S = 5.0


def test_each_record_is_one_json_object_with_extra_fields() -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        setup_logging("DEBUG", stream=stream)
        logging.getLogger("pykueue.test").info("admitted %s", "wl-1", extra={"cluster_queue": "cq"})
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("pykueue.test").exception("failed")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["msg"] == "admitted wl-1" and first["level"] == "info"
    assert first["cluster_queue"] == "cq" and first["logger"] == "pykueue.test"
    assert "ValueError: boom" in second["error"]


def test_non_serialisable_extras_do_not_break_a_line() -> None:
    record = logging.makeLogRecord({"msg": "x", "levelname": "INFO", "obj": object()})
    assert json.loads(JsonFormatter().format(record))["msg"] == "x"


async def test_sigterm_stops_components_in_the_given_order() -> None:
    order: list[str] = []

    async def component(name: str) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            order.append(name)

    shutdown = GracefulShutdown()
    shutdown.install()
    try:
        tasks = [asyncio.create_task(component(n)) for n in ("elector", "queues", "informers")]

        async def close_servers() -> None:
            order.append("servers")

        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(shutdown.wait(), DEADLINE_S)
        assert shutdown.signal_received == signal.SIGTERM
        await GracefulShutdown.stop_in_order([*tasks, close_servers], timeout_s=DEADLINE_S)
    finally:
        shutdown.uninstall()
    assert order == ["elector", "queues", "informers", "servers"]
    assert all(t.cancelled() for t in tasks)


def test_credentials_are_masked_in_whatever_a_line_quotes() -> None:
    from pykueue.kube.logging import redact

    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJl"
    line = redact(f'Authorization: Bearer s3cret body {{"spec": {{"token": "{jwt}"}}}} GET /?token=abc&x=1 '
                  "password=hunter2 -----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY----- "
                  "client-key-data: LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0t")
    for secret in ("s3cret", jwt, "abc&", "hunter2", "MHcC", "LS0tLS1CRUdJTi"):
        assert secret not in line, secret
    assert redact("workload key team-a/job-1 admitted; 3 tokens left") == \
        "workload key team-a/job-1 admitted; 3 tokens left"


def test_at_debug_no_response_body_and_no_token_reaches_the_handlers() -> None:
    """The kube client logs whole response bodies at DEBUG (a TokenReview's echoes the token):
    the commands' logging keeps that logger at INFO, and masks what else may quote one."""
    from pykueue.kube.logging import configure_cli_logging

    stream = io.StringIO()
    root = logging.getLogger()
    rest = logging.getLogger("kubernetes_asyncio.client.rest")
    saved = (list(root.handlers), root.level, rest.level)
    root.handlers[:] = [logging.StreamHandler(stream)]
    try:
        configure_cli_logging("DEBUG")
        rest.debug("response body: %s", '{"spec": {"token": "sentinel-1"}}')
        logging.getLogger("pykueue.test").debug("calling with Authorization: Bearer sentinel-2")
        try:
            raise RuntimeError("review of token=sentinel-3 failed")
        except RuntimeError:
            logging.getLogger("pykueue.test").exception("failed")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        rest.setLevel(saved[2])
    text = stream.getvalue()
    assert "Bearer [redacted]" in text and "RuntimeError" in text
    assert "sentinel" not in text
