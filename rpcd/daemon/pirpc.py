"""``rpcd --mode rpc [flags]``: Pi's command line (``cli/args.js``, its spelling and its rules), then
Pi's RPC front (``rpcd.pirpc``).

Pi's flags that rpcd has mean what they mean in Pi: ``--provider``, ``--model``, ``--thinking``,
``--api-key``, ``--models``, ``--no-session``, ``--session <path|id prefix>``, ``--session-dir``,
``--continue``/``-c``, ``--name``/``-n``, ``-e``/``--extension``, ``--tools``/``-t``,
``--exclude-tools``/``-xt``, ``--no-tools``/``-nt``, ``--no-builtin-tools``/``-nbt``,
``--no-context-files``/``-nc``, ``--no-extensions``/``-ne``, ``--skill``, ``--no-skills``/``-ns``,
``--prompt-template``, ``--no-prompt-templates``/``-np``, ``--approve``/``-a`` and
``--no-approve``/``-na``. Any other ``--name [value]`` is an extension flag, as in Pi. Pi's flags rpcd
does not have (``--system-prompt``, ``--session-id``, ``--fork``, …) are said on stderr and ignored,
never silently; the
ones that make no sense without a terminal (``--resume``, ``--print``, ``--export``, ``--list-models``)
are refused. rpcd's own additions: ``--cwd``, ``--agent-dir``, ``--log-level``, ``--ui-timeout``,
``--exit-timeout``, ``--max-message-bytes`` and ``--approval``. As in Pi, an unknown short option and
a missing value are errors (exit 1), an invalid ``--thinking`` a warning.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from typing import Final

import attrs

from rpcd.core.model_inputs import ModelInputs
from rpcd.core.values import APPROVAL_POLICIES
from rpcd.daemon.logs import configure_logging
from rpcd.daemon.process import arm_exit_watchdog, end_when_threads_end
from rpcd.sessions.spec import DEFAULT_EXIT_TIMEOUT, ProcessSpec
from rpcd.store import writer_lock
from rpcd.store.paths import get_agent_dir
from rpcd.tools import ToolSelection
from rpcd.transport import DEFAULT_MAX_MESSAGE_BYTES
from rpcd.transport.stdio import FLUSH_TIMEOUT, guard_stdout

THINKING_LEVELS: Final = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
_VALUE_FLAGS: Final = {
    "--provider": "provider", "--model": "model", "--api-key": "api_key", "--models": "models",
    "--session": "session", "--session-dir": "session_dir", "--thinking": "thinking",
    "--tools": "tools", "-t": "tools", "--exclude-tools": "exclude_tools", "-xt": "exclude_tools",
    "--extension": "extension", "-e": "extension", "--skill": "skill", "--prompt-template": "prompt_template",
    # rpcd's own
    "--cwd": "cwd", "--agent-dir": "agent_dir", "--log-level": "log_level", "--ui-timeout": "ui_timeout",
    "--exit-timeout": "exit_timeout", "--max-message-bytes": "max_message_bytes", "--approval": "approval",
}
_SWITCHES: Final = {
    "--no-session": "no_session", "--continue": "continue_", "-c": "continue_",
    "--no-tools": "no_tools", "-nt": "no_tools", "--no-builtin-tools": "no_builtin_tools", "-nbt": "no_builtin_tools",
    "--no-context-files": "no_context_files", "-nc": "no_context_files",
    "--approve": "approve", "-a": "approve", "--no-approve": "no_approve", "-na": "no_approve",
    "--no-extensions": "no_extensions", "-ne": "no_extensions", "--no-skills": "no_skills", "-ns": "no_skills",
    "--no-prompt-templates": "no_prompt_templates", "-np": "no_prompt_templates",
}
_IGNORED_WITH_VALUE: Final = ("--system-prompt", "--append-system-prompt", "--session-id", "--fork", "--theme",
                              "--use-theme", "--tui-mode")
_IGNORED: Final = ("--no-themes", "--verbose", "--offline")
_REFUSED: Final = ("--resume", "-r", "--print", "-p", "--export", "--list-models")


class UsageError(Exception):
    """A command line Pi refuses too (exit 1, ``Error: <message>`` on stderr)."""


@attrs.define
class _Parsed:
    values: dict[str, str] = attrs.field(factory=dict)
    extensions: list[str] = attrs.field(factory=list)
    skills: list[str] = attrs.field(factory=list)
    templates: list[str] = attrs.field(factory=list)
    switches: set[str] = attrs.field(factory=set)
    flags: dict[str, bool | str] = attrs.field(factory=dict)
    warnings: list[str] = attrs.field(factory=list)
    version: bool = False
    help: bool = False


def _parse(args: Sequence[str]) -> _Parsed:
    parsed = _Parsed()
    i = 0
    while i < len(args):
        arg = args[i]
        has_next = i + 1 < len(args)
        if arg == "--":
            break  # messages: nothing to send in RPC mode
        if arg in ("--help", "-h"):
            parsed.help = True
        elif arg in ("--version", "-v"):
            parsed.version = True
        elif arg == "--mode" and has_next:
            i += 1
            if args[i] != "rpc":
                raise UsageError(f"rpcd speaks only Pi's RPC mode (--mode rpc), not --mode {args[i]}")
        elif arg in _VALUE_FLAGS and has_next:
            i += 1
            key = _VALUE_FLAGS[arg]
            if key == "extension":
                parsed.extensions.append(args[i])
            elif key == "skill":
                parsed.skills.append(args[i])
            elif key == "prompt_template":
                parsed.templates.append(args[i])
            elif key == "thinking" and args[i] not in THINKING_LEVELS:
                parsed.warnings.append(f'Invalid thinking level "{args[i]}". '
                                       f'Valid values: {", ".join(THINKING_LEVELS)}')
            else:
                parsed.values[key] = args[i]
        elif arg in ("--name", "-n"):
            if not has_next:
                raise UsageError("--name requires a value")
            i += 1
            parsed.values["name"] = args[i]
        elif arg in _SWITCHES:
            parsed.switches.add(_SWITCHES[arg])
        elif arg in _REFUSED:
            raise UsageError(f"{arg} is not available in RPC mode")
        elif arg in _IGNORED_WITH_VALUE and has_next:
            parsed.warnings.append(f"{arg} is not supported by rpcd; ignored")
            i += 1
        elif arg in _IGNORED:
            parsed.warnings.append(f"{arg} is not supported by rpcd; ignored")
        elif arg.startswith("@"):
            raise UsageError("@file arguments are not supported in RPC mode")
        elif arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if eq:
                parsed.flags[name] = value
            elif has_next and not args[i + 1].startswith(("-", "@")):
                i += 1
                parsed.flags[name] = args[i]
            else:
                parsed.flags[name] = True
        elif arg.startswith("-"):
            raise UsageError(f"Unknown option: {arg}")
        i += 1
    return parsed


def _paths(cwd: str, given: Sequence[str]) -> tuple[str, ...]:
    """Pi's ``resolveCliPaths``: against the process's cwd, ``~`` expanded."""
    return tuple(os.path.abspath(os.path.join(cwd, os.path.expanduser(p))) for p in given)


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _seconds(text: str, flag: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{flag} needs a number of seconds, not {text!r}") from None
    if not value > 0 or math.isinf(value):
        raise UsageError(f"{flag} must be a positive number of seconds: {text}")
    return value


def pi_options(args: Sequence[str]) -> tuple[object, list[str], str | None, bool, bool]:
    """``(PiOptions, warnings, log level, --version, --help)`` from Pi's command line."""
    from rpcd.pirpc.app import PiOptions

    parsed = _parse(args)
    values, switches = parsed.values, parsed.switches
    cwd = os.path.abspath(values["cwd"]) if "cwd" in values else os.getcwd()
    agent_dir = os.path.abspath(os.path.expanduser(values["agent_dir"])) if "agent_dir" in values \
        else os.path.abspath(get_agent_dir())
    approval = values.get("approval")
    if approval is not None and approval not in APPROVAL_POLICIES:
        raise UsageError(f"--approval must be one of {', '.join(APPROVAL_POLICIES)}")
    limit = DEFAULT_MAX_MESSAGE_BYTES
    if "max_message_bytes" in values:
        try:
            limit = int(values["max_message_bytes"])
        except ValueError:
            raise UsageError("--max-message-bytes needs a number of bytes") from None
        if limit < 1:
            raise UsageError("--max-message-bytes must be at least 1")
    trust_override = True if "approve" in switches else (False if "no_approve" in switches else None)
    spec = ProcessSpec(
        agent_dir=agent_dir, cwd=cwd,
        session_dir=values.get("session_dir"),
        extensions=_paths(cwd, parsed.extensions), no_extensions="no_extensions" in switches,
        skill_paths=_paths(cwd, parsed.skills), no_skills="no_skills" in switches,
        prompt_template_paths=_paths(cwd, parsed.templates), no_prompt_templates="no_prompt_templates" in switches,
        extension_flags=parsed.flags,
        no_context_files="no_context_files" in switches,
        model_inputs=ModelInputs(provider=values.get("provider"), model=values.get("model"),
                                 thinking=values.get("thinking"), api_key=values.get("api_key"),
                                 models=_names(values["models"]) if "models" in values else None),
        tool_selection=ToolSelection(allow=_names(values["tools"]) if "tools" in values else None,
                                     exclude=_names(values.get("exclude_tools", "")),
                                     no_builtin_tools="no_builtin_tools" in switches,
                                     no_tools="no_tools" in switches),
        trust_override=trust_override,  # nobody to ask on Pi's wire: else saved trust only, as Pi in RPC mode
        approval=approval,
        exit_timeout=_seconds(values["exit_timeout"], "--exit-timeout") if "exit_timeout" in values
        else DEFAULT_EXIT_TIMEOUT,
        in_memory="no_session" in switches,
    )
    session = "new"
    if "session" in values and "no_session" not in switches:
        session = "open"
    elif "continue_" in switches and "no_session" not in switches:
        session = "continue"
    options = PiOptions(
        spec=spec, session=session,  # type: ignore[arg-type]
        session_arg=values.get("session"), name=values.get("name"),
        ui_timeout=_seconds(values["ui_timeout"], "--ui-timeout") if "ui_timeout" in values else None,
        max_message_bytes=limit,
    )
    return options, parsed.warnings, values.get("log_level"), parsed.version, parsed.help


USAGE: Final = """usage: rpcd --mode rpc [options]

Pi's RPC mode (JSON lines on stdin/stdout, as `pi --mode rpc`) over rpcd's session host.

Pi's options: --provider NAME, --model PATTERN, --thinking LEVEL, --api-key KEY, --models PATTERNS,
  --no-session, --session PATH|ID, --session-dir DIR, --continue/-c, --name/-n NAME,
  --extension/-e PATH, --tools/-t A,B, --exclude-tools/-xt A,B, --no-tools/-nt, --no-builtin-tools/-nbt,
  --no-context-files/-nc, --no-extensions/-ne, --skill PATH, --no-skills/-ns, --prompt-template PATH,
  --no-prompt-templates/-np, --approve/-a, --no-approve/-na, --NAME [VALUE] (extension flags)
rpcd's own: --cwd DIR, --agent-dir DIR, --log-level LEVEL, --ui-timeout SECONDS, --exit-timeout SECONDS,
  --max-message-bytes N, --approval POLICY
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        options, warnings, log_level, version, show_help = pi_options(args)
    except UsageError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    if version:
        from rpcd import __version__

        print(__version__)
        return 0
    if show_help:
        print(USAGE, end="")
        return 0
    configure_logging(log_level)
    for warning in warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    out_fd = guard_stdout()
    # One writer per session file among rpcd processes, in this front too (rpcd.store.writer_lock).
    writer_lock.set_enabled(True)
    from rpcd.pirpc.app import PiOptions, run

    assert isinstance(options, PiOptions)
    timeout = options.spec.exit_timeout
    code = run(options, 0, out_fd, on_ending=lambda: arm_exit_watchdog(2 * timeout + FLUSH_TIMEOUT))
    return end_when_threads_end(code)
