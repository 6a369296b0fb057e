"""The extension runner: loading, before-event semantics, error routing, invalidation."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from rpcd.core.errors import SessionDisposedError
from rpcd.core.values import ExtensionBindings, ExtensionError
from rpcd.runtime.extensions import ExtensionRunner, ExtensionRuntimeNotReadyError, load_python_extensions

from ._projects import write

pytestmark = pytest.mark.anyio

TRACE_EXT = """
TRACE = []

def register(pi):
    def make(tag, result):
        async def handler(event, ctx):
            import {trace_module} as t
            t.TRACE.append(tag)
            if isinstance(result, Exception):
                raise result
            return result
        return handler
{body}
"""


class Actions:
    def __init__(self) -> None:
        self.appended: list[tuple[str, Any]] = []

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        self.appended.append((custom_type, data))
        return f"e{len(self.appended)}"

    @property
    def session_file(self) -> str | None:
        return "/tmp/s.jsonl"

    @property
    def session_id(self) -> str:
        return "sid"


def runner_for(tmp_path: Path) -> ExtensionRunner:
    return ExtensionRunner(str(tmp_path), str(tmp_path / "agent"))


async def load_handlers(tmp_path: Path, spec: list[tuple[str, str, str]]) -> tuple[ExtensionRunner, list[str]]:
    """One extension per ``(file, event, result-expression)``; each handler appends its file to a trace."""
    trace: list[str] = []
    sys.modules["_rpcd_test_trace"] = type(sys)("_rpcd_test_trace")
    sys.modules["_rpcd_test_trace"].TRACE = trace  # type: ignore[attr-defined]
    paths = []
    for name, event, result in spec:
        body = f"    pi.on({event!r}, make({name!r}, {result}))\n"
        paths.append(str(write(tmp_path / "exts" / f"{name}.py", TRACE_EXT.format(trace_module="_rpcd_test_trace",
                                                                                 body=body))))
    runner = runner_for(tmp_path)
    assert await load_python_extensions(runner, paths) == []
    return runner, trace


async def test_first_cancel_returns_immediately_and_later_handlers_do_not_run(tmp_path: Path) -> None:
    runner, trace = await load_handlers(
        tmp_path,
        [
            ("a", "session_before_switch", "None"),
            ("b", "session_before_switch", "{'cancel': False, 'note': 1}"),
            ("c", "session_before_switch", "{'cancel': True}"),
            ("d", "session_before_switch", "{'cancel': True, 'late': 1}"),
        ],
    )
    result = await runner.emit({"type": "session_before_switch", "reason": "new"})
    assert result == {"cancel": True}
    assert trace == ["a", "b", "c"]


async def test_truthy_result_becomes_current_without_cancelling(tmp_path: Path) -> None:
    runner, trace = await load_handlers(
        tmp_path,
        [
            ("a", "session_before_fork", "{'cancel': False, 'x': 1}"),
            ("b", "session_before_fork", "None"),
        ],
    )
    assert await runner.emit({"type": "session_before_fork", "entryId": "e", "position": "before"}) == {
        "cancel": False,
        "x": 1,
    }
    assert trace == ["a", "b"]


async def test_handler_exception_goes_to_error_listener_and_does_not_cancel(tmp_path: Path) -> None:
    runner, trace = await load_handlers(
        tmp_path,
        [
            ("a", "session_before_switch", "RuntimeError('kaput')"),
            ("b", "session_before_switch", "{'cancel': True}"),
        ],
    )
    errors: list[ExtensionError] = []
    runner.bind(ExtensionBindings(on_error=errors.append), Actions())

    assert await runner.emit({"type": "session_before_switch", "reason": "resume"}) == {"cancel": True}
    assert trace == ["a", "b"]
    assert errors == [ExtensionError(str(tmp_path / "exts" / "a.py"), "session_before_switch", "RuntimeError: kaput")]


async def test_other_events_run_every_handler_even_after_a_failure(tmp_path: Path) -> None:
    runner, trace = await load_handlers(
        tmp_path,
        [
            ("a", "session_shutdown", "{'cancel': True}"),
            ("b", "session_shutdown", "ValueError('x')"),
            ("c", "session_shutdown", "None"),
        ],
    )
    await runner.emit_session_shutdown({"reason": "quit"})  # no listener bound: logged, never raised
    assert trace == ["a", "b", "c"]
    assert runner.has_handlers("session_shutdown")
    assert not runner.has_handlers("session_before_fork")


async def test_secrets_in_handler_errors_are_redacted(tmp_path: Path) -> None:
    runner, _ = await load_handlers(
        tmp_path, [("a", "agent_start", "RuntimeError('bad api_key=sk-live-0123456789abcdef')")]
    )
    errors: list[ExtensionError] = []
    runner.bind(ExtensionBindings(on_error=errors.append), Actions())
    await runner.emit({"type": "agent_start"})
    assert "0123456789abcdef" not in errors[0].error
    assert "REDACTED" in errors[0].error


async def test_load_errors_become_diagnostics_and_other_extensions_still_load(tmp_path: Path) -> None:
    broken_syntax = write(tmp_path / "e" / "a_syntax.py", "def register(pi)\n")
    no_register = write(tmp_path / "e" / "b_noreg.py", "X = 1\n")
    half = write(
        tmp_path / "e" / "c_half.py",
        """
        def register(pi):
            pi.on("agent_start", lambda e, c: None)
            pi.register_tool("half", "d", {}, None)
        """,
    )
    good = write(tmp_path / "e" / "d_good.py", "def register(pi):\n    pi.on('agent_end', lambda e, c: None)\n")
    exits = write(tmp_path / "e" / "e_exit.py", "import sys\nsys.exit(3)\n")
    missing = tmp_path / "e" / "missing.py"

    runner = runner_for(tmp_path)
    paths = [str(p) for p in (broken_syntax, no_register, half, good, exits, missing)]
    diagnostics = await load_python_extensions(runner, paths)

    assert [e.path for e in runner.extensions] == [str(good)]
    assert [d.type for d in diagnostics] == ["error"] * 5
    messages = [d.message for d in diagnostics]
    for path, message in zip((broken_syntax, no_register, half, exits, missing), messages, strict=True):
        assert message.startswith(f'Failed to load extension "{path}": ')
    assert "SyntaxError" in messages[0]
    assert "register(pi)" in messages[1]
    assert not runner.has_handlers("agent_start")  # the half-registered handler was dropped
    assert runner.has_handlers("agent_end")
    assert not any(name.endswith("_a_syntax") or name.endswith("_c_half") for name in sys.modules)


async def test_async_register_and_package_extensions_with_relative_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "exts" / "pkg"
    write(pkg / "helper.py", "VALUE = 'from-helper'\n")
    write(
        pkg / "__init__.py",
        """
        from .helper import VALUE

        async def register(pi):
            async def execute(tool_call_id, args, ctx):
                return {"content": [{"type": "text", "text": VALUE + ":" + tool_call_id}]}
            pi.register_tool("pkg_tool", "d", {"type": "object"}, execute)
        """,
    )
    runner = runner_for(tmp_path)
    assert await load_python_extensions(runner, [str(pkg)]) == []
    tool = runner.tools["pkg_tool"]
    assert tool.extension_path == str(pkg)
    assert (await runner.execute_tool("pkg_tool", "call-1", {}))["content"][0]["text"] == "from-helper:call-1"
    assert str(tmp_path / "exts") not in sys.path


async def test_same_file_loaded_twice_gets_fresh_module_state(tmp_path: Path) -> None:
    ext = write(
        tmp_path / "ext.py",
        """
        COUNT = []
        def register(pi):
            COUNT.append(1)
            pi.on("agent_start", lambda e, c: len(COUNT))
        """,
    )
    first, second = runner_for(tmp_path), runner_for(tmp_path)
    await load_python_extensions(first, [str(ext)])
    await load_python_extensions(second, [str(ext)])
    assert first.extensions[0].module_name != second.extensions[0].module_name
    assert len(sys.modules[str(first.extensions[0].module_name)].COUNT) == 1
    assert len(sys.modules[str(second.extensions[0].module_name)].COUNT) == 1


async def test_failing_tool_becomes_an_error_result(tmp_path: Path) -> None:
    ext = write(
        tmp_path / "t.py",
        """
        async def boom(tool_call_id, args, ctx):
            raise RuntimeError("disk full")
        def register(pi):
            pi.register_tool("boom", "d", {}, boom)
        """,
    )
    runner = runner_for(tmp_path)
    await load_python_extensions(runner, [str(ext)])
    assert await runner.execute_tool("boom", "c", {}) == {
        "content": [{"type": "text", "text": "disk full"}],
        "details": {},
        "isError": True,
    }
    assert (await runner.execute_tool("nope", "c", {}))["isError"] is True


async def test_conflicting_tool_names_keep_the_first_with_a_warning(tmp_path: Path) -> None:
    src = """
    async def run(i, a, c):
        return {'content': []}
    def register(pi):
        pi.register_tool('t', 'd', {}, run)
    """
    a, b = write(tmp_path / "a.py", src), write(tmp_path / "b.py", src)
    runner = runner_for(tmp_path)
    await load_python_extensions(runner, [str(a), str(b)])
    assert runner.tools["t"].extension_path == str(a)
    (warning,) = runner.take_diagnostics()
    assert warning.type == "warning" and str(b) in warning.message
    assert runner.take_diagnostics() == []


async def test_append_entry_needs_a_bound_session(tmp_path: Path) -> None:
    ext = write(
        tmp_path / "app.py",
        """
        def register(pi):
            def on_start(event, ctx):
                return ctx.append_entry("mine", {"n": 1})
            pi.on("session_start", on_start)
            try:
                pi.append_entry("too-early")
            except Exception as exc:
                TOO_EARLY.append(type(exc).__name__)

        TOO_EARLY = []
        """,
    )
    runner = runner_for(tmp_path)
    assert await load_python_extensions(runner, [str(ext)]) == []
    assert [ExtensionRuntimeNotReadyError.__name__] == sys.modules[str(runner.extensions[0].module_name)].TOO_EARLY

    actions = Actions()
    runner.bind(ExtensionBindings(), actions)
    await runner.emit({"type": "session_start", "reason": "startup"})
    assert actions.appended == [("mine", {"n": 1})]


async def test_invalidated_runner_rejects_handlers_and_stale_contexts(tmp_path: Path) -> None:
    ext = write(
        tmp_path / "keep.py",
        """
        KEPT = []
        def register(pi):
            pi.on("session_start", lambda e, ctx: KEPT.append(ctx))
        """,
    )
    runner = runner_for(tmp_path)
    await load_python_extensions(runner, [str(ext)])
    runner.bind(ExtensionBindings(), Actions())
    await runner.emit({"type": "session_start"})
    module = sys.modules[str(runner.extensions[0].module_name)]
    (ctx,) = module.KEPT
    assert ctx.session_id == "sid" and ctx.cwd == str(tmp_path)

    runner.invalidate()

    with pytest.raises(SessionDisposedError):
        _ = ctx.cwd
    with pytest.raises(SessionDisposedError):
        ctx.append_entry("late")
    with pytest.raises(SessionDisposedError):
        await runner.emit({"type": "session_start"})
    assert runner.extensions[0].module_name not in sys.modules


async def test_sys_exit_in_a_handler_or_tool_is_an_extension_error_not_a_daemon_exit(tmp_path: Path) -> None:
    ext = write(
        tmp_path / "quitter.py",
        """
        import sys

        async def tool(tool_call_id, args, ctx):
            sys.exit("tool wants out")

        def register(pi):
            pi.on("session_shutdown", lambda event, ctx: sys.exit(3))
            pi.on("project_trust", lambda event, ctx: sys.exit(4))
            pi.register_tool("quit", "d", {}, tool)
        """,
    )
    runner = runner_for(tmp_path)
    assert await load_python_extensions(runner, [str(ext)]) == []
    errors: list[ExtensionError] = []
    runner.bind(ExtensionBindings(on_error=errors.append), Actions())

    await runner.emit_session_shutdown({"reason": "quit"})
    assert errors == [ExtensionError(str(ext), "session_shutdown", "SystemExit: 3")]
    decision, _, trust_errors = await runner.emit_project_trust({"type": "project_trust", "cwd": str(tmp_path)})
    assert decision is None and [e.error for e in trust_errors] == ["SystemExit: 4"]
    result = await runner.execute_tool("quit", "c1", {})
    assert result["isError"] is True and result["content"] == [{"type": "text", "text": "tool wants out"}]
