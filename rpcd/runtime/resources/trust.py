"""Project trust: may a cwd's own code and configuration be loaded?

Trust is only an input-loading guard (Pi's security.md): it keeps a repository from
silently changing settings or running extensions. It is asked only when the project
has resources that need it, and decided in Pi's order: a process override, then an
extension's ``project_trust`` answer, then the nearest saved decision in
``<agentDir>/trust.json``, then ``defaultProjectTrust`` — whose default ``"ask"`` goes
to the injected ``authorize_project`` hook (the daemon asks its client) or, with no
hook, means *no* (a non-interactive Pi never trusts by default).
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, TypeAlias

import attrs

from rpcd.core.durable import locked, replace_file
from rpcd.core.errors import RuntimeFailure
from rpcd.core.files import read_regular
from rpcd.core.values import Diagnostic, SavedTrust
from rpcd.runtime.resources.settings import CONFIG_DIR_NAME

TRUST_FILE_NAME = "trust.json"
TRUST_REQUIRING_PI_ENTRIES: tuple[str, ...] = (
    "settings.json", "mcp.json", "extensions", "skills", "prompts", "themes", "SYSTEM.md", "APPEND_SYSTEM.md",
)
"""Entries of ``<cwd>/.pi/`` that make a project need trust (a bare ``.pi`` does not)."""

TrustDecisionKind: TypeAlias = Literal["trust", "trustOnce", "deny"]
TrustSource: TypeAlias = Literal[
    "not-needed", "override", "extension", "remembered", "session", "setting", "authorized", "default"
]


class TrustStoreError(RuntimeFailure):
    """``trust.json`` exists but cannot be used, so a decision could not be saved."""

    kind = "TrustStoreError"


@attrs.frozen
class ProjectTrustContext:
    cwd: str
    reasons: tuple[str, ...]
    """Why trust is needed: the trust-requiring paths found (e.g. ``.pi/extensions``)."""


@attrs.frozen
class TrustDecision:
    decision: TrustDecisionKind
    remember: bool = False
    """Write the decision to ``trust.json`` (ignored for ``trustOnce``)."""


AuthorizeProject: TypeAlias = Callable[[str, ProjectTrustContext], Awaitable[TrustDecision]]
ProjectTrustHook: TypeAlias = Callable[[ProjectTrustContext], Awaitable[bool | None]]
"""Asks the already-loaded (global/process) extensions; ``None`` means undecided."""


@attrs.frozen
class TrustResolution:
    trusted: bool
    source: TrustSource
    context: ProjectTrustContext
    diagnostics: tuple[Diagnostic, ...] = ()


def canonical(path: str) -> str:
    return os.path.realpath(os.path.abspath(os.path.expanduser(path)))


def trust_requiring_resources(cwd: str, *, home: str | None = None) -> tuple[str, ...]:
    """Pi's ``hasTrustRequiringProjectResources`` with the reasons spelled out.

    ``.agents/skills`` counts in the cwd or any ancestor, except the user's own
    ``~/.agents/skills``.
    """
    reasons: list[str] = []
    pi_dir = os.path.join(cwd, CONFIG_DIR_NAME)
    for name in TRUST_REQUIRING_PI_ENTRIES:
        if os.path.lexists(os.path.join(pi_dir, name)):
            reasons.append(f"{CONFIG_DIR_NAME}/{name}")
    home_skills = canonical(os.path.join(home or os.path.expanduser("~"), ".agents", "skills"))
    current = os.path.abspath(cwd)
    while True:
        skills = os.path.join(current, ".agents", "skills")
        if os.path.isdir(skills) and canonical(skills) != home_skills:
            reasons.append(skills if current != os.path.abspath(cwd) else ".agents/skills")
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return tuple(reasons)


class TrustStore:
    """``<agentDir>/trust.json``: ``{"<canonical dir>": true|false}``, nearest ancestor wins."""

    def __init__(self, agent_dir: str) -> None:
        self.path = os.path.join(agent_dir, TRUST_FILE_NAME)

    def read(self) -> tuple[dict[str, bool], str | None]:
        """The stored decisions, and a reason if the file could not be used (then ``{}``)."""
        try:
            text = read_regular(self.path).decode("utf-8").removeprefix("\ufeff")
        except FileNotFoundError:
            return {}, None
        except (OSError, UnicodeDecodeError) as exc:
            return {}, type(exc).__name__
        if not text.strip():
            return {}, None
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            return {}, f"invalid JSON at line {exc.lineno} column {exc.colno}"
        if not isinstance(data, dict):
            return {}, "top-level value is not an object"
        return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, bool)}, None

    def lookup(self, cwd: str, decisions: Mapping[str, bool] | None = None) -> bool | None:
        stored = self.read()[0] if decisions is None else decisions
        current = canonical(cwd)
        while True:
            value = stored.get(current)
            if value is not None:
                return value
            parent = os.path.dirname(current)
            if parent == current:
                return None
            current = parent

    def set(self, directory: str, value: bool | None) -> None:
        """Record (``None`` removes) a decision: read-modify-write under ``trust.json.lock``,
        replaced atomically, keys sorted, so a concurrent Pi never sees a torn file."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with locked(self.path):
            current, error = self.read()
            if error is not None:
                # Never clobber a file we could not read: the user's other decisions live there.
                raise TrustStoreError(f'Trust store "{self.path}" is unreadable ({error}); decision not saved')
            key = canonical(directory)
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
            _atomic_write_json(self.path, current)


class SavedDecisions:
    """``rpcd.core.values.TrustControl`` over a ``TrustStore``: what ``listTrust`` / ``revokeTrust``
    read and undo (the same file, lock and atomic write as a new decision)."""

    def __init__(self, store: TrustStore) -> None:
        self._store = store

    def list_decisions(self) -> tuple[list[SavedTrust], list[Diagnostic]]:
        decisions, error = self._store.read()
        notes = [] if error is None else [
            Diagnostic("warning", f'Trust store "{self._store.path}" is unreadable ({error}); nothing listed')]
        return [SavedTrust(directory, trusted) for directory, trusted in sorted(decisions.items())], notes

    def revoke(self, directory: str) -> SavedTrust | None:
        key = canonical(directory)
        decisions, _ = self._store.read()
        if key not in decisions:
            return None
        self._store.set(key, None)  # refuses (TrustStoreError) a file it cannot read, never clobbers it
        return SavedTrust(key, decisions[key])

    def save(self, directory: str, trusted: bool) -> SavedTrust:
        key = canonical(directory)
        self._store.set(key, trusted)  # the same lock and atomic write as a decision answered at startup
        return SavedTrust(key, trusted)


def _atomic_write_json(path: str, data: Mapping[str, bool]) -> None:
    text = json.dumps(dict(sorted(data.items())), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    replace_file(path, text.encode("utf-8"))


@attrs.define
class SessionTrustMemory:
    """Decisions that hold for this process only (``trustOnce``, unremembered denials).

    The factory closes over one instance so switching back to a project does not ask
    again, as Pi's CLI caches its decision per cwd.
    """

    decisions: dict[str, bool] = attrs.Factory(dict)


async def resolve_project_trust(
    cwd: str,
    agent_dir: str,
    *,
    trust_override: bool | None = None,
    default_project_trust: Any = None,
    authorize_project: AuthorizeProject | None = None,
    ask_extensions: ProjectTrustHook | None = None,
    memory: SessionTrustMemory | None = None,
) -> TrustResolution:
    """Decide whether ``cwd``'s project resources may load; raises only if ``authorize_project`` does."""
    context = ProjectTrustContext(cwd, trust_requiring_resources(cwd))
    store = TrustStore(agent_dir)
    if trust_override is not None:
        return TrustResolution(trust_override, "override", context)
    stored_decisions, store_error = store.read()
    notes: list[Diagnostic] = []
    if store_error is not None:
        notes.append(Diagnostic("warning", f'Ignoring trust store "{store.path}": {store_error}'))
    if not context.reasons:
        stored = store.lookup(cwd, stored_decisions)
        return TrustResolution(stored if stored is not None else True, "not-needed", context, tuple(notes))
    key = canonical(cwd)
    if ask_extensions is not None:
        answer = await ask_extensions(context)
        if answer is not None:
            return TrustResolution(answer, "extension", context, tuple(notes))
    stored = store.lookup(cwd, stored_decisions)
    if stored is not None:
        return _finish(stored, "remembered", context, notes)
    if memory is not None and key in memory.decisions:
        return _finish(memory.decisions[key], "session", context, notes)
    if default_project_trust == "always":
        return TrustResolution(True, "setting", context, tuple(notes))
    if default_project_trust == "never":
        return _finish(False, "setting", context, notes)
    if authorize_project is not None:
        decision = await authorize_project(cwd, context)
        trusted = decision.decision in ("trust", "trustOnce")
        saved = False
        if decision.remember and decision.decision != "trustOnce":
            saved = _save(store, cwd, trusted, notes)
        if not saved and memory is not None:
            memory.decisions[key] = trusted
        return _finish(trusted, "authorized", context, notes)
    return _finish(False, "default", context, notes)


def _save(store: TrustStore, cwd: str, trusted: bool, notes: list[Diagnostic]) -> bool:
    try:
        store.set(cwd, trusted)
    except (TrustStoreError, OSError) as exc:
        reason = exc.message if isinstance(exc, TrustStoreError) else f"{type(exc).__name__} writing trust store"
        notes.append(Diagnostic("warning", reason))
        return False
    return True


def _finish(
    trusted: bool, source: TrustSource, context: ProjectTrustContext, notes: list[Diagnostic]
) -> TrustResolution:
    if not trusted:
        notes.append(
            Diagnostic(
                "warning",
                f'Project "{context.cwd}" is not trusted; ignoring its project resources '
                f"({', '.join(context.reasons)}). Trust it to load them.",
            )
        )
    return TrustResolution(trusted, source, context, tuple(notes))
