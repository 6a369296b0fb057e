"""Loading a session's extensions in one load order, whatever runs each.

The paths arrive in load order with their kind (``python`` or ``script``); each run of one kind goes
to its runner: the Python runner imports modules here, a :class:`ScriptLoader` hands TypeScript and
JavaScript ones to Node's extension host. Both add :class:`~rpcd.runtime.extensions.registry.Extension`
records to the same :class:`~rpcd.runtime.extensions.runner.ExtensionRunner`, so Python and script
extensions interleave in the runner exactly as they were listed.

Without a script loader (no Node that can host them) each script extension is a warning diagnostic
saying why it was not loaded and what to do; the session starts without it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias

from rpcd.core.values import Diagnostic

from .python_runner import load_python_extensions
from .runner import ExtensionRunner

__all__ = ["ScriptLoader", "ScriptLoaderSource", "load_extensions", "not_loaded"]

SourceInfoOf = Callable[[str], Mapping[str, Any]]


class ScriptLoader(Protocol):
    """What loads TypeScript/JavaScript extensions into a runner (Node's extension host)."""

    async def load(self, runner: ExtensionRunner, paths: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Diagnostic]:
        """Load ``paths`` (with their ``sourceInfo``) in order into ``runner``; a diagnostic per failure."""
        ...


def not_loaded(path: str, reason: str) -> Diagnostic:
    """The warning for a script extension that could not be loaded: ``reason`` says why and what to do."""
    return Diagnostic("warning", f'Extension "{path}" was not loaded: {reason}')


ScriptLoaderSource: TypeAlias = Callable[[], Awaitable["ScriptLoader | str"]]
"""Asked for the script loader when the first script extension is to be loaded (never otherwise: no
Node is looked for, nothing is started); answers the loader, or why there is none and what to do."""

NO_SCRIPT_RUNNER = ("rpcd does not run TypeScript/JavaScript extensions in this session (no Node extension host); "
                    "port it to Python (docs/runtime.md, \"Writing an extension\") or run it in Pi")


async def load_extensions(runner: ExtensionRunner, runs: Sequence[tuple[str, Sequence[str]]],
                          source_info: SourceInfoOf, scripts: ScriptLoaderSource | None) -> list[Diagnostic]:
    """Load each run of ``runs`` (``(kind, paths)`` in load order) with its runner; one diagnostic per
    extension that failed or could not be loaded. ``scripts`` is asked for the script loader at the
    first script extension only."""
    diagnostics: list[Diagnostic] = []
    loader: ScriptLoader | str | None = None
    for kind, paths in runs:
        fresh = [p for p in paths if not any(e.path == p for e in runner.extensions)]
        if not fresh:
            continue
        if kind == "python":
            diagnostics += await load_python_extensions(runner, fresh, source_info)
            continue
        if loader is None:
            loader = await scripts() if scripts is not None else NO_SCRIPT_RUNNER
        if isinstance(loader, str):
            diagnostics += [not_loaded(path, loader) for path in fresh]
        else:
            diagnostics += await loader.load(runner, [(path, dict(source_info(path))) for path in fresh])
    return diagnostics
