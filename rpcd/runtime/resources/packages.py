"""Pi packages (``pi install``): the ``packages`` entries of the global and the project settings, and
what resolving them brings — extensions, skills and prompt templates, each with Pi's ``sourceInfo``.

Resolution is Pi's own (``core/package-manager.js`` ``resolve()``, run in the Node extension host: npm
packages under ``<agentDir>/npm/`` and ``<cwd>/.pi/npm/``, git clones, local paths, the filters of an
object entry, a configured package not installed yet installed with the ``npmCommand`` setting); a
session's services ask a :data:`PackageResolver` for it only when some ``packages`` entry exists.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

import attrs

from rpcd.core.values import Diagnostic
from rpcd.runtime.resources.discovery import Resource, SourceInfo

__all__ = ["PackageResolver", "ResolvedPackages", "configured_packages", "not_loaded", "resolved_packages"]


@attrs.frozen
class ResolvedPackages:
    extensions: list[tuple[str, dict[str, Any]]]
    """Extension paths in Pi's order with their ``sourceInfo`` (``origin: "package"``)."""
    skills: list[Resource]
    prompts: list[Resource]
    diagnostics: list[Diagnostic] = attrs.field(factory=list)


PackageResolver: TypeAlias = Callable[[str, str, bool], Awaitable["ResolvedPackages | str"]]
"""``resolve(cwd, agent_dir, project_trusted)``: what the configured packages bring, or why they
cannot be resolved here (no Node extension host) and what to do."""


def configured_packages(global_settings: Mapping[str, Any],
                        project_settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(scope, source)`` of every ``packages`` entry (a string or ``{"source", ...filters}``)."""
    out: list[tuple[str, str]] = []
    for scope, data in (("user", global_settings), ("project", project_settings)):
        entries = data.get("packages")
        if not isinstance(entries, list):
            continue
        for entry in entries:
            source = entry.get("source") if isinstance(entry, Mapping) else entry
            if isinstance(source, str) and source.strip():
                out.append((scope, source))
    return out


def not_loaded(scope: str, source: str, reason: str) -> Diagnostic:
    return Diagnostic("warning", f'Pi package "{source}" ({scope} settings) was not loaded: {reason}')


def _info(entry: Mapping[str, Any]) -> SourceInfo:
    meta = entry.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    base = meta.get("baseDir")
    return SourceInfo(str(entry.get("path")), str(meta.get("source") or "package"), str(meta.get("scope") or "user"),
                      "package", base if isinstance(base, str) else None)


def resolved_packages(answer: Any) -> ResolvedPackages:
    """The host's ``packages.resolve`` answer (Pi's ``ResolvedPaths`` of the packages) as resources;
    what Pi leaves disabled (a filter) is left out."""
    answer = answer if isinstance(answer, Mapping) else {}

    def entries(kind: str) -> list[Mapping[str, Any]]:
        found = answer.get(kind)
        return [e for e in found if isinstance(e, Mapping) and isinstance(e.get("path"), str)
                and e.get("enabled") is not False] if isinstance(found, list) else []

    extensions = []
    for entry in entries("extensions"):
        info = _info(entry)
        extensions.append((info.path, info.to_wire()))
    installed = answer.get("installed")
    notes = [Diagnostic("info", str(text)) for text in installed] if isinstance(installed, list) else []
    skills = [Resource(_info(e).path, _info(e)) for e in entries("skills")]
    prompts = [Resource(_info(e).path, _info(e)) for e in entries("prompts")]
    return ResolvedPackages(extensions=extensions, skills=skills, prompts=prompts, diagnostics=notes)
