"""rpcctl's command line: one parser, the exit-code table, the daemon flags it passes on.

Global options may stand before or after the command (``rpcctl prompt hi --json``); each
subcommand's ``--help`` shows its own arguments, examples and the exit codes, and points at
``rpcctl --help`` for the global ones instead of repeating them. The daemon's own flags (Pi's:
``--model``, ``--provider``, ``--thinking``, ``--api-key``, ``--tools`` …) are passed through as
they are, so a hint the daemon prints ("pass --api-key") can be followed on rpcctl too.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import Any

from rpcd.clients.lookup import looks_like_path
from rpcd.clients.types import APPROVAL_POLICIES, SANDBOX_MODES

EXIT_OK = 0
EXIT_TURN_FAILED = 1
EXIT_USAGE = 2
EXIT_RPC_ERROR = 3
EXIT_DAEMON_DIED = 4
EXIT_TIMEOUT = 5
EXIT_CANCELLED = 6
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "ok"),
    (EXIT_TURN_FAILED, "the turn failed or was aborted (prompt, chat --json); doctor found a problem"),
    (EXIT_USAGE, "usage error (nothing was started)"),
    (EXIT_RPC_ERROR, "the daemon answered with an error (printed with its flat error list)"),
    (EXIT_DAEMON_DIED, "the daemon could not start, died or broke the protocol (exit status + stderr tail)"),
    (EXIT_TIMEOUT, "no answer within --timeout (the request was cancelled)"),
    (EXIT_CANCELLED, "a replacement was cancelled by an extension (the previous session stays)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
    (EXIT_BROKEN_PIPE, "stdout was closed by its reader (rpcctl … | head)"),
)
"""The one table of exit codes: ``--help``, docs/client.md and the tests read it."""

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
CHAT_COMMANDS = ("chat", "attach")


def exit_codes_text() -> str:
    return "exit codes:\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value < 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text}: give 0 (no timeout) or a positive number of seconds")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: give a number >= 1")
    return value


# (flags, keyword arguments) of every global option, by group; added to the main parser with their
# help and to each subcommand hidden (so they are accepted after the command name too).
Option = tuple[tuple[str, ...], dict[str, Any]]
GLOBAL_OPTIONS: tuple[tuple[str, tuple[Option, ...]], ...] = (
    ("output", (
        (("--json",), {"action": "store_true", "default": False,
                       "help": "one JSON document per result on stdout (prompt: text, sessionId, sessionFile, "
                               "stopReason, usage, cost, isError, errorMessage); a failure is {\"error\": …}"}),
        (("--events",), {"action": "store_true", "default": False,
                         "help": "with --json: also the daemon's notifications, one NDJSON line each"}),
        (("--quiet", "-q"), {"action": "store_true", "default": False,
                             "help": "no progress or remarks on stderr (warnings and errors still)"}),
        (("--verbose", "-v"), {"action": "store_true", "default": False,
                               "help": "echo the daemon's stderr, every event and info diagnostics"}),
        (("--show-thinking",), {"action": argparse.BooleanOptionalAction, "default": None,
                                "help": "show the model's thinking (dimmed on a terminal, between <thinking> "
                                        "lines elsewhere; default: in chat yes, in prompt no)"}),
        (("--timeout",), {"type": _seconds, "metavar": "SECONDS", "default": 60.0,
                          "help": "per-request timeout, also for start-up (default 60; 0 = none; prompt: none)"}),
    )),
    ("session (passed to the daemon)", (
        (("--cwd",), {"metavar": "DIR", "default": None, "help": "project directory of the session (must exist)"}),
        (("--session",), {"metavar": "ID|PATH", "default": None,
                          "help": "start on this session: a file, or a session id or its first characters "
                                  "(this project's sessions first, then every project's), as Pi's --session"}),
        (("--resume",), {"metavar": "PATH", "dest": "start_resume", "default": None,
                         "help": "start on this session file"}),
        (("--continue", "-c"), {"action": "store_true", "dest": "start_continue", "default": False,
                                "help": "continue the most recent session of --cwd"}),
        (("--resume-last",), {"action": "store_true", "dest": "start_resume_last", "default": False,
                              "help": "start on the session the previous run served in this project (--cwd, "
                                      "else here; the host journal)"}),
        (("--in-memory", "--no-session"), {"action": "store_true", "dest": "in_memory", "default": False,
                                           "help": "keep sessions in memory (no files)"}),
        (("--agent-dir",), {"metavar": "DIR", "default": None, "help": "Pi agent dir (default ~/.pi/agent)"}),
        (("--session-dir",), {"metavar": "DIR", "default": None, "help": "where session files live"}),
    )),
    ("model (passed to the daemon, as Pi's flags)", (
        (("--provider",), {"metavar": "NAME", "default": None, "help": "provider of --model (anthropic, openai, …)"}),
        (("--model",), {"metavar": "PATTERN", "default": None,
                        "help": "model id, provider/id or a partial name; PATTERN:LEVEL sets the thinking level"}),
        (("--thinking",), {"choices": THINKING_LEVELS, "metavar": "LEVEL", "default": None,
                           "help": "thinking level: " + ", ".join(THINKING_LEVELS)}),
        (("--api-key",), {"metavar": "KEY", "default": None,
                          "help": "API key for the model's provider (prefer the environment: argv is visible)"}),
        (("--models",), {"metavar": "PATTERNS", "default": None, "help": "comma-separated models to cycle through"}),
    )),
    ("tools, context and approval (passed to the daemon)", (
        (("--tools", "-t"), {"metavar": "A,B", "default": None, "help": "allow only these tools"}),
        (("--exclude-tools", "-xt"), {"metavar": "A,B", "default": None, "help": "disable these tools"}),
        (("--no-builtin-tools", "-nbt"), {"action": "store_true", "default": False,
                                          "help": "no built-in tools (extension tools stay)"}),
        (("--no-tools", "-nt"), {"action": "store_true", "default": False, "help": "no tools at all"}),
        (("--no-context-files", "-nc"), {"action": "store_true", "default": False,
                                         "help": "load no AGENTS.md / CLAUDE.md"}),
        (("--extension", "-e"), {"metavar": "PATH", "action": "append", "dest": "extensions", "default": None,
                                 "help": "load this extension into every session (repeatable)"}),
        (("--flag",), {"metavar": "NAME[=VALUE]", "action": "append", "dest": "flags", "default": None,
                       "help": "an extension flag (Pi's --NAME / --NAME VALUE; repeatable)"}),
        (("--approval",), {"choices": APPROVAL_POLICIES, "metavar": "POLICY", "default": None,
                           "help": "tool approval: auto, ask-writes, ask-all, deny-writes (default: ask-writes on "
                                   "a terminal, where you answer each question; auto otherwise)"}),
        (("--yes", "-y"), {"action": "store_true", "default": False,
                           "help": "run every tool without asking (= --approval auto)"}),
        (("--sandbox",), {"choices": SANDBOX_MODES, "metavar": "MODE", "default": None,
                          "help": "where bash commands may write: off, read-only, workspace-write (the project and "
                                  "the temp dir); default: the sandbox setting, else off"}),
        (("--sandbox-network",), {"choices": ("on", "off"), "metavar": "on|off", "default": None,
                                  "help": "whether sandboxed commands may reach the network (default off)"}),
        (("--trust",), {"choices": ("ask", "trust", "trust-once", "deny"), "default": None,
                        "help": "answer to project-trust questions: trust (remembered in <agentDir>/trust.json), "
                                "trust-once, deny, ask (default: ask on a terminal, else deny)"}),
        (("--trust-policy",), {"choices": ("ask", "deny", "trust"), "default": None,
                               "help": "the daemon's --trust-policy (when this client does not answer)"}),
    )),
    ("daemon", (
        (("--daemon",), {"metavar": "CMD", "default": None, "help": "daemon command line (default: this python "
                                                                    "-P -m rpcd)"}),
        (("--log-level",), {"choices": ("debug", "info", "warning", "error"), "default": None,
                            "help": "the daemon's stderr log level (shown with -v)"}),
    )),
)

GLOBAL_EPILOG = ("Global options (`rpcctl --help` lists them) may come before or after the command: "
                 "rpcctl --json prompt hi = rpcctl prompt hi --json.")


def _add_globals(parser: argparse.ArgumentParser, *, hidden: bool) -> None:
    for title, options in GLOBAL_OPTIONS:
        target: Any = parser if hidden else parser.add_argument_group(title)
        for flags, spec in options:
            spec = dict(spec)
            if hidden:
                spec["default"] = argparse.SUPPRESS
                spec["help"] = argparse.SUPPRESS
            action = target.add_argument(*flags, **spec)
            action.global_option = hidden  # type: ignore[attr-defined,unused-ignore]  # completion still offers it


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30, width=min(100, _columns()))


def _columns() -> int:
    import shutil

    return shutil.get_terminal_size((100, 24)).columns


def _epilog(examples: Sequence[str]) -> str:
    lines = ["examples:", *(f"  {e}" for e in examples)] if examples else []
    return "\n".join([*lines, "", GLOBAL_EPILOG, "", exit_codes_text()])


def build_parser(version: str = "") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rpcctl",
        description="Drive an rpcd daemon: one-shot commands, an interactive chat, and the demo.",
        epilog=_epilog([
            'rpcctl prompt "what does this project do?"',
            "git diff | rpcctl prompt review this diff",
            "rpcctl --json prompt hi | jq -r .text",
            "rpcctl --model anthropic/claude-sonnet-4-5 --thinking high chat",
            "rpcctl --continue chat",
        ]),
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"rpcctl {version}")
    _add_globals(parser, hidden=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, help_text: str, examples: Sequence[str] = (), *,
                aliases: Sequence[str] = ()) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text, aliases=list(aliases),
                                  epilog=_epilog(examples), formatter_class=_Formatter)
        _add_globals(sub, hidden=True)
        return sub

    sub = command("prompt", "send a prompt; the reply streams to stdout (tools and problems on stderr)", [
        'rpcctl prompt "explain src/main.py"',
        "git diff | rpcctl prompt review this       # piped stdin is added after the words",
        "rpcctl prompt summarize - < notes.txt      # - puts stdin at that place",
        "rpcctl --json prompt hi | jq -r .text",
        "rpcctl --continue prompt and now the tests",
    ])
    sub.add_argument("text", nargs="*", metavar="TEXT",
                     help="the prompt (words joined with spaces); `-` stands for stdin, which is also added "
                          "after the words when it is piped")
    sub = command("chat", "interactive chat: streamed replies, tool blocks, diffs, slash commands (/help)", [
        "rpcctl chat", "rpcctl --continue chat", "rpcctl --session 0193a5 chat",
        "rpcctl --model openai/gpt-4o --thinking low chat",
    ], aliases=("attach",))
    sub = command("new", "start a new session (in this project, or another one with --project)",
                  ["rpcctl new --project ~/other"])
    sub.add_argument("--project", metavar="DIR", help="start the session in this project directory")
    sub.add_argument("--parent", metavar="FILE", help="record this session file as the new one's parent")
    sub = command("resume", "switch to a session (a file, or an id or its first characters)",
                  ["rpcctl resume 0193a5", "rpcctl resume ~/.pi/agent/sessions/--home-me-proj--/x.jsonl"])
    sub.add_argument("path", metavar="FILE|ID", help="a .jsonl session file or a session id (prefix)")
    sub.add_argument("--cwd-override", metavar="DIR")
    sub = command("fork", "fork the session before a user entry", ["rpcctl --continue fork 3f2a9c1d"])
    sub.add_argument("entry_id", metavar="ID", help="the id of a user message (`rpcctl tree` lists them)")
    sub = command("clone", "clone the branch ending at an entry (default: the leaf)", ["rpcctl --continue clone"])
    sub.add_argument("entry_id", metavar="ID", nargs="?", help="an entry id (`rpcctl tree`); default: the leaf")
    sub = command("import", "import a Pi JSONL transcript as a new session",
                  ["rpcctl import old.jsonl", "ssh box cat s.jsonl | rpcctl import -"])
    sub.add_argument("file", metavar="FILE", help="a Pi .jsonl transcript, or - for stdin")
    sub.add_argument("--cwd-override", metavar="DIR")
    command("state", "show the current session's state", ["rpcctl --continue state"])
    sub = command("sessions", "list the sessions of this project (--all: of every one); "
                              "`sessions rm|rename` manage one",
                  ["rpcctl sessions", "rpcctl sessions --all --query refactor", "rpcctl sessions rm 0193a5",
                   "rpcctl sessions rename 0193a5 'the big refactor'"])
    sub.add_argument("--for-cwd", metavar="DIR", help="the sessions of this project (default: --cwd, else here)")
    sub.add_argument("--all", action="store_true", help="the sessions of every project")
    sub.add_argument("--limit", type=_positive_int)
    sub.add_argument("--cursor")
    sub.add_argument("--query", metavar="WORDS", help="only sessions whose name, first message or cwd has them")
    sub.add_argument("--sort", choices=("updated", "created"), help="newest by last activity (default) or creation")
    actions = sub.add_subparsers(dest="sessions_action", metavar="ACTION")
    rm = actions.add_parser("rm", help="move a session to the trash (not the current session)")
    rm.add_argument("file", metavar="FILE|ID", help="a session file or id (`rpcctl sessions` lists them)")
    rename = actions.add_parser("rename", help="name a session")
    rename.add_argument("file", metavar="FILE|ID", help="a session file or id")
    rename.add_argument("name", metavar="NAME", help="its new display name")
    sub = command("export", "export the current session: `export html [PATH]` or `export jsonl PATH`",
                  ["rpcctl --continue export html", "rpcctl --continue export jsonl /tmp/branch.jsonl --force"])
    formats = sub.add_subparsers(dest="export_format", metavar="FORMAT", required=True)
    for name, help_text, optional in (("html", "one self-contained HTML file (default: in the session's cwd)", True),
                                      ("jsonl", "the current branch as a new session file", False),
                                      ("md", "the current branch as Markdown, tool calls folded (PATH `-`: "
                                             "to stdout)", True)):
        fmt = formats.add_parser(name, help=help_text, description=help_text)
        fmt.add_argument("path", nargs="?" if optional else None, metavar="PATH", help="where to write")
        fmt.add_argument("--force", "-f", action="store_true", help="replace PATH if it exists (atomically)")
    sub = command("undo", "put back the files the agent changed: the last run, or since a checkpoint "
                          "(a preview first; a file changed by someone else since is kept unless --force)",
                  ["rpcctl --continue undo --dry-run", "rpcctl --continue undo",
                   "rpcctl --continue undo 3f2a9c1d --force   # an entry from `rpcctl checkpoints`"])
    sub.add_argument("entry_id", metavar="ENTRY", nargs="?",
                     help="a checkpoint entry (`rpcctl checkpoints`) or any entry; default: the newest run not undone")
    sub.add_argument("--dry-run", "-n", action="store_true", help="only show what would change (with diffs)")
    sub.add_argument("--force", action="store_true", help="also overwrite files someone else changed since")
    sub.add_argument("--file", dest="files", action="append", metavar="PATH", help="only this file (repeatable)")
    command("checkpoints", "list the session's file checkpoints (one before each run's first change)",
            ["rpcctl --continue checkpoints"])
    sub = command("search", "search every stored session's messages, tool calls and names "
                            "(Pi's picker syntax: words, \"phrases\", re:regex)",
                  ['rpcctl search flaky test', 'rpcctl search \'"connection refused"\' --for-cwd .',
                   "rpcctl search 're:TODO\\(\\w+\\)'"])
    sub.add_argument("query", nargs="+", metavar="QUERY")
    sub.add_argument("--for-cwd", metavar="DIR", help="only this project's sessions (default: every project)")
    sub.add_argument("--limit", type=_positive_int)
    sub.add_argument("--cursor")
    sub = command("limits", "show the spending caps and what was spent; set them for this daemon's sessions",
                  ["rpcctl --continue limits", "rpcctl --continue limits --max-cost 2.50 prompt ...  # see docs"])
    sub.add_argument("--max-cost", type=float, metavar="USD")
    sub.add_argument("--max-tokens", type=_positive_int, metavar="N")
    sub.add_argument("--max-cost-per-day", type=float, metavar="USD")
    sub.add_argument("--max-tokens-per-day", type=_positive_int, metavar="N")
    command("tree", "show the session tree", ["rpcctl --continue tree"])
    command("messages", "show the current context's messages", ["rpcctl --continue messages"])
    sub = command("name", "set the session's display name", ["rpcctl --continue name 'release audit'"])
    sub.add_argument("name", metavar="NAME", help="the display name")
    sub = command("model", "switch the session's model (setModel; not saved as the default)",
                  ["rpcctl --continue model anthropic claude-sonnet-4-5"])
    sub.add_argument("provider", metavar="PROVIDER", help="a provider (`rpcctl models` lists them)")
    sub.add_argument("model_id", metavar="MODEL_ID", help="a model id of that provider")
    sub = command("models", "list the models usable now (with credentials), the current one marked",
                  ["rpcctl models", "rpcctl models sonnet", "rpcctl --json models gpt | jq '.models[].id'"])
    sub.add_argument("search", nargs="?", metavar="SEARCH",
                     help="keep the models whose provider and id match (fuzzy, as Pi's --list-models)")
    command("dispose", "dispose the host (final)")
    approvals = command("approvals", "list (the default) or revoke remembered tool-approval rules",
                        ["rpcctl approvals", "rpcctl approvals revoke 7c1f"])
    which = approvals.add_subparsers(dest="approvals_command", metavar="ACTION")
    listing = which.add_parser("list", help="the rules (of one project with --for-cwd, else all)")
    listing.add_argument("--for-cwd", metavar="DIR", help="only the rules of this project")
    revoke = which.add_parser("revoke", help="forget one rule")
    revoke.add_argument("rule_id", metavar="ID")
    trust = command("trust", "list (the default), save or revoke project-trust decisions "
                             "(<agentDir>/trust.json, shared with Pi)",
                    ["rpcctl trust", "rpcctl trust add .", "rpcctl trust revoke ~/old-project"])
    which = trust.add_subparsers(dest="trust_command", metavar="ACTION")
    which.add_parser("list", help="every saved decision: directory, trusted or not")
    add = which.add_parser("add", help="trust a project: its settings, extensions and skills load from now on")
    add.add_argument("directory", metavar="DIR", nargs="?", default=".", type=_directory,
                     help="the project (default: the current directory)")
    revoke = which.add_parser("revoke", help="forget the decision saved for a directory (it is asked again)")
    revoke.add_argument("directory", metavar="DIR", type=_directory, help="a directory with a saved decision")
    packages = command("packages", "list (the default), install or remove Pi packages (pi install/remove/list: "
                                   "Pi's own package manager, in rpcd's Node extension host)",
                       ["rpcctl packages", "rpcctl packages install npm:pi-aliases",
                        "rpcctl --cwd . packages install -l ./tools/my-pi-package"])
    which = packages.add_subparsers(dest="packages_command", metavar="ACTION")
    which.add_parser("list", help="the packages of the user and project settings, and where each is installed")
    for action, what in (("install", "install a package and add it to the settings"),
                         ("remove", "remove a package and take it out of the settings")):
        sub = which.add_parser(action, help=what)
        sub.add_argument("source", metavar="SOURCE", help="npm:name[@version], git:host/path[@ref], a URL or a path")
        sub.add_argument("-l", "--local", action="store_true", help="the project's packages (.pi/settings.json)")
    sub = command("login", "log in to a provider as Pi's /login does (a subscription, or --with-api-key); stored in "
                           "<agentDir>/auth.json, shared with Pi", ["rpcctl login anthropic",
                                                                   "rpcctl login github-copilot",
                                                                   "rpcctl login mistral --with-api-key"])
    sub.add_argument("provider", metavar="PROVIDER", help="a provider id (`rpcctl auth` lists them)")
    sub.add_argument("--with-api-key", dest="login_api_key", action="store_true",
                     help="store an API key instead (asked without echo)")
    sub.add_argument("--no-browser", dest="login_no_browser", action="store_true",
                     help="print the login URL without opening a browser")
    sub = command("logout", "remove a provider's stored credential from <agentDir>/auth.json",
                  ["rpcctl logout anthropic"])
    sub.add_argument("provider", metavar="PROVIDER")
    command("auth", "the providers you can log in to, and what auth.json holds for each", ["rpcctl auth"])
    command("doctor", "check the setup: agent dir, session dir, settings/models/auth files, where each key "
                      "comes from, trust", ["rpcctl doctor", "rpcctl --json doctor"])
    completion = commands.add_parser("completion", help="print a shell completion script (generated from "
                                     "this parser)", description="print a completion script for SHELL",
                                     formatter_class=_Formatter, epilog=_epilog([
                                         "rpcctl completion bash > ~/.local/share/bash-completion/completions/rpcctl",
                                         "rpcctl completion fish > ~/.config/fish/completions/rpcctl.fish"]))
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), metavar="SHELL", help="bash, zsh or fish")
    demo = commands.add_parser("demo", help=DEMO_HELP, description=DEMO_HELP, formatter_class=_Formatter,
                               epilog=_epilog(["rpcctl demo", "./scripts/demo -v"]))
    demo.add_argument("--daemon", metavar="CMD", default=argparse.SUPPRESS,
                      help="daemon command line (default: this python -P -m rpcd)")
    demo.add_argument("--verbose", "-v", action="store_true", default=argparse.SUPPRESS,
                      help="echo the daemon's stderr")
    return parser


def _directory(text: str) -> str:
    return os.path.abspath(os.path.expanduser(text))


DEMO_HELP = "run the end-to-end demo in its own temporary agent dir and project (offline model)"
#: Global options the demo cannot honour (it makes its own project and answers its own prompts).
DEMO_IGNORES = {"json": "--json", "events": "--events", "start_resume": "--resume", "start_continue": "--continue",
                "start_resume_last": "--resume-last", "trust_policy": "--trust-policy", "extensions": "-e",
                "log_level": "--log-level", "session": "--session", "session_dir": "--session-dir",
                "in_memory": "--in-memory", "agent_dir": "--agent-dir", "cwd": "--cwd", "trust": "--trust",
                "approval": "--approval", "yes": "--yes", "provider": "--provider", "model": "--model",
                "thinking": "--thinking", "api_key": "--api-key", "models": "--models", "tools": "--tools",
                "exclude_tools": "--exclude-tools", "no_builtin_tools": "--no-builtin-tools",
                "no_tools": "--no-tools", "no_context_files": "--no-context-files", "flags": "--flag",
                "sandbox": "--sandbox", "sandbox_network": "--sandbox-network"}

# (attribute, daemon flag) of the options passed on as `--flag VALUE` / `--flag`
_VALUE_FLAGS = (("start_resume", "--resume"), ("trust_policy", "--trust-policy"), ("log_level", "--log-level"),
                ("agent_dir", "--agent-dir"), ("session_dir", "--session-dir"), ("cwd", "--cwd"),
                ("provider", "--provider"), ("model", "--model"), ("thinking", "--thinking"),
                ("api_key", "--api-key"), ("models", "--models"), ("tools", "--tools"),
                ("exclude_tools", "--exclude-tools"), ("sandbox", "--sandbox"),
                ("sandbox_network", "--sandbox-network"))
_SWITCHES = (("start_continue", "--continue"), ("start_resume_last", "--resume-last"), ("in_memory", "--in-memory"),
             ("no_builtin_tools", "--no-builtin-tools"), ("no_tools", "--no-tools"),
             ("no_context_files", "--no-context-files"))


def daemon_args(args: argparse.Namespace) -> list[str]:
    """The daemon's command line for these options (what rpcctl does not handle itself)."""
    out: list[str] = []
    if getattr(args, "start_resume_last", False) and not args.cwd:
        out += ["--cwd", os.getcwd()]  # --resume-last is per project: this one's last session
    for attribute, flag in _VALUE_FLAGS:
        value = getattr(args, attribute, None)
        if value:
            out += [flag, value]
    for attribute, flag in _SWITCHES:
        if getattr(args, attribute, False):
            out.append(flag)
    for extension in args.extensions or ():
        out += ["-e", extension]
    for extension_flag in getattr(args, "flags", None) or ():
        out += ["--flag", extension_flag]
    policy = "auto" if args.yes else args.approval
    if policy:
        out += ["--approval", policy]
    return out


PATH_ARGUMENTS = ("project", "parent", "for_cwd", "cwd", "agent_dir", "start_resume", "session_dir")
"""Arguments naming files or directories: the daemon takes absolute paths only, so the CLI resolves
the user's against its own cwd (``~`` expanded) before anything is sent (``-`` is stdin). ``FILE|ID``
arguments are resolved once it is known whether they name a file (``cli.session_target``)."""
MAYBE_PATHS = ("file", "path")


def absolute_paths(args: argparse.Namespace) -> None:
    for name in PATH_ARGUMENTS:
        value = getattr(args, name, None)
        if isinstance(value, str):
            setattr(args, name, os.path.abspath(os.path.expanduser(value)))
    for name in MAYBE_PATHS:
        value = getattr(args, name, None)
        if isinstance(value, str) and value != "-" and looks_like_path(value):
            setattr(args, name, os.path.abspath(os.path.expanduser(value)))
    args.extensions = [os.path.abspath(os.path.expanduser(e)) for e in getattr(args, "extensions", None) or ()]


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace,
                    read_stdin: Callable[[], str]) -> None:
    """Usage errors the daemon would report late or misleadingly: refused before it starts (exit 2)."""
    starts = [flag for flag, on in (("--resume", args.start_resume), ("--continue", args.start_continue),
                                    ("--resume-last", args.start_resume_last), ("--in-memory", args.in_memory),
                                    ("--session", args.session)) if on]
    if len(starts) > 1:
        parser.error(f"{' and '.join(starts)} are exclusive: each picks the session to start on")
    if args.yes and args.approval:
        parser.error("--yes and --approval are exclusive (--yes is --approval auto)")
    if args.no_tools and (args.tools or args.no_builtin_tools):
        parser.error("--no-tools and --tools/--no-builtin-tools are exclusive")
    if args.events and not args.json:
        parser.error("--events needs --json")
    for label, directory in (("--cwd", args.cwd), ("--project", getattr(args, "project", None))):
        if directory and not os.path.isdir(directory):
            parser.error(f"{label} {directory}: no such directory")
    for label, path in (("--resume", args.start_resume),
                        ("resume", getattr(args, "path", None) if args.command == "resume" else None)):
        if path and os.path.isdir(path):
            parser.error(f"{label} {path}: is a directory; give a .jsonl session file (`rpcctl sessions` lists them)")
    _check_text(parser, args)
    if args.command == "prompt":
        args.text = prompt_text(parser, args.text, read_stdin)
    if args.command == "import" and args.file == "-" and _stdin_is_terminal():
        parser.error("import -: stdin is a terminal; pipe a transcript into it")


def _check_text(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Arguments the wire cannot carry: bytes that are not UTF-8 (argv decodes them as surrogates)."""
    for name, value in sorted(vars(args).items()):
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str):
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    shown = item.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                    parser.error(f"{name.replace('_', '-')}: {shown!r} is not valid UTF-8")


def _stdin_is_terminal() -> bool:
    import sys

    return sys.stdin is not None and sys.stdin.isatty()


def prompt_text(parser: argparse.ArgumentParser, words: Sequence[str], read_stdin: Callable[[], str]) -> str:
    """The prompt, as Pi's ``-p`` builds it from piped stdin and the words: a ``-`` word is replaced
    by stdin; without one, piped stdin is added after the words (a blank line between)."""
    dash = "-" in words
    if dash and _stdin_is_terminal():
        parser.error("prompt -: stdin is a terminal; pipe the text into it")
    piped = "" if _stdin_is_terminal() else read_stdin().strip()
    if dash:
        at = list(words).index("-")
        parts = [" ".join(words[:at]), piped, " ".join(w for w in words[at + 1:] if w != "-")]
    else:
        parts = [" ".join(words), piped]
    text = "\n\n".join(part for part in parts if part.strip())
    if not text.strip():
        parser.error("prompt: the text is empty (give words, or pipe the text into it)")
    return text
