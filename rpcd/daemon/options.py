"""The command line of ``rpcd`` and ``rpcd acp``: one parser, one ``Options``.

Kept apart from the composition root (``app``) so that ``rpcd acp`` parses the same flags without
importing the JSON-RPC endpoint (pygls, lsprotocol) it never uses.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Final, Literal

import attrs

from rpcd.core.model_inputs import ModelInputs
from rpcd.core.values import APPROVAL_POLICIES, SANDBOX_MODES, ApprovalPolicy, SandboxMode
from rpcd.sessions.spec import (
    DEFAULT_APPROVAL_TIMEOUT,
    DEFAULT_EXIT_TIMEOUT,
    DEFAULT_TRUST_TIMEOUT,
    DEFAULT_UI_TIMEOUT,
    ProcessSpec,
    TrustPolicy,
)
from rpcd.store.paths import get_agent_dir
from rpcd.tools import ToolSelection
from rpcd.transport import DEFAULT_MAX_MESSAGE_BYTES

JOURNAL_RELATIVE: Final = os.path.join("rpcd", "journal.json")

TargetKind = Literal["new", "resume", "session", "continue", "in-memory", "resume-last"]


@attrs.frozen
class Options:
    cwd: str
    agent_dir: str
    target: TargetKind
    resume_path: str | None
    trust_policy: TrustPolicy
    """``ask``: ask the client when it can answer (the daemon: a client that declared
    ``authorizeProject``; ``rpcd acp``: every client, through ``session/request_permission``), else
    deny. ``deny`` / ``trust``: decided without asking (the daemon still asks a client that declared
    ``authorizeProject``)."""
    trust_timeout: float
    ui_timeout: float
    log_level: str | None
    extensions: tuple[str, ...] = ()
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    extension_flags: Mapping[str, bool | str] = attrs.field(factory=dict)
    no_context_files: bool = False
    no_extensions: bool = False
    skill_paths: tuple[str, ...] = ()
    no_skills: bool = False
    prompt_template_paths: tuple[str, ...] = ()
    no_prompt_templates: bool = False
    exit_timeout: float = DEFAULT_EXIT_TIMEOUT
    model_inputs: ModelInputs = attrs.field(factory=ModelInputs)
    """``--provider`` / ``--model`` / ``--thinking`` / ``--api-key`` / ``--models`` (Pi's flags)."""
    tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()
    no_builtin_tools: bool = False
    no_tools: bool = False
    session_dir: str | None = None
    """``--session-dir`` as given (resolved with the environment and settings at start)."""
    approval: ApprovalPolicy | None = None
    approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT
    cwd_given: bool = False
    """``--cwd`` was given: ``--resume-last`` then starts on that project's last session."""
    sandbox: SandboxMode | None = None
    sandbox_network: bool | None = None

    @property
    def journal_path(self) -> str:
        return os.path.join(self.agent_dir, JOURNAL_RELATIVE)

    @property
    def spec(self) -> ProcessSpec:
        """The flags as the session service composes every session with them (both fronts)."""
        return ProcessSpec(
            agent_dir=self.agent_dir, cwd=self.cwd, session_dir=self.session_dir, extensions=self.extensions,
            extension_flags=self.extension_flags, no_context_files=self.no_context_files,
            no_extensions=self.no_extensions, skill_paths=self.skill_paths, no_skills=self.no_skills,
            prompt_template_paths=self.prompt_template_paths, no_prompt_templates=self.no_prompt_templates,
            model_inputs=self.model_inputs,
            tool_selection=ToolSelection(allow=self.tools, exclude=self.exclude_tools,
                                         no_builtin_tools=self.no_builtin_tools, no_tools=self.no_tools),
            trust_policy=self.trust_policy, trust_timeout=self.trust_timeout, ui_timeout=self.ui_timeout,
            approval=self.approval, approval_timeout=self.approval_timeout, exit_timeout=self.exit_timeout,
            in_memory=self.target == "in-memory", sandbox=self.sandbox, sandbox_network=self.sandbox_network,
        )


@functools.cache
def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: ``$COLUMNS``, else the terminal of stdout, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's own formatter, its width found without ``import shutil``: ``add_argument`` builds one
    per argument, and shutil's import probes bz2, lzma and zlib (~4 ms of every daemon's start)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         width if width is not None else _terminal_columns() - 2)


def build_parser(prog: str = "rpcd") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        formatter_class=_HelpFormatter,
        description=(
            "JSON-RPC 2.0 daemon over stdio hosting one replaceable Pi-compatible agent session. "
            "The first session is created after the client's `initialize`, so a project-trust "
            "prompt can use the client's capabilities."
        ),
    )
    from rpcd import __version__

    parser.add_argument("--version", action="version", version=f"{prog} {__version__}")
    parser.add_argument("--cwd", help="working directory of a new session (default: the process cwd)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--resume", metavar="PATH", help="start with this session file")
    target.add_argument(
        "--session", metavar="PATH|ID",
        help="start with this session: a file, or a session id / an id prefix only one session has (this "
             "project's first, then every project's), as Pi's --session",
    )
    target.add_argument(
        "--continue", dest="continue_", action="store_true",
        help="start with the most recent session of the cwd (else a new one)",
    )
    target.add_argument("--in-memory", action="store_true", help="start with a session that is never written")
    target.add_argument(
        "--resume-last", action="store_true",
        help="start with the session recorded in the host journal <agentDir>/rpcd/journal.json (with --cwd: the "
             "last one served in that project; else a new one)",
    )
    parser.add_argument("--agent-dir", help="Pi's agent dir (default: $PI_CODING_AGENT_DIR or ~/.pi/agent)")
    parser.add_argument(
        "--session-dir", metavar="DIR",
        help="where session files live (default: $PI_CODING_AGENT_SESSION_DIR, else the sessionDir setting, "
             "else <agentDir>/sessions/--<cwd>--/)",
    )
    parser.add_argument(
        "--trust-policy", choices=("ask", "deny", "trust"), default="ask",
        help="project trust: ask the client when it can answer (rpcd: a client that declared authorizeProject; "
             "rpcd acp: through session/request_permission), else deny project code (default ask); deny / trust "
             "decide without asking (rpcd still asks a client that declared authorizeProject)",
    )
    parser.add_argument(
        "--trust-timeout", type=float, default=DEFAULT_TRUST_TIMEOUT, metavar="SECONDS",
        help=f"wait this long for the client's trust answer, then deny (default {DEFAULT_TRUST_TIMEOUT:g})",
    )
    parser.add_argument(
        "--ui-timeout", type=float, default=DEFAULT_UI_TIMEOUT, metavar="SECONDS",
        help=f"default timeout of extension UI dialogs forwarded to the client (default {DEFAULT_UI_TIMEOUT:g})",
    )
    parser.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"),
        help="stderr log level (default: $RPCD_LOG_LEVEL or info)",
    )
    parser.add_argument(
        "-e", "--extension", action="append", default=[], metavar="PATH",
        help="load this extension into every session (made absolute at startup)",
    )
    parser.add_argument(
        "--flag", action="append", default=[], metavar="NAME[=VALUE]", type=_extension_flag,
        help="an extension flag for every session (Pi's --NAME / --NAME VALUE); an unknown name is a diagnostic",
    )
    parser.add_argument(
        "-ne", "--no-extensions", action="store_true",
        help="load no discovered or settings-listed extensions (-e paths still load)",
    )
    parser.add_argument(
        "--skill", action="append", default=[], metavar="PATH",
        help="load this skill file or folder of skills too (also with --no-skills)",
    )
    parser.add_argument(
        "-ns", "--no-skills", action="store_true", help="load no discovered or settings-listed skills",
    )
    parser.add_argument(
        "--prompt-template", action="append", default=[], metavar="PATH",
        help="load this prompt template file or folder too (also with --no-prompt-templates)",
    )
    parser.add_argument(
        "-np", "--no-prompt-templates", action="store_true",
        help="load no discovered or settings-listed prompt templates",
    )
    parser.add_argument(
        "--no-context-files", action="store_true", help="load no AGENTS.md / CLAUDE.md context files",
    )
    models = parser.add_argument_group("model (as Pi's flags; see docs/providers.md)")
    models.add_argument("--provider", metavar="NAME", help="provider of --model (e.g. anthropic, openai, google)")
    models.add_argument(
        "--model", metavar="PATTERN",
        help="model id, provider/id or a partial name; PATTERN:LEVEL also sets the thinking level",
    )
    models.add_argument(
        "--thinking", metavar="LEVEL", help="thinking level: off, minimal, low, medium, high, xhigh, max",
    )
    models.add_argument(
        "--api-key", metavar="KEY",
        help="API key for the selected model's provider (kept in memory only; prefer the environment)",
    )
    models.add_argument(
        "--models", metavar="PATTERNS", help="comma-separated model patterns to cycle through (cycleModel)",
    )
    parser.add_argument(
        "-t", "--tools", type=_tool_names, metavar="A,B",
        help="allow only these tools, built-in or extension (default: read,bash,edit,write + extension tools)",
    )
    parser.add_argument(
        "-xt", "--exclude-tools", type=_tool_names, default=(), metavar="A,B", help="disable these tools",
    )
    parser.add_argument(
        "-nbt", "--no-builtin-tools", action="store_true", help="start without built-in tools (extension tools stay)",
    )
    parser.add_argument("-nt", "--no-tools", action="store_true", help="start without any tool")
    parser.add_argument(
        "--approval", choices=APPROVAL_POLICIES, metavar="POLICY",
        help="tool approval: auto (run every tool, as Pi), ask-writes (the client decides calls that may change "
             "something), ask-all (every call), deny-writes (refuse those calls). Default: the approvalPolicy "
             "setting, else ask-writes if the client declared toolApproval, else auto",
    )
    parser.add_argument(
        "--approval-timeout", type=_positive_float, default=DEFAULT_APPROVAL_TIMEOUT, metavar="SECONDS",
        help=f"wait this long for the client's tool/authorize answer, then reject "
             f"(default {DEFAULT_APPROVAL_TIMEOUT:g})",
    )
    parser.add_argument(
        "--sandbox", choices=SANDBOX_MODES, metavar="MODE",
        help="where the bash tool's and the client's commands may write: off (anywhere, as Pi), read-only "
             "(nowhere), workspace-write (the project and the temp dir); Linux, with bubblewrap or Landlock. "
             "Default: the sandbox setting, else off",
    )
    parser.add_argument(
        "--sandbox-network", choices=("on", "off"), metavar="on|off",
        help="whether sandboxed commands may reach the network (default: the sandbox setting's network, else off)",
    )
    parser.add_argument(
        "--max-message-bytes", type=_positive_int, default=DEFAULT_MAX_MESSAGE_BYTES, metavar="N",
        help=f"frames larger than this are drained and answered with -32012 (default {DEFAULT_MAX_MESSAGE_BYTES})",
    )
    parser.add_argument(
        "--exit-timeout", type=_positive_float, default=DEFAULT_EXIT_TIMEOUT, metavar="SECONDS",
        help="at the orderly end, wait this long for the final disposal (and for stray threads), then exit "
        f"anyway with a logged reason (default {DEFAULT_EXIT_TIMEOUT:g})",
    )
    return parser


def _extension_flag(text: str) -> tuple[str, bool | str]:
    """``name`` (a boolean flag, set) or ``name=value`` (a string flag); a leading ``--`` is allowed."""
    name, sep, value = text.removeprefix("--").partition("=")
    if not name:
        raise argparse.ArgumentTypeError(f"an extension flag needs a name: {text!r}")
    return name, (value if sep else True)


def _tool_names(text: str) -> tuple[str, ...]:
    """Pi's comma list: names trimmed, empty ones dropped."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text}")
    return value


def parse_options(argv: Sequence[str], prog: str = "rpcd") -> Options:
    ns = build_parser(prog).parse_args(list(argv))
    cwd = os.path.abspath(ns.cwd) if ns.cwd else os.getcwd()
    agent_dir = os.path.abspath(os.path.expanduser(ns.agent_dir)) if ns.agent_dir else os.path.abspath(get_agent_dir())
    target: TargetKind = "new"
    if ns.resume:
        target = "resume"
    elif ns.session:
        target = "session"
    elif ns.continue_:
        target = "continue"
    elif ns.in_memory:
        target = "in-memory"
    elif ns.resume_last:
        target = "resume-last"
    return Options(
        cwd=cwd,
        cwd_given=bool(ns.cwd),
        agent_dir=agent_dir,
        target=target,
        resume_path=os.path.abspath(ns.resume) if ns.resume else ns.session,
        trust_policy=ns.trust_policy,
        trust_timeout=ns.trust_timeout,
        ui_timeout=ns.ui_timeout,
        log_level=ns.log_level,
        extensions=tuple(os.path.abspath(p) for p in ns.extension),
        max_message_bytes=ns.max_message_bytes,
        extension_flags=dict(ns.flag),
        no_context_files=ns.no_context_files,
        no_extensions=ns.no_extensions,
        skill_paths=tuple(os.path.abspath(os.path.expanduser(p)) for p in ns.skill),
        no_skills=ns.no_skills,
        prompt_template_paths=tuple(os.path.abspath(os.path.expanduser(p)) for p in ns.prompt_template),
        no_prompt_templates=ns.no_prompt_templates,
        exit_timeout=ns.exit_timeout,
        model_inputs=ModelInputs(
            provider=ns.provider,
            model=ns.model,
            thinking=ns.thinking,
            api_key=ns.api_key,
            models=tuple(p.strip() for p in ns.models.split(",") if p.strip()) if ns.models else None,
        ),
        tools=ns.tools,
        exclude_tools=ns.exclude_tools,
        no_builtin_tools=ns.no_builtin_tools,
        no_tools=ns.no_tools,
        session_dir=ns.session_dir,
        approval=ns.approval,
        approval_timeout=ns.approval_timeout,
        sandbox=ns.sandbox,
        sandbox_network=None if ns.sandbox_network is None else ns.sandbox_network == "on",
    )
