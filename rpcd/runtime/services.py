"""Cwd-bound services (Pi's ``createAgentSessionServices``): everything a session needs
that depends on *which project* it runs in, rebuilt from scratch for every target cwd.

Process-global intent (absolute extension paths, flags, a trust override) arrives as
``ProcessInputs``, closed over once by the factory; nothing here reads the process
cwd, so a session resumed from another project never sees the startup directory's
settings, context files or extensions.

Order of construction, and why:
1. global settings (``defaultProjectTrust`` is a global-only setting);
2. user/global extensions and process extensions — loaded *before* trust because
   they may answer the ``project_trust`` event, as in Pi;
3. project trust, only if the project has trust-requiring resources;
4. project settings and project extensions, only when trusted (untrusted: not read,
   not imported);
5. skills and prompt templates (``rpcd.runtime.resources.discovery``): the user's always, the project's
   only when trusted;
6. context files (loaded regardless of trust), system prompt files;
7. extension flag validation.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs

from rpcd.core.files import read_regular
from rpcd.core.values import Diagnostic
from rpcd.runtime.extensions import ExtensionRunner
from rpcd.runtime.extensions.loading import ScriptLoaderSource, load_extensions
from rpcd.runtime.resources.context_files import ContextFile, load_context_files
from rpcd.runtime.resources.discovery import Resource, SourceInfo, path_resources, resolve_resources
from rpcd.runtime.resources.extension_paths import discover_extensions, expand_extension_path, split_by_kind
from rpcd.runtime.resources.packages import PackageResolver, ResolvedPackages, configured_packages
from rpcd.runtime.resources.packages import not_loaded as package_not_loaded
from rpcd.runtime.resources.prompt_templates import PromptTemplate, load_prompt_templates
from rpcd.runtime.resources.settings import (
    CONFIG_DIR_NAME,
    HeldSettings,
    Settings,
    load_global_settings,
    load_settings,
)
from rpcd.runtime.resources.skills import Skill, load_skills
from rpcd.runtime.resources.trust import (
    AuthorizeProject,
    ProjectTrustContext,
    SessionTrustMemory,
    TrustDecision,
    TrustResolution,
    TrustStore,
    TrustStoreError,
    resolve_project_trust,
)
from rpcd.tools import ApprovalGate, ToolOperations, ToolSelection
from rpcd.tools.sandbox import SandboxControl

if TYPE_CHECKING:
    from rpcd.mcp.config import ServerConfig
    from rpcd.mcp.pool import McpPool

__all__ = [
    "AuthorizeProject",
    "ProcessInputs",
    "ProjectTrustContext",
    "Services",
    "TrustDecision",
    "create_services",
]

EXTENSIONS_DIR_NAME = "extensions"


@attrs.frozen
class ProcessInputs:
    """Process-global inputs, resolved once in the composition root."""

    extension_paths: tuple[str, ...] = ()
    """Absolute module/package/directory paths (Pi's ``-e``); a relative one is refused, never
    reinterpreted against a session's cwd."""
    flags: Mapping[str, bool | str] = attrs.field(factory=dict)
    """Extension flag values by name (without ``--``)."""
    trust_override: bool | None = None
    """``--approve`` (True) / ``--no-approve`` (False); ``None`` follows the trust policy."""
    no_context_files: bool = False
    tool_selection: ToolSelection = attrs.field(factory=ToolSelection)
    """``--tools`` / ``--exclude-tools`` / ``--no-builtin-tools`` / ``--no-tools`` (Pi's tool flags)."""
    trust_memory: SessionTrustMemory = attrs.field(factory=SessionTrustMemory, eq=False)
    """Per-process trust decisions (``trustOnce``), shared by every replacement."""
    held_settings: HeldSettings = attrs.field(factory=HeldSettings, eq=False)
    """What the setters chose (model, thinking level, queue modes, auto-compaction, auto-retry),
    read by every later session as its global settings (``rpcd.runtime.settings.HeldSettings``)."""
    approval: ApprovalGate | None = attrs.field(default=None, eq=False)
    """The process's tool-approval gate (policy + remembered rules), shared by every session;
    ``None``: every tool runs, as in Pi."""
    sandbox: SandboxControl | None = attrs.field(default=None, eq=False)
    """Which sandbox the sessions' commands run in (``rpcd.tools.sandbox``; ``None``: never one, as in Pi)."""
    tool_operations: ToolOperations | None = attrs.field(default=None, eq=False)
    """Where the built-in file and shell tools do their I/O (the ACP front: the editor's buffers and
    terminals, ``rpcd.tools.operations``); ``None``: the local disk and processes."""
    no_extensions: bool = False
    """``--no-extensions``: no discovered or settings-listed extensions (``extension_paths`` still load)."""
    skill_paths: tuple[str, ...] = ()
    """``--skill PATH`` (absolute; a file or a folder of skills), after the discovered ones."""
    no_skills: bool = False
    """``--no-skills``: no discovered or settings-listed skills (``skill_paths`` still load)."""
    script_loader: ScriptLoaderSource | None = attrs.field(default=None, eq=False)
    """How TypeScript/JavaScript extensions are loaded (the process's Node extension host), asked only
    when a session has one; ``None``: each is a diagnostic (not loaded)."""
    package_resolver: PackageResolver | None = attrs.field(default=None, eq=False)
    """How the ``packages`` settings are resolved (Pi's package manager in the Node extension host),
    asked only when there are some; ``None``: each package is a diagnostic (not loaded)."""
    prompt_template_paths: tuple[str, ...] = ()
    """``--prompt-template PATH`` (absolute; a file or a folder of templates)."""
    no_prompt_templates: bool = False
    """``--no-prompt-templates``: no discovered or settings-listed templates."""
    mcp_pool: Callable[[], Awaitable[McpPool]] | None = attrs.field(default=None, eq=False)
    """The process's MCP pool (``rpcd.mcp.pool``), asked for only when the session names servers: they
    are started, or shared with the sessions already naming them, before its ``session_start``
    (without any, nothing of MCP but its config reader is imported); ``None``: no MCP servers."""
    mcp_servers: tuple[ServerConfig, ...] = ()
    """Servers the front names for every session it makes (ACP's ``mcpServers``), after those of
    the ``mcp.json`` files (a name given twice: the front's wins)."""


@attrs.frozen
class Services:
    cwd: str
    agent_dir: str
    settings: Settings
    context_files: list[ContextFile]
    """Global first, then filesystem root -> cwd."""
    extensions: ExtensionRunner
    project_trusted: bool
    diagnostics: list[Diagnostic]
    trust: TrustResolution | None = None
    system_prompt: str | None = None
    """``SYSTEM.md`` replacing the default prompt: ``<cwd>/.pi/`` when trusted, else ``<agentDir>/``."""
    append_system_prompt: str | None = None
    skills: list[Skill] = attrs.field(factory=list)
    prompt_templates: list[PromptTemplate] = attrs.field(factory=list)
    skill_resources: list[Resource] = attrs.field(factory=list)
    """The files ``skills`` were loaded from (an extension's ``resources_discover`` adds to them)."""
    prompt_resources: list[Resource] = attrs.field(factory=list)
    held_settings: HeldSettings | None = None
    """The process's held setter choices (the session's setters add to them)."""


async def create_services(
    cwd: str,
    agent_dir: str,
    *,
    process_inputs: ProcessInputs,
    authorize_project: AuthorizeProject | None = None,
) -> Services:
    """Build the services of ``cwd``. Only ``authorize_project`` raising makes this raise;
    every other problem (bad JSON, a broken extension) becomes a diagnostic."""
    cwd = _resolve(cwd)
    agent_dir = _resolve(agent_dir)
    diagnostics: list[Diagnostic] = []
    global_data, global_error = load_global_settings(agent_dir)
    global_data = process_inputs.held_settings.over(global_data)
    global_settings = (global_data, global_error)

    runner = ExtensionRunner(cwd, agent_dir, process_inputs.flags)
    scripts = process_inputs.script_loader
    sources: dict[str, dict[str, Any]] = {}
    user_paths = [] if process_inputs.no_extensions else [
        *_tagged(discover_extensions(os.path.join(agent_dir, EXTENSIONS_DIR_NAME)), sources, "auto", "user", agent_dir),
        *_tagged(_settings_extension_paths(global_data, base=agent_dir), sources, "local", "user", agent_dir),
    ]
    process_paths, refused = _process_extension_paths(process_inputs.extension_paths)
    _tagged(process_paths, sources, "cli", "temporary", None)
    load_errors = await load_extensions(runner, split_by_kind(_dedupe([*user_paths, *process_paths])),
                                        sources.__getitem__, scripts)
    load_errors[:0] = refused

    trust_errors: list[Diagnostic] = []
    remembered: list[tuple[str, bool]] = []

    async def ask_extensions(context: ProjectTrustContext) -> bool | None:
        if not runner.has_handlers("project_trust"):
            return None
        decision, remember, errors = await runner.emit_project_trust({"type": "project_trust", "cwd": context.cwd})
        trust_errors.extend(
            Diagnostic("warning", f'Extension "{e.extension_path}" project_trust error: {e.error}') for e in errors
        )
        if decision is not None and remember:
            remembered.append((context.cwd, decision))
        return decision

    trust = await resolve_project_trust(
        cwd,
        agent_dir,
        trust_override=process_inputs.trust_override,
        default_project_trust=global_data.get("defaultProjectTrust"),
        authorize_project=authorize_project,
        ask_extensions=ask_extensions,
        memory=process_inputs.trust_memory,
    )
    for path, decision in remembered:
        try:
            TrustStore(agent_dir).set(path, decision)
        except (TrustStoreError, OSError) as exc:
            trust_errors.append(Diagnostic("warning", exc.message if isinstance(exc, TrustStoreError)
                                           else f"{type(exc).__name__} writing trust store"))
    diagnostics += trust_errors
    diagnostics += trust.diagnostics

    settings = load_settings(cwd, agent_dir, project_trusted=trust.trusted, global_settings=global_settings)
    diagnostics += settings.diagnostics

    project_dir = os.path.join(cwd, CONFIG_DIR_NAME)
    if trust.trusted and not process_inputs.no_extensions:
        project_paths = [
            *_tagged(discover_extensions(os.path.join(project_dir, EXTENSIONS_DIR_NAME)), sources, "auto", "project",
                     project_dir),
            *_tagged(_settings_extension_paths(settings.project_settings, base=project_dir), sources, "local",
                     "project", project_dir),
        ]
        load_errors += await load_extensions(runner, split_by_kind(_dedupe(project_paths)), sources.__getitem__,
                                             scripts)
    packages = await _resolve_packages(cwd, agent_dir, settings, trust.trusted, process_inputs, diagnostics)
    if packages is not None and not process_inputs.no_extensions:
        for path, info in packages.extensions:
            sources.setdefault(path, info)
        load_errors += await load_extensions(runner, split_by_kind(_dedupe([p for p, _ in packages.extensions])),
                                             sources.__getitem__, scripts)

    def resources(kind: Literal["skills", "prompts"]) -> list[Resource]:
        return resolve_resources(
            kind, cwd=cwd, agent_dir=agent_dir, global_settings=settings.global_settings,
            project_settings=settings.project_settings, project_trusted=trust.trusted,
        )

    skill_resources = [] if process_inputs.no_skills else resources("skills")
    if packages is not None and not process_inputs.no_skills:
        skill_resources += packages.skills
    skill_resources += _cli_resources("skills", process_inputs.skill_paths, cwd, diagnostics, "Skill")
    prompt_resources = [] if process_inputs.no_prompt_templates else resources("prompts")
    if packages is not None and not process_inputs.no_prompt_templates:
        prompt_resources += packages.prompts
    prompt_resources += _cli_resources("prompts", process_inputs.prompt_template_paths, cwd, diagnostics,
                                       "Prompt template")
    skills, skill_diagnostics = load_skills(skill_resources)
    prompt_templates, template_diagnostics = load_prompt_templates(prompt_resources)
    diagnostics += skill_diagnostics
    diagnostics += template_diagnostics

    context_files: list[ContextFile] = []
    if not process_inputs.no_context_files:
        context_files, context_diagnostics = load_context_files(cwd, agent_dir)
        diagnostics += context_diagnostics

    system_prompt = _read_prompt_file("SYSTEM.md", cwd, agent_dir, trust.trusted)
    append_system_prompt = _read_prompt_file("APPEND_SYSTEM.md", cwd, agent_dir, trust.trusted)

    diagnostics += load_errors
    diagnostics += runner.take_diagnostics()
    diagnostics += _flag_diagnostics(runner, process_inputs.flags)

    return Services(
        cwd=cwd,
        agent_dir=agent_dir,
        settings=settings,
        context_files=context_files,
        extensions=runner,
        project_trusted=trust.trusted,
        diagnostics=diagnostics,
        trust=trust,
        system_prompt=system_prompt,
        append_system_prompt=append_system_prompt,
        skills=skills,
        prompt_templates=prompt_templates,
        skill_resources=skill_resources,
        prompt_resources=prompt_resources,
        held_settings=process_inputs.held_settings,
    )


def _cli_resources(kind: Literal["skills", "prompts"], paths: Sequence[str], cwd: str,
                   diagnostics: list[Diagnostic], what: str) -> list[Resource]:
    """``--skill`` / ``--prompt-template`` paths (Pi's ``cli`` source, ``temporary`` scope); one that
    does not exist is an error diagnostic, as in Pi."""
    for path in paths:
        if not os.path.exists(path):
            diagnostics.append(Diagnostic("error", f"{what} path does not exist: {path}"))
    return path_resources(kind, [(p, SourceInfo(p, "cli", "temporary")) for p in paths], cwd)


def _tagged(
    paths: list[str], sources: dict[str, dict[str, Any]], source: str, scope: str, base_dir: str | None
) -> list[str]:
    """Record Pi's ``sourceInfo`` of each extension path (the first place a path is reached wins)."""
    for path in paths:
        info: dict[str, Any] = {"path": path, "source": source, "scope": scope, "origin": "top-level"}
        if base_dir is not None:
            info["baseDir"] = base_dir
        sources.setdefault(path, info)
    return paths


def _resolve(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


def _dedupe(paths: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for path in paths:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            out.append(path)
    return out


def _process_extension_paths(paths: Sequence[str]) -> tuple[list[str], list[Diagnostic]]:
    """Absolute paths only: a directory is the extensions it declares (``index.ts``, a ``package.json``
    manifest, ``__init__.py``), else a folder of extensions."""
    accepted: list[str] = []
    refused: list[Diagnostic] = []
    for path in paths:
        if not os.path.isabs(path):
            refused.append(
                Diagnostic("error", f'Failed to load extension "{path}": process extension paths must be absolute')
            )
            continue
        accepted += expand_extension_path(path)
    return accepted, refused


def _settings_extension_paths(settings: Mapping[str, Any], *, base: str) -> list[str]:
    """The ``extensions`` setting: paths relative to the settings file's directory.

    Plain entries (globs expand) include; ``+path`` force-includes; ``-path`` removes
    that exact path and ``!pattern`` removes matches.
    """
    entries = settings.get("extensions")
    if not isinstance(entries, list):
        return []
    included: list[str] = []
    excluded_exact: set[str] = set()
    excluded_patterns: list[str] = []
    for entry in entries:
        if not isinstance(entry, str) or not entry.strip():
            continue
        if entry.startswith("!"):
            excluded_patterns.append(_anchor(entry[1:], base))
        elif entry.startswith("-"):
            excluded_exact.add(_anchor(entry[1:], base))
        else:
            target = _anchor(entry.removeprefix("+"), base)
            matches = sorted(glob.glob(target)) if glob.has_magic(target) else [target]
            for match in matches:
                included += expand_extension_path(match)
    return [
        p for p in included
        if p not in excluded_exact and not any(fnmatch.fnmatch(p, pat) for pat in excluded_patterns)
    ]


def _anchor(path: str, base: str) -> str:
    expanded = os.path.expanduser(path)
    return os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(base, expanded))


def _read_prompt_file(name: str, cwd: str, agent_dir: str, trusted: bool) -> str | None:
    candidates = [os.path.join(cwd, CONFIG_DIR_NAME, name)] if trusted else []
    candidates.append(os.path.join(agent_dir, name))
    for path in candidates:
        try:
            return read_regular(path).decode("utf-8", errors="replace").removeprefix("\ufeff")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            continue
        except OSError:
            continue
    return None


NO_PACKAGE_HOST = ("rpcd resolves Pi packages with Pi's package manager in its Node extension host, which this "
                   "session has none of: the extensions, skills and prompt templates it brings are missing")


async def _resolve_packages(cwd: str, agent_dir: str, settings: Settings, trusted: bool, process_inputs: ProcessInputs,
                            diagnostics: list[Diagnostic]) -> ResolvedPackages | None:
    """What the ``packages`` settings bring (``None``: there are none, or they cannot be resolved here:
    then a warning per package says why and what to do)."""
    configured = configured_packages(settings.global_settings, settings.project_settings)
    if not configured:
        return None
    resolver = process_inputs.package_resolver
    resolved = await resolver(cwd, agent_dir, trusted) if resolver is not None else NO_PACKAGE_HOST
    if isinstance(resolved, str):
        diagnostics += [package_not_loaded(scope, source, resolved) for scope, source in configured]
        return None
    diagnostics += resolved.diagnostics
    return resolved


def _flag_diagnostics(runner: ExtensionRunner, flags: Mapping[str, bool | str]) -> list[Diagnostic]:
    """Pi's checks of extension flag values against the flags the loaded extensions declared."""
    out: list[Diagnostic] = []
    known = runner.flags
    unknown: list[str] = []
    for name, value in flags.items():
        flag = known.get(name)
        if flag is None:
            unknown.append(f"--{name}")
        elif flag.type == "string" and not isinstance(value, str):
            out.append(Diagnostic("error", f'Extension flag "--{name}" requires a value'))
    if unknown:
        plural = "" if len(unknown) == 1 else "s"
        out.append(Diagnostic("error", f"Unknown option{plural}: {', '.join(unknown)}"))
    return out
