"""The edge where extension values enter the session (issue 13, item 2), unit level.

End to end (the real daemon with a planted extension): ``tests/reliability/test_hostile_values.py``.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from rpcd.core.values import ExtensionBindings, ExtensionError
from rpcd.runtime.extensions import ExtensionRunner, load_python_extensions

from ._projects import write
from .test_extension_runner import Actions

pytestmark = pytest.mark.anyio


class RecordingUi:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def notify(self, message: str, notify_type: Literal["info", "warning", "error"] = "info") -> None:
        self.calls.append(("notify", message, notify_type))

    async def confirm(self, title: str, message: str, timeout: float | None = None) -> bool:
        self.calls.append(("confirm", title, message, timeout))
        return True

    async def select(self, title: str, options: Sequence[str], timeout: float | None = None) -> str | None:
        self.calls.append(("select", title, list(options), timeout))
        return options[0]

    async def input(self, title: str, placeholder: str | None = None, timeout: float | None = None) -> str | None:
        self.calls.append(("input", title, placeholder, timeout))
        return None


TOOLS = """
import datetime, decimal


def register(pi):
    async def good(call_id, args, ctx):
        return {"content": [{"type": "text", "text": "ok"}],
                "details": {"at": datetime.date(2024, 5, 6), "n": decimal.Decimal("2"), "x": float("nan")}}

    async def bad(call_id, args, ctx):
        return {"content": [{"type": "text", "text": "ok"}], "details": {"blob": [b"raw"]}}

    pi.register_tool("good", "d", {"type": "object"}, good)
    pi.register_tool("bad", "d", {"type": "object"}, bad)
"""


async def bound_runner(tmp_path: Path, source: str) -> tuple[ExtensionRunner, list[ExtensionError], RecordingUi]:
    runner = ExtensionRunner(str(tmp_path), str(tmp_path / "agent"))
    assert await load_python_extensions(runner, [str(write(tmp_path / "ext.py", source))]) == []
    errors: list[ExtensionError] = []
    ui = RecordingUi()
    runner.bind(ExtensionBindings(ui=ui, on_error=errors.append), Actions())
    return runner, errors, ui


async def test_a_tool_result_is_made_json_or_refused_with_an_extension_error(tmp_path: Path) -> None:
    runner, errors, _ = await bound_runner(tmp_path, TOOLS)
    good = await runner.execute_tool("good", "c1", {})
    assert good["details"] == {"at": "2024-05-06", "n": 2, "x": None}
    assert errors == []
    bad = await runner.execute_tool("bad", "c2", {})
    assert bad["isError"] is True
    assert "cannot be stored: bytes is not JSON at $.details.blob[0]" in bad["content"][0]["text"]
    assert [(e.event, e.error) for e in errors] == [
        ("tool_result", "tool 'bad' returned a value that is not JSON: bytes is not JSON at $.details.blob[0]")
    ]


async def test_append_entry_converts_or_raises_before_anything_is_written(tmp_path: Path) -> None:
    runner, _, _ = await bound_runner(tmp_path, TOOLS)
    actions = runner.session_actions
    assert isinstance(actions, Actions)
    ctx = runner.create_context()
    ctx.append_entry("t", {"when": datetime.datetime(2024, 1, 2), "tags": {"b", "a"}})
    assert actions.appended == [("t", {"when": "2024-01-02T00:00:00", "tags": ["a", "b"]})]
    with pytest.raises(TypeError, match=r"object is not JSON at \$\.o"):
        ctx.append_entry("t", {"o": object()})
    with pytest.raises(TypeError, match="custom_type must be a string"):
        ctx.append_entry(5, {})  # type: ignore[arg-type]
    assert len(actions.appended) == 1


async def test_ui_arguments_reach_the_client_as_text(tmp_path: Path) -> None:
    runner, _, ui = await bound_runner(tmp_path, TOOLS)
    checked = runner.create_context().ui
    assert checked is not None
    checked.notify(ValueError("boom"))  # type: ignore[arg-type]
    assert await checked.select("pick", [1, "b"]) == "1"  # type: ignore[list-item]
    assert await checked.confirm(RuntimeError("t"), 5, 2) is True  # type: ignore[arg-type]
    assert ui.calls == [("notify", "boom", "info"), ("select", "pick", ["1", "b"], None), ("confirm", "t", "5", 2.0)]
    with pytest.raises(ValueError, match="notify type"):
        checked.notify("x", "loud")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        await checked.input("t", None, float("nan"))


async def test_a_tool_schema_without_a_json_form_fails_its_extension_s_load(tmp_path: Path) -> None:
    runner = ExtensionRunner(str(tmp_path), str(tmp_path / "agent"))
    source = """
def register(pi):
    async def run(call_id, args, ctx):
        return {"content": []}
    pi.register_tool("t", "d", {"type": "object", "enum": {1, 2}, "x": object()}, run)
"""
    (diagnostic,) = await load_python_extensions(runner, [str(write(tmp_path / "ext.py", source))])
    assert "object is not JSON at $.x" in diagnostic.message and runner.tools == {}


HOOKS = """
import datetime


def register(pi):
    def change_args(event, ctx):
        event["input"]["when"] = datetime.date(2024, 5, 6)

    def bad_details(event, ctx):
        return {"details": {"blob": b"raw"}}

    def good_details(event, ctx):
        return {"details": {"at": datetime.date(2024, 1, 2)}}

    pi.on("tool_call", change_args)
    pi.on("tool_result", bad_details)
    pi.on("tool_result", good_details)
"""

UNSAFE_ARGS = """
def register(pi):
    def change_args(event, ctx):
        event["input"]["o"] = object()

    pi.on("tool_call", change_args)
"""


async def test_tool_call_and_tool_result_hooks_hand_on_json_or_refuse(tmp_path: Path) -> None:
    runner, errors, _ = await bound_runner(tmp_path, HOOKS)
    event: dict[str, Any] = {"type": "tool_call", "toolName": "read", "toolCallId": "c1", "input": {"path": "a"}}
    assert not await runner.emit_tool_call(event)
    assert event["input"] == {"path": "a", "when": "2024-05-06"}
    patched = await runner.emit_tool_result(
        {"type": "tool_result", "toolName": "read", "toolCallId": "c1", "input": {}, "content": [], "isError": False}
    )
    assert patched is not None and patched["details"] == {"at": "2024-01-02"}
    assert [(e.event, e.error) for e in errors] == [
        ("tool_result", "tool_result handler returned a value that is not JSON: bytes is not JSON at $.details.blob")
    ]


async def test_tool_call_arguments_that_are_not_json_block_the_call(tmp_path: Path) -> None:
    runner, _, _ = await bound_runner(tmp_path, UNSAFE_ARGS)
    event: dict[str, Any] = {"type": "tool_call", "toolName": "read", "toolCallId": "c1", "input": {"path": "a"}}
    result = await runner.emit_tool_call(event)
    assert result["block"] is True and "object is not JSON at $.o" in result["reason"]
