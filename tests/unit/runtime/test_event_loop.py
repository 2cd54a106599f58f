"""Long-running commands run on uvloop when it is installed, on asyncio's loop otherwise."""

from __future__ import annotations

import asyncio
import builtins
from typing import Any

import pytest

from pykueue.kube.event_loop import event_loop_factory, run_main


async def _loop_class() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_uvloop_runs_the_main_coroutine() -> None:
    pytest.importorskip("uvloop", reason="uvloop is a dependency except on Windows; absent on this platform")
    assert run_main(_loop_class()).startswith("uvloop")


def test_without_uvloop_the_standard_loop_runs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_uvloop(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "uvloop":
            raise ImportError("uvloop hidden by the test")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_uvloop)
    assert event_loop_factory() is None
    assert run_main(_loop_class()).startswith("asyncio")
