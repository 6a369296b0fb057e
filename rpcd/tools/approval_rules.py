"""Remembered approval answers: ``<agentDir>/rpcd/approvals.json`` and how a rule matches a call.

An ``allowAlways`` / ``rejectAlways`` answer becomes a rule for the project (the session's
canonical cwd) and the tool, with a matcher derived from the call:

* ``bash``: the command's first word(s) and `` *`` — ``npm test *`` (the program and, for
  programs with subcommands, the subcommand; see ``approval_facts.rule_prefix``). A command that
  is not provably one simple command (``shell_syntax.simple_command_words``), one that runs what
  its words do not show (an interpreter, a wrapper, ``find -exec``, ``git -c``:
  ``shell_syntax.runs_other_commands``) and a program with subcommands given none (``git
  --version``) are remembered whole and match exactly that text again.
* file tools (``read``, ``edit``, ``write``, ``grep``, ``find``, ``ls``): the path as a glob,
  relative to the project (absolute outside it); a hand-edited rule may use ``*``, ``**``,
  ``?``, ``[…]``, ``{a,b}``.
* any other tool: every call of that tool.

Matching is deliberately lopsided: an *allow* rule for a command prefix applies only to a command
that is provably one simple command starting with exactly those words (``npm test && rm -rf /``,
``ls x#; rm y`` are asked about again), while a *reject* rule applies when any simple command bash
could run inside the call starts with its words (``shell_syntax.command_segments``, generous).
Paths are compared after resolving symbolic links. Reject rules win over allow rules. Rules are
a convenience for a person answering prompts, not a sandbox.

The file: ``{"version": 1, "rules": [{"id", "project", "toolName", "decision", "command"?,
"path"?, "createdAt"}, …]}``, 0600, replaced atomically under ``approvals.json.lock``. Entries
this version does not understand are kept as they are. A file that is not valid JSON is never
rewritten and no rule of it applies (the caller reports a warning).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Final, Literal, TypeVar

from rpcd.core.durable import locked, replace_file
from rpcd.core.errors import RuntimeFailure
from rpcd.core.values import AlwaysRule, ApprovalRule
from rpcd.tools.approval_facts import FILE_TOOLS, CallFacts, rule_prefix
from rpcd.tools.globs import glob_to_regex
from rpcd.tools.shell_syntax import command_segments, runs_other_commands, simple_command_words

RULES_RELATIVE: Final = os.path.join("rpcd", "approvals.json")
RULES_VERSION: Final = 1
_GLOB_SPECIAL = re.compile(r"([*?\[\]{}\\,])")
_T = TypeVar("_T")


class ApprovalRulesError(RuntimeFailure):
    """The rules file exists but cannot be used, so it is left as it is."""

    kind = "ApprovalRulesError"


def canonical_project(cwd: str) -> str:
    """The project a rule belongs to: the session's cwd, absolute, symbolic links resolved."""
    return os.path.realpath(os.path.abspath(os.path.expanduser(cwd)))


class ApprovalRules:
    """The rules file of one agent dir."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._cache: tuple[tuple[int, int, int, int], list[ApprovalRule], str | None] | None = None
        """The last reading and the file's (device, inode, size, mtime) then: a file replaced or
        changed (by us, another rpcd, a person) has another identity, and is read again."""

    @classmethod
    def in_agent_dir(cls, agent_dir: str) -> ApprovalRules:
        return cls(os.path.join(agent_dir, RULES_RELATIVE))

    # -- reading -----------------------------------------------------------------------------------

    def read(self) -> tuple[list[ApprovalRule], str | None]:
        """The usable rules, and why the file cannot be used (then no rule at all)."""
        try:
            st = os.stat(self.path)
            identity: tuple[int, int, int, int] | None = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            identity = None
        cached = self._cache
        if identity is not None and cached is not None and cached[0] == identity:
            return list(cached[1]), cached[2]
        raw, error = self._read_raw()
        rules = [] if error is not None else [rule for rule in map(_rule_of, raw) if rule is not None]
        self._cache = (identity, rules, error) if identity is not None else None
        return list(rules), error

    def _read_raw(self) -> tuple[list[Any], str | None]:
        try:
            with open(self.path, "rb") as fh:
                text = fh.read().decode("utf-8").removeprefix("\ufeff")
        except FileNotFoundError:
            return [], None
        except (OSError, UnicodeDecodeError) as exc:
            return [], type(exc).__name__
        if not text.strip():
            return [], None
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            return [], f"invalid JSON at line {exc.lineno} column {exc.colno}"
        except RecursionError:
            return [], "nested too deeply"
        if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
            return [], 'not an object with a "rules" list'
        return list(data["rules"]), None

    def warning(self) -> str | None:
        """A warning for a person when the file cannot be used (``None`` when it can)."""
        error = self.read()[1]
        if error is None:
            return None
        return f'Ignoring approval rules "{self.path}": {error}; no remembered rule applies until it is fixed'

    def for_project(self, project: str | None = None) -> list[ApprovalRule]:
        rules = self.read()[0]
        if project is None:
            return rules
        key = canonical_project(project)
        return [rule for rule in rules if rule.project == key]

    # -- matching ----------------------------------------------------------------------------------

    def decide(self, facts: CallFacts, project: str) -> ApprovalRule | None:
        """The rule that decides this call: a matching reject rule, else a matching allow rule."""
        matching = [rule for rule in self.read()[0] if rule_matches(rule, facts, project)]
        for rule in matching:
            if rule.decision == "reject":
                return rule
        return matching[0] if matching else None

    # -- writing -----------------------------------------------------------------------------------

    def add(self, rule: ApprovalRule) -> ApprovalRule:
        """Store ``rule`` (an identical rule already there is kept instead). Raises
        ``ApprovalRulesError`` when the file cannot be used, ``OSError`` on disk trouble."""

        def change(entries: list[Any]) -> ApprovalRule:
            for existing in map(_rule_of, entries):
                if existing is not None and _same_matcher(existing, rule):
                    return existing
            entries.append(_entry_of(rule))
            return rule

        return self._update(change)

    def revoke(self, rule_id: str) -> ApprovalRule | None:
        def change(entries: list[Any]) -> ApprovalRule | None:
            for index, entry in enumerate(entries):
                rule = _rule_of(entry)
                if rule is not None and rule.id == rule_id:
                    del entries[index]
                    return rule
            return None

        if not os.path.exists(self.path):
            return None
        return self._update(change)

    def _update(self, change: Callable[[list[Any]], _T]) -> _T:
        directory = os.path.dirname(self.path)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        with locked(self.path):
            entries, error = self._read_raw()
            if error is not None:
                # Never clobber a file we could not read: the user's other rules live there.
                raise ApprovalRulesError(f'Approval rules "{self.path}" are unusable ({error}); nothing was changed')
            result = change(entries)
            text = json.dumps({"version": RULES_VERSION, "rules": entries}, indent=2, ensure_ascii=False) + "\n"
            replace_file(self.path, text.encode("utf-8"))
            return result


def always_rule(facts: CallFacts, project: str) -> AlwaysRule:
    """What an ``…Always`` answer to this call stores (see the module doc for the matchers), with
    its description for the person deciding — the request says it before the answer is given."""
    if facts.tool_name == "bash" and facts.command is not None:
        words = simple_command_words(facts.command)
        prefix = rule_prefix(words) if words is not None else None
        if prefix is not None:
            command = f"{shlex.join(prefix)} *"
            return AlwaysRule(facts.tool_name, f"bash commands `{command}` (one simple command each)",
                              command=command)
        command = facts.command.strip()
        return AlwaysRule(facts.tool_name, "exactly this bash command", command=command)
    if facts.tool_name in FILE_TOOLS and facts.path is not None:
        path = _path_pattern(facts.path, project)
        return AlwaysRule(facts.tool_name, f"{facts.tool_name} calls on `{path}`", path=path)
    return AlwaysRule(facts.tool_name, f"every {facts.tool_name} call")


def new_rule(facts: CallFacts, project: str, decision: Literal["allow", "reject"]) -> ApprovalRule:
    """The rule an ``…Always`` answer to this call stores (:func:`always_rule`)."""
    matcher = always_rule(facts, project)
    created = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return ApprovalRule(id=uuid.uuid4().hex[:12], project=project, tool_name=facts.tool_name, decision=decision,
                        created_at=created, command=matcher.command, path=matcher.path)


def rule_matches(rule: ApprovalRule, facts: CallFacts, project: str) -> bool:
    if rule.tool_name != facts.tool_name or rule.project != project:
        return False
    if rule.command is not None:
        return facts.command is not None and command_matches(rule.command, facts.command,
                                                             reject=rule.decision == "reject")
    if rule.path is not None:
        return facts.path is not None and path_matches(rule.path, facts.path, project)
    return True


def command_matches(pattern: str, command: str, *, reject: bool) -> bool:
    """``pattern`` is ``words *`` (a prefix) or a whole command: exactly that text, leading and trailing
    blanks aside (whitespace inside may be quoted, or a newline that ends a comment). An allow prefix
    never covers a command that runs what its words do not show (``runs_other_commands``): a ``git *``
    an older version stored does not allow ``git -c alias.x='!…' x``."""
    prefix = _prefix_words(pattern)
    if prefix is None:
        return command.strip() == pattern.strip()
    if reject:
        return any(_starts_with(segment, prefix, by_name=True) for segment in command_segments(command))
    words = simple_command_words(command)
    return words is not None and not runs_other_commands(words) and _starts_with(words, prefix, by_name=False)


def _prefix_words(pattern: str) -> list[str] | None:
    stripped = pattern.strip()
    if stripped == "*":
        return []
    if not stripped.endswith(" *"):
        return None
    return simple_command_words(stripped[:-2])


def _starts_with(words: list[str], prefix: list[str], *, by_name: bool) -> bool:
    if len(words) < len(prefix):
        return False
    if not prefix:
        return True
    head = words[0].rsplit("/", 1)[-1] if by_name else words[0]
    first = prefix[0].rsplit("/", 1)[-1] if by_name else prefix[0]
    return head == first and words[1 : len(prefix)] == prefix[1:]


def path_matches(pattern: str, path: str, project: str) -> bool:
    real = os.path.realpath(path)
    if pattern.startswith("/"):
        return _glob(pattern).match(real) is not None
    relative = os.path.relpath(real, project)
    if relative == ".." or relative.startswith("../"):
        return False
    return _glob(pattern).match(relative) is not None


@lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(glob_to_regex(pattern), re.DOTALL)


def _path_pattern(path: str, project: str) -> str:
    real = os.path.realpath(path)
    relative = os.path.relpath(real, project)
    target = real if relative == ".." or relative.startswith("../") else relative
    return _GLOB_SPECIAL.sub(r"\\\1", target)


def _same_matcher(a: ApprovalRule, b: ApprovalRule) -> bool:
    return (a.project, a.tool_name, a.decision, a.command, a.path) == (b.project, b.tool_name, b.decision, b.command,
                                                                       b.path)


def _entry_of(rule: ApprovalRule) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": rule.id, "project": rule.project, "toolName": rule.tool_name,
                             "decision": rule.decision}
    if rule.command is not None:
        entry["command"] = rule.command
    if rule.path is not None:
        entry["path"] = rule.path
    entry["createdAt"] = rule.created_at
    return entry


def _rule_of(entry: Any) -> ApprovalRule | None:
    """A stored entry as a rule, or ``None`` if this version cannot use it (it stays in the file)."""
    if not isinstance(entry, Mapping):
        return None
    rule_id, project, tool_name, decision, created_at = (
        entry.get(key) for key in ("id", "project", "toolName", "decision", "createdAt"))
    command, path = entry.get("command"), entry.get("path")
    if not (isinstance(rule_id, str) and rule_id and isinstance(project, str) and os.path.isabs(project)
            and isinstance(tool_name, str) and tool_name and isinstance(created_at, str)):
        return None
    if decision not in ("allow", "reject"):
        return None
    if not (command is None or isinstance(command, str)) or not (path is None or isinstance(path, str)):
        return None
    if command is not None and path is not None:
        return None
    return ApprovalRule(id=rule_id, project=project, tool_name=tool_name, decision=decision,
                        created_at=created_at, command=command, path=path)
