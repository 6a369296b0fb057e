"""Settings for one cwd: ``<agentDir>/settings.json`` deep-merged under ``<cwd>/.pi/settings.json``.

Pi's rules: project values override global ones, nested plain objects merge key by
key, arrays and scalars replace. ``defaultTools`` is the exception: a project list made
only of ``+name`` / ``-name`` modifiers edits the inherited list instead of replacing it.
A broken file never stops a session from starting: the scope reads as ``{}`` and the
failure becomes a diagnostic naming the file (never its content).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

import attrs

from rpcd.core.files import read_regular
from rpcd.core.values import Diagnostic

SettingsScope: TypeAlias = Literal["global", "project"]

CONFIG_DIR_NAME = ".pi"
SETTINGS_FILE_NAME = "settings.json"
DEFAULT_TOOLS: tuple[str, ...] = ("read", "bash", "edit", "write")
"""Pi's built-in tools enabled when no ``defaultTools`` setting exists."""
_MISSING: Any = object()


@attrs.frozen
class SettingsLoadError:
    scope: SettingsScope
    path: str
    reason: str


@attrs.frozen
class Settings:
    global_settings: Mapping[str, Any]
    project_settings: Mapping[str, Any]
    """``{}`` when the project is untrusted or has no settings file."""
    effective: Mapping[str, Any]
    errors: tuple[SettingsLoadError, ...] = ()

    def get(self, key: str, default: Any = None) -> Any:
        """Look up ``key`` in the effective settings; dots walk into objects (``compaction.enabled``)."""
        if key in self.effective:
            return self.effective[key]
        node: Any = self.effective
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def default_tools(self) -> list[str] | None:
        """The built-in tools to enable, or ``None`` when no ``defaultTools`` setting applies.

        Plain names select; ``+name``/``-name`` then add/remove; a list of modifiers only
        edits Pi's ``DEFAULT_TOOLS``; ``[]`` means no built-in tools.
        """
        entries = self.effective.get("defaultTools")
        if not isinstance(entries, list):
            return None
        names = [e for e in entries if isinstance(e, str)]
        plain = [e for e in names if not e.startswith(("+", "-"))]
        modifiers = [e for e in names if e.startswith(("+", "-")) and len(e) > 1]
        base = plain if plain or not names else list(DEFAULT_TOOLS)
        return apply_tool_modifiers(base, modifiers)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [Diagnostic("warning", f"Failed to load {e.scope} settings \"{e.path}\": {e.reason}")
                for e in self.errors]


class HeldSettings:
    """What the setters chose, held for the process's later sessions as Pi holds what its setters
    write into the global ``settings.json`` (``setDefaultModelAndProvider``, ``setDefaultThinkingLevel``,
    ``setSteeringMode``, ``setFollowUpMode``, ``setCompactionEnabled``, ``setRetryEnabled``,
    ``setEnabledModels``): the same keys, laid over the global settings of every session created
    after the choice (a project's settings still override them, as they override Pi's global file).
    Nothing is written: rpcd never changes the user's settings files. One per process
    (``ProcessInputs.held_settings``), shared by every replacement and every ACP session."""

    def __init__(self) -> None:
        self._patch: dict[str, Any] = {}

    def hold(self, value: Any, *path: str) -> None:
        """Hold ``value`` at ``path`` (``hold(True, "compaction", "enabled")``)."""
        node = self._patch
        for key in path[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                child = node[key] = {}
            node = child
        node[path[-1]] = value

    def get(self, key: str) -> Any:
        """The value held at the top-level ``key`` (``None``: nothing held)."""
        return self._patch.get(key)

    def over(self, global_data: Mapping[str, Any]) -> dict[str, Any]:
        """``global_data`` with what is held laid over it."""
        return deep_merge(global_data, self._patch) if self._patch else dict(global_data)


def global_settings_path(agent_dir: str) -> str:
    return os.path.join(agent_dir, SETTINGS_FILE_NAME)


def project_settings_path(cwd: str) -> str:
    return os.path.join(cwd, CONFIG_DIR_NAME, SETTINGS_FILE_NAME)


def load_settings_file(path: str, scope: SettingsScope) -> tuple[dict[str, Any], SettingsLoadError | None]:
    """Read one scope; a missing file is ``{}`` without error."""
    try:
        raw = read_regular(path)  # a FIFO or device here is an error, never a blocking read
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        return {}, SettingsLoadError(scope, path, exc.strerror or type(exc).__name__)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return {}, SettingsLoadError(scope, path, "not UTF-8 text")
    text = text.removeprefix("\ufeff")
    if not text.strip():
        return {}, None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # Position only: the message of a decode error never quotes the file.
        return {}, SettingsLoadError(scope, path, f"invalid JSON at line {exc.lineno} column {exc.colno}")
    if not isinstance(data, dict):
        return {}, SettingsLoadError(scope, path, "top-level value is not an object")
    return migrate_settings(data), None


def migrate_settings(data: dict[str, Any]) -> dict[str, Any]:
    """Pi's in-memory migrations of old keys (the file on disk is left alone)."""
    out = dict(data)
    if "queueMode" in out:
        queue_mode = out.pop("queueMode")
        out.setdefault("steeringMode", queue_mode)
    return out


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` over ``base``: objects merge recursively, everything else replaces."""
    merged: dict[str, Any] = dict(base)
    for key, value in override.items():
        current = merged.get(key, _MISSING)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            merged[key] = deep_merge(current, value)
        else:
            merged[key] = value
    return merged


def is_tool_modifier_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(isinstance(v, str) and len(v) > 1 and v[0] in "+-" for v in value)
    )


def apply_tool_modifiers(inherited: list[str], modifiers: list[str]) -> list[str]:
    """``+name`` appends (once), ``-name`` removes, in list order."""
    tools = list(inherited)
    for modifier in modifiers:
        name = modifier[1:]
        if modifier[0] == "+":
            if name not in tools:
                tools.append(name)
        else:
            tools = [t for t in tools if t != name]
    return tools


def merge_settings(global_settings: Mapping[str, Any], project_settings: Mapping[str, Any]) -> dict[str, Any]:
    effective = deep_merge(global_settings, project_settings)
    project_tools = project_settings.get("defaultTools")
    if isinstance(project_tools, list) and is_tool_modifier_list(project_tools):
        inherited = global_settings.get("defaultTools")
        base = [t for t in inherited if isinstance(t, str)] if isinstance(inherited, list) else list(DEFAULT_TOOLS)
        if is_tool_modifier_list(base):
            base = apply_tool_modifiers(list(DEFAULT_TOOLS), base)
        effective["defaultTools"] = apply_tool_modifiers(base, project_tools)
    return effective


def load_global_settings(agent_dir: str) -> tuple[dict[str, Any], SettingsLoadError | None]:
    return load_settings_file(global_settings_path(agent_dir), "global")


def load_settings(
    cwd: str,
    agent_dir: str,
    *,
    project_trusted: bool,
    global_settings: tuple[dict[str, Any], SettingsLoadError | None] | None = None,
) -> Settings:
    """Build the settings of ``cwd``; the project file is not even read when untrusted."""
    global_data, global_error = global_settings if global_settings is not None else load_global_settings(agent_dir)
    project_data: dict[str, Any] = {}
    project_error: SettingsLoadError | None = None
    if project_trusted:
        project_data, project_error = load_settings_file(project_settings_path(cwd), "project")
    errors = tuple(e for e in (global_error, project_error) if e is not None)
    return Settings(global_data, project_data, merge_settings(global_data, project_data), errors)
