"""The members of Pi's extension API that have nothing to drive in an RPC session, unit level: the
terminal-only ``ctx.ui`` members answer what Pi's RPC mode answers, the theme colours nothing, the
renderers and shortcuts are recorded (never called), and a command's argument completions are
checked where they leave the extension."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rpcd.core.values import ExtensionBindings, ExtensionError
from rpcd.runtime.extensions import ExtensionRunner, load_python_extensions

from ._projects import write
from .test_extension_runner import Actions
from .test_extension_values import RecordingUi

pytestmark = pytest.mark.anyio

SURFACE = """
CALLED = []


def register(pi):
    pi.register_message_renderer("note", lambda message, options, theme: CALLED.append("renderer"))
    pi.register_entry_renderer("note", lambda entry, options, theme: CALLED.append("renderer"))
    pi.register_markdown_transformer(lambda text: CALLED.append("markdown"))
    pi.register_shortcut("ctrl+k", {"description": "a key", "handler": lambda ctx: CALLED.append("shortcut")})
    pi.register_command("pick", {
        "description": "completes",
        "handler": lambda args, ctx: None,
        "getArgumentCompletions": lambda prefix: [{"value": prefix + "1", "label": "one", "extra": 5}],
    })
    pi.register_command("bad", {"handler": lambda args, ctx: None,
                                "getArgumentCompletions": lambda prefix: [{"label": "no value"}]})
    pi.register_command("boom", {"handler": lambda args, ctx: None,
                                 "getArgumentCompletions": lambda prefix: 1 / 0})
    pi.register_command("none", {"handler": lambda args, ctx: None})
"""


async def bound(tmp_path: Path) -> tuple[ExtensionRunner, list[ExtensionError], Any]:
    runner = ExtensionRunner(str(tmp_path), str(tmp_path / "agent"))
    assert await load_python_extensions(runner, [str(write(tmp_path / "surface.py", SURFACE))]) == []
    errors: list[ExtensionError] = []
    runner.bind(ExtensionBindings(ui=RecordingUi(), on_error=errors.append), Actions())
    module = __import__("sys").modules[str(runner.extensions[0].module_name)]
    return runner, errors, module


async def test_terminal_only_ui_members_answer_as_in_pi_s_rpc_mode(tmp_path: Path) -> None:
    runner, _, _ = await bound(tmp_path)
    ui = runner.create_context().ui
    assert ui is not None
    assert await ui.custom(lambda *a: None) is None
    assert ui.get_editor_text() == ""
    assert ui.get_all_themes() == [] and ui.get_theme("dark") is None
    assert ui.set_theme("dark") == {"success": False, "error": "Theme switching not supported in RPC mode"}
    assert ui.get_tools_expanded() is False and ui.get_editor_component() is None
    unsubscribe = ui.on_terminal_input(lambda data: None)
    unsubscribe()
    for call in (ui.set_working_message, ui.set_hidden_thinking_label, ui.set_working_indicator):
        assert call() is None
    for setter in (ui.set_working_visible, ui.set_footer, ui.set_header, ui.add_autocomplete_provider,
                   ui.set_editor_component, ui.set_tools_expanded):
        assert setter(object()) is None
    theme = ui.theme
    assert theme.fg("accent", "x") == theme.bg("error", "x") == theme.bold("x") == theme.dim("x") == "x"
    assert theme.italic("x") == theme.underline("x") == theme.strikethrough("x") == theme.inverse("x") == "x"


async def test_renderers_and_shortcuts_are_recorded_and_never_called(tmp_path: Path) -> None:
    runner, _, module = await bound(tmp_path)
    extension = runner.extensions[0]
    assert extension.renderers == {"message:note", "entry:note", "markdown"}
    assert [s.shortcut for s in runner.shortcuts] == ["ctrl+k"]
    assert runner.shortcuts[0].description == "a key"
    assert module.CALLED == []


async def test_argument_completions_are_checked_where_they_leave_the_extension(tmp_path: Path) -> None:
    runner, errors, _ = await bound(tmp_path)

    async def complete(name: str, prefix: str) -> Any:
        command = runner.get_command(name)
        assert command is not None
        return await runner.complete_command(command, prefix)

    assert await complete("pick", "a") == [{"value": "a1", "label": "one"}]
    assert await complete("none", "a") is None
    assert await complete("bad", "a") is None
    assert await complete("boom", "a") is None
    assert [(e.event, e.error) for e in errors] == [
        ("command_completions", "completions must be a list of {value, label, description?}"),
        ("command_completions", "ZeroDivisionError: division by zero"),
    ]
