"""What a tool call is, for a person deciding about it: its ACP kind, a one-line title, an
argument preview, the paths it touches, and whether it may change anything.

The classification has one owner, here: the built-ins ``read``, ``grep``, ``find``, ``ls`` are
read-only; ``bash``, ``edit``, ``write`` may change things; an extension's tool may change things
unless it registered itself ``read_only=True`` (an extension tool that takes a built-in's name is
an extension tool: its own declaration counts, not the built-in's).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from rpcd.core.values import AlwaysRule, ToolApprovalRequest, ToolKind, ToolLocation
from rpcd.tools.paths import resolve_to_cwd
from rpcd.tools.shell_syntax import runs_other_commands, simple_command_words

READ_ONLY_BUILTINS: Final = frozenset({"read", "grep", "find", "ls"})
"""Built-ins that never change anything (they never ask under ``ask-writes``)."""
FILE_TOOLS: Final = frozenset({"read", "edit", "write", "grep", "find", "ls"})
"""Built-ins whose call names one path (their rules match a path glob)."""
_BUILTIN_KINDS: Final[Mapping[str, ToolKind]] = {
    "read": "read", "ls": "read", "grep": "search", "find": "search", "edit": "edit", "write": "edit",
    "bash": "execute",
}
_BASH_KINDS: Final[Mapping[str, ToolKind]] = {
    "rm": "delete", "rmdir": "delete", "unlink": "delete", "shred": "delete", "mv": "move",
    "curl": "fetch", "wget": "fetch",
}
PREVIEW_CHARS: Final = 2000
"""A string argument longer than this is cut to this many characters plus a note of how much was cut."""
PREVIEW_DEPTH: Final = 32
TITLE_CHARS: Final = 120


@attrs.frozen
class ToolProfile:
    """How a session's tool is classified: a built-in (described by its arguments) or not, and
    whether it is read-only."""

    builtin: bool
    read_only: bool


def builtin_profile(name: str) -> ToolProfile:
    return ToolProfile(builtin=True, read_only=name in READ_ONLY_BUILTINS)


def extension_profile(read_only: bool = False) -> ToolProfile:
    return ToolProfile(builtin=False, read_only=read_only)


@attrs.frozen
class CallFacts:
    """One call, described. ``path`` is the absolute path a file tool names (``None`` otherwise);
    ``command`` the bash command; ``notices`` what the person should read before answering."""

    tool_name: str
    kind: ToolKind
    title: str
    writes: bool
    arguments: dict[str, Any]
    locations: tuple[ToolLocation, ...] = ()
    command: str | None = None
    path: str | None = None
    notices: tuple[str, ...] = ()

    def request(self, tool_call_id: str, always_rule: AlwaysRule | None = None) -> ToolApprovalRequest:
        return ToolApprovalRequest(tool_call_id=tool_call_id, tool_name=self.tool_name, kind=self.kind,
                                   title=self.title, arguments=self.arguments, locations=self.locations,
                                   always_rule=always_rule, notices=self.notices)


def describe_call(name: str, args: Mapping[str, Any], *, cwd: str, profile: ToolProfile) -> CallFacts:
    """The facts of ``name(args)`` for a tool bound to ``cwd``."""
    whole_command = name == "bash" and profile.builtin
    preview = preview_arguments(args, keep=("command",) if whole_command else ())
    notices = (CUT_NOTICE,) if preview != args else ()
    if not profile.builtin or name not in _BUILTIN_KINDS:
        return CallFacts(name, "other", _one_line(f"{name} {_compact(args)}" if args else name), not profile.read_only,
                         preview, notices=notices)
    writes = not profile.read_only
    if name == "bash":
        command = args.get("command")
        text = command if isinstance(command, str) else ""
        title = _one_line(f"bash: {text}")
        return CallFacts(name, bash_kind(text), title, writes, preview, command=text,
                         notices=(*_long_command_notices(text, title), *notices))
    raw_path = args.get("path")
    given = raw_path if isinstance(raw_path, str) and raw_path else None
    shown = given or "."
    absolute = _absolute(given or ".", cwd)
    target = os.path.realpath(absolute) if absolute is not None else None
    line = args.get("offset") if name == "read" and isinstance(args.get("offset"), int) else None
    locations = (ToolLocation(target, line),) if target is not None else ()
    if target is not None and target != absolute:
        notices = (f"{shown} resolves through a symbolic link: the call acts on {target}", *notices)
        shown = f"{shown} → {target}"
    if name == "grep":
        title = f"grep {json.dumps(args.get('pattern', ''), ensure_ascii=False)} in {shown}"
    elif name == "find":
        title = f"find {args.get('pattern', '')} in {shown}"
    else:
        title = f"{name} {shown}"
    return CallFacts(name, _BUILTIN_KINDS[name], _one_line(title), writes, preview, locations, path=absolute,
                     notices=notices)


CUT_NOTICE: Final = (f"Strings longer than {PREVIEW_CHARS:,} characters (marked \"… [N more characters]\") and "
                     f"nesting deeper than {PREVIEW_DEPTH} levels are cut in these arguments; the tool gets them whole")
_HIDDEN_SYNTAX: Final = (";", "&", "|", "<", ">", "$(", "`", "#")


def _long_command_notices(command: str, title: str) -> tuple[str, ...]:
    """When the title shows only the start of ``command``: how long it is, and which operators hide
    in the part left out."""
    shown = title.removeprefix("bash: ").removesuffix(" …")
    if not title.endswith(" …"):
        return ()
    stripped = command.strip()
    rest = stripped[len(shown):] if stripped.startswith(shown) else stripped
    lines = stripped.count("\n") + 1
    hidden = [token for token in _HIDDEN_SYNTAX if token in rest] + (["a line break"] if "\n" in rest else [])
    size = f"{len(stripped):,} characters" + (f" on {lines} lines" if lines > 1 else "")
    after = (f"; the part it leaves out holds {', '.join(hidden)}" if hidden else "")
    return (f"The command is {size}: the title shows only its start{after}. Read the whole command "
            "(arguments.command) before answering",)


def _absolute(path: str, cwd: str) -> str | None:
    try:
        return resolve_to_cwd(path, cwd)
    except ValueError:  # a file:// URL with a host: the tool itself will refuse it
        return None


def _compact(args: Mapping[str, Any]) -> str:
    try:
        return json.dumps(preview_arguments(args, TITLE_CHARS), ensure_ascii=False, separators=(",", ":"),
                          default=str)
    except (TypeError, ValueError, RecursionError):
        return "…"


def _one_line(text: str) -> str:
    """The first line, shortened to ``TITLE_CHARS``; `` …`` marks what was left out."""
    first, _, rest = text.strip().partition("\n")
    first = first.rstrip()
    cut = bool(rest.strip())
    if len(first) > TITLE_CHARS:
        first, cut = first[: TITLE_CHARS - 1].rstrip(), True
    return f"{first} …" if cut else first


def preview_arguments(value: Any, limit: int = PREVIEW_CHARS, depth: int = 0, keep: Sequence[str] = ()) -> Any:
    """``value`` with every string longer than ``limit`` cut to ``limit`` characters followed by
    ``… [N more characters]``; objects and arrays keep their shape down to ``PREVIEW_DEPTH``
    levels (deeper ones are shown as ``…``). The top-level keys in ``keep`` keep their values whole."""
    if keep and isinstance(value, Mapping):
        return {str(k): v if k in keep else preview_arguments(v, limit, depth + 1) for k, v in value.items()}
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return f"{value[:limit]}… [{len(value) - limit} more characters]"
    if isinstance(value, Mapping | list | tuple) and depth >= PREVIEW_DEPTH:
        return "…"
    if isinstance(value, Mapping):
        return {str(k): preview_arguments(v, limit, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [preview_arguments(v, limit, depth + 1) for v in value]
    return value


# -- bash commands --------------------------------------------------------------------------------
# How a command reads (one simple command or not, the commands inside it) is ``shell_syntax``'s.


def bash_kind(command: str) -> ToolKind:
    words = simple_command_words(command)
    if words:
        return _BASH_KINDS.get(words[0].rsplit("/", 1)[-1], "execute")
    return "execute"


def rule_prefix(words: Sequence[str]) -> list[str] | None:
    """The prefix an ``Always`` answer remembers for the simple command ``words``: the program, and its
    subcommand for programs that have subcommands (``git push``, ``npm test``). ``None`` — remember the
    command exactly — for a command that runs what its words do not show (an interpreter, a wrapper,
    ``find -exec``, ``git -c``: ``shell_syntax.runs_other_commands``) and for a program with
    subcommands given none (``git --version``: ``git *`` would cover ``git -c alias.x=!… x``)."""
    if not words or runs_other_commands(words):
        return None
    program = words[0]
    if program.rsplit("/", 1)[-1] in _SUBCOMMAND_PROGRAMS:
        return list(words[:2]) if len(words) >= 2 and not words[1].startswith("-") else None
    return [program]


_SUBCOMMAND_PROGRAMS: Final = frozenset({
    "apt", "apt-get", "brew", "bun", "cargo", "deno", "docker", "dotnet", "gh", "git", "go", "kubectl", "make",
    "npm", "npx", "pip", "pip3", "pnpm", "podman", "poetry", "systemctl", "uv", "yarn",
})
