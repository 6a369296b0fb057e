"""Where skills and prompt templates come from: Pi 0.85.0's resource resolution
(``core/package-manager.js``: ``resolve`` → settings entries + ``addAutoDiscoveredResources``).

For one cwd, in Pi's precedence (project before user, settings entries before auto-discovery):

* settings entries — the ``skills`` / ``prompts`` lists of ``<cwd>/.pi/settings.json`` (trusted
  projects only; relative to ``<cwd>/.pi``) and of ``<agentDir>/settings.json`` (relative to the
  agent dir): files or directories (``~`` expands), filtered by glob patterns, ``!pattern``
  (exclude), ``+path`` (force include) and ``-path`` (force exclude);
* auto-discovered, trusted projects only — ``<cwd>/.pi/skills`` (SKILL.md folders, recursively,
  and root ``*.md``), ``.agents/skills`` in the cwd and every ancestor up to the git root (the
  other harnesses' folder: SKILL.md folders and ``*.md`` in grouping folders, never root ``*.md``;
  not the user's own ``~/.agents/skills``), ``<cwd>/.pi/prompts/*.md`` (not recursive);
* auto-discovered, user — ``<agentDir>/skills``, ``~/.agents/skills``, ``<agentDir>/prompts``.

Directories are read in name order, dot entries and ``node_modules`` skipped, and ``.gitignore``
/ ``.ignore`` / ``.fdignore`` rules honoured as Pi honours them. The override patterns of a
scope's settings also switch its auto-discovered resources on and off. A file reached twice
(also through a symlink) counts once, at its first place. npm/git packages are not resolved
(rpcd installs no packages).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias
from urllib.parse import unquote, urlparse

import attrs

from rpcd.core.files import read_regular
from rpcd.runtime.resources.settings import CONFIG_DIR_NAME
from rpcd.tools.globs import glob_to_regex
from rpcd.tools.paths import home_dir, node_resolve

if TYPE_CHECKING:
    import pathspec

__all__ = ["Resource", "ResourceKind", "SourceInfo", "path_resources", "resolve_resources"]

ResourceKind: TypeAlias = Literal["skills", "prompts"]
IGNORE_FILE_NAMES = (".gitignore", ".ignore", ".fdignore")


@attrs.frozen
class SourceInfo:
    """Pi's ``sourceInfo`` of a resource (what ``get_commands`` reports)."""

    path: str
    source: str
    """``auto`` (discovered), ``local`` (a settings entry), ``extension``/``cli`` for the others."""
    scope: str
    """``user``, ``project`` or ``temporary``."""
    origin: str = "top-level"
    base_dir: str | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "source": self.source, "scope": self.scope, "origin": self.origin}
        if self.base_dir is not None:
            out["baseDir"] = self.base_dir
        return out


@attrs.frozen
class Resource:
    path: str
    info: SourceInfo


@attrs.frozen
class _Meta:
    source: str
    scope: str
    base_dir: str | None

    def rank(self) -> int:
        """``resourcePrecedenceRank``: project before user, settings entries before discovery."""
        return (0 if self.scope == "project" else 2) + (0 if self.source == "local" else 1)


# -- paths ------------------------------------------------------------------------------------


def resolve_path(raw: str, base_dir: str, home: str | None = None) -> str:
    """Pi's ``resolvePath(input, baseDir, {trim})``: trimmed, ``~`` expanded, absolute."""
    text = raw.strip()
    home = home if home is not None else home_dir()
    if text == "~":
        text = home
    elif text.startswith("~/"):
        text = os.path.join(home, text[2:])
    elif text.startswith("file://"):
        text = unquote(urlparse(text).path)
    return node_resolve(base_dir, text)


def canonical(path: str) -> str:
    """``canonicalizePath``: the real path, or the path itself when it cannot be resolved."""
    try:
        return os.path.realpath(path, strict=True)
    except OSError:
        return path


def list_dir(directory: str) -> list[os.DirEntry[str]]:
    """Node's ``readdirSync`` (sorted by name, byte order); an unreadable directory is empty."""
    try:
        with os.scandir(directory) as entries:
            return sorted(entries, key=lambda e: os.fsencode(e.name))
    except OSError:
        return []


def entry_kind(entry: os.DirEntry[str]) -> tuple[bool, bool] | None:
    """``(is_dir, is_file)``, following a symlink; ``None`` for a broken symlink."""
    try:
        if entry.is_symlink():
            st = os.stat(entry.path)
            return stat.S_ISDIR(st.st_mode), stat.S_ISREG(st.st_mode)
        return entry.is_dir(follow_symlinks=False), entry.is_file(follow_symlinks=False)
    except OSError:
        return None


class IgnoreRules:
    """The ``ignore`` matcher Pi builds while walking: every ignore file's rules, prefixed with
    its directory relative to the walk's root (one matcher shared by the whole walk)."""

    def __init__(self) -> None:
        self._patterns: list[str] = []
        self._spec: pathspec.GitIgnoreSpec | None = None

    def add_dir(self, directory: str, root: str) -> None:
        relative = os.path.relpath(directory, root)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        for name in IGNORE_FILE_NAMES:
            try:
                text = read_regular(os.path.join(directory, name)).decode("utf-8", errors="replace")
            except OSError:
                continue
            for line in re.split(r"\r?\n", text):
                pattern = _prefix_ignore_pattern(line, prefix)
                if pattern:
                    self._patterns.append(pattern)
                    self._spec = None

    def ignores(self, relative: str) -> bool:
        if not self._patterns:
            return False
        if self._spec is None:
            import pathspec  # the first ignore pattern asked, not at startup (~20 ms)

            self._spec = pathspec.GitIgnoreSpec.from_lines(self._patterns)
        return self._spec.match_file(relative)


def _prefix_ignore_pattern(line: str, prefix: str) -> str | None:
    trimmed = line.strip()
    if not trimmed or (trimmed.startswith("#") and not trimmed.startswith("\\#")):
        return None
    pattern = line
    negated = False
    if pattern.startswith("!"):
        negated, pattern = True, pattern[1:]
    elif pattern.startswith("\\!"):
        pattern = pattern[1:]
    pattern = pattern.removeprefix("/")
    prefixed = prefix + pattern if prefix else pattern
    return "!" + prefixed if negated else prefixed


def relative_posix(path: str, root: str) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")


# -- collecting files ---------------------------------------------------------------------------


def collect_skill_entries(directory: str, mode: Literal["pi", "agents"]) -> list[str]:
    """``collectSkillEntries``: a folder with ``SKILL.md`` is one skill (not searched further);
    otherwise its ``*.md`` files (``pi``: the root's only; ``agents``: all but the root's) and
    its sub-folders."""
    out: list[str] = []
    if os.path.isdir(directory):
        _skill_walk(directory, mode, IgnoreRules(), directory, out)
    return out


def _skill_walk(directory: str, mode: str, ignore: IgnoreRules, root: str, out: list[str]) -> None:
    ignore.add_dir(directory, root)
    entries = list_dir(directory)
    for entry in entries:
        if entry.name != "SKILL.md":
            continue
        kind = entry_kind(entry)
        if kind is not None and kind[1] and not ignore.ignores(relative_posix(entry.path, root)):
            out.append(entry.path)
            return
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "node_modules":
            continue
        kind = entry_kind(entry)
        if kind is None:
            continue
        is_dir, is_file = kind
        relative = relative_posix(entry.path, root)
        markdown = (is_file and entry.name.endswith(".md") and not ignore.ignores(relative)
                    and ((mode == "pi" and directory == root) or (mode == "agents" and directory != root)))
        if markdown:
            out.append(entry.path)
            continue
        if not is_dir or ignore.ignores(relative + "/"):
            continue
        _skill_walk(entry.path, mode, ignore, root, out)


def collect_prompt_entries(directory: str) -> list[str]:
    """``collectAutoPromptEntries``: the ``*.md`` files directly in ``directory``."""
    out: list[str] = []
    if not os.path.isdir(directory):
        return out
    ignore = IgnoreRules()
    ignore.add_dir(directory, directory)
    for entry in list_dir(directory):
        if entry.name.startswith(".") or entry.name == "node_modules":
            continue
        kind = entry_kind(entry)
        if kind is None or ignore.ignores(relative_posix(entry.path, directory)):
            continue
        if kind[1] and entry.name.endswith(".md"):
            out.append(entry.path)
    return out


def collect_files(directory: str, suffix: str) -> list[str]:
    """``collectFiles``: every ``*<suffix>`` file under ``directory``, recursively."""
    out: list[str] = []
    if os.path.isdir(directory):
        _files_walk(directory, suffix, IgnoreRules(), directory, out)
    return out


def _files_walk(directory: str, suffix: str, ignore: IgnoreRules, root: str, out: list[str]) -> None:
    ignore.add_dir(directory, root)
    for entry in list_dir(directory):
        if entry.name.startswith(".") or entry.name == "node_modules":
            continue
        kind = entry_kind(entry)
        if kind is None:
            continue
        is_dir, is_file = kind
        relative = relative_posix(entry.path, root)
        if ignore.ignores(relative + "/" if is_dir else relative):
            continue
        if is_dir:
            _files_walk(entry.path, suffix, ignore, root, out)
        elif is_file and entry.name.endswith(suffix):
            out.append(entry.path)


def _resource_files(directory: str, kind: ResourceKind) -> list[str]:
    return collect_skill_entries(directory, "pi") if kind == "skills" else collect_files(directory, ".md")


def _files_from_paths(paths: Iterable[str], kind: ResourceKind) -> list[str]:
    out: list[str] = []
    for path in paths:
        if os.path.isfile(path):
            out.append(path)
        elif os.path.isdir(path):
            out += _resource_files(path, kind)
    return out


def ancestor_agents_skill_dirs(cwd: str) -> list[str]:
    """``.agents/skills`` of the cwd and each ancestor, up to the git repository root."""
    start = node_resolve(cwd)
    git_root = None
    current = start
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            git_root = current
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    out: list[str] = []
    current = start
    while True:
        out.append(os.path.join(current, ".agents", "skills"))
        if git_root is not None and current == git_root:
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return out


# -- patterns -------------------------------------------------------------------------------------


def _is_pattern(entry: str) -> bool:
    return entry.startswith(("!", "+", "-")) or "*" in entry or "?" in entry


def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(glob_to_regex(pattern), re.DOTALL)


def _candidates(path: str, base_dir: str) -> tuple[list[str], list[str]]:
    """What a pattern is matched against: the path relative to the base, its name, the full path;
    for a ``SKILL.md`` also its folder (relative, name, full)."""
    posix = path.replace(os.sep, "/")
    names = [relative_posix(path, base_dir), os.path.basename(path), posix]
    folder: list[str] = []
    if os.path.basename(path) == "SKILL.md":
        parent = os.path.dirname(path)
        folder = [relative_posix(parent, base_dir), os.path.basename(parent), parent.replace(os.sep, "/")]
    return names, folder


def matches_any_pattern(path: str, patterns: Sequence[str], base_dir: str) -> bool:
    names, folder = _candidates(path, base_dir)
    for pattern in patterns:
        regex = _glob(pattern.replace(os.sep, "/"))
        if any(regex.match(name) for name in names) or any(regex.match(name) for name in folder):
            return True
    return False


def _normalize_exact(pattern: str) -> str:
    return (pattern[2:] if pattern.startswith(("./", ".\\")) else pattern).replace(os.sep, "/")


def matches_any_exact_pattern(path: str, patterns: Sequence[str], base_dir: str) -> bool:
    names, folder = _candidates(path, base_dir)
    exact = [names[0], names[2], *(folder[0:1] + folder[2:3])]
    return any(_normalize_exact(pattern) in exact for pattern in patterns)


def apply_patterns(paths: Sequence[str], patterns: Sequence[str], base_dir: str) -> set[str]:
    """``applyPatterns``: plain patterns include (all when none), ``!`` excludes, ``+`` forces in,
    ``-`` forces out."""
    includes = [p for p in patterns if not p.startswith(("+", "-", "!"))]
    excludes = [p[1:] for p in patterns if p.startswith("!")]
    force_in = [p[1:] for p in patterns if p.startswith("+")]
    force_out = [p[1:] for p in patterns if p.startswith("-")]
    result = list(paths) if not includes else [p for p in paths if matches_any_pattern(p, includes, base_dir)]
    if excludes:
        result = [p for p in result if not matches_any_pattern(p, excludes, base_dir)]
    if force_in:
        result += [p for p in paths if p not in result and matches_any_exact_pattern(p, force_in, base_dir)]
    if force_out:
        result = [p for p in result if not matches_any_exact_pattern(p, force_out, base_dir)]
    return set(result)


def enabled_by_overrides(path: str, entries: Sequence[str], base_dir: str) -> bool:
    """``isEnabledByOverrides``: a settings list's ``!``/``+``/``-`` entries applied to a discovered file."""
    excludes = [p[1:] for p in entries if p.startswith("!")]
    force_in = [p[1:] for p in entries if p.startswith("+")]
    force_out = [p[1:] for p in entries if p.startswith("-")]
    enabled = True
    if excludes and matches_any_pattern(path, excludes, base_dir):
        enabled = False
    if force_in and matches_any_exact_pattern(path, force_in, base_dir):
        enabled = True
    if force_out and matches_any_exact_pattern(path, force_out, base_dir):
        enabled = False
    return enabled


# -- resolution ------------------------------------------------------------------------------------


def _entries(settings: Mapping[str, Any], kind: ResourceKind) -> list[str]:
    value = settings.get(kind)
    return [entry for entry in value if isinstance(entry, str)] if isinstance(value, list) else []


def resolve_resources(
    kind: ResourceKind,
    *,
    cwd: str,
    agent_dir: str,
    global_settings: Mapping[str, Any],
    project_settings: Mapping[str, Any],
    project_trusted: bool,
    home: str | None = None,
) -> list[Resource]:
    """The enabled skill files or prompt files of ``cwd``, in Pi's order (see the module doc)."""
    home = home if home is not None else home_dir()
    project_base = os.path.join(cwd, CONFIG_DIR_NAME)
    found: dict[str, tuple[_Meta, bool]] = {}

    def add(path: str, meta: _Meta, enabled: bool) -> None:
        if path and path not in found:
            found[path] = (meta, enabled)

    def local_entries(entries: list[str], meta: _Meta, base_dir: str) -> None:
        if not entries:
            return
        plain = [resolve_path(e, base_dir, home) for e in entries if not _is_pattern(e)]
        patterns = [e for e in entries if _is_pattern(e)]
        files = _files_from_paths(plain, kind)
        enabled = apply_patterns(files, patterns, base_dir)
        for file in files:
            add(file, meta, file in enabled)

    project_entries = _entries(project_settings, kind) if project_trusted else []
    user_entries = _entries(global_settings, kind)
    local_entries(project_entries, _Meta("local", "project", project_base), project_base)
    local_entries(user_entries, _Meta("local", "user", agent_dir), agent_dir)

    def discovered(paths: Iterable[str], meta: _Meta, overrides: list[str], base_dir: str) -> None:
        for path in paths:
            add(path, meta, enabled_by_overrides(path, overrides, base_dir))

    user_agents_skills = os.path.join(home, ".agents", "skills")
    if kind == "skills":
        if project_trusted:
            discovered(collect_skill_entries(os.path.join(project_base, "skills"), "pi"),
                       _Meta("auto", "project", project_base), project_entries, project_base)
            for directory in ancestor_agents_skill_dirs(cwd):
                if node_resolve(directory) == node_resolve(user_agents_skills):
                    continue
                agents_base = os.path.dirname(directory)
                discovered(collect_skill_entries(directory, "agents"), _Meta("auto", "project", agents_base),
                           project_entries, agents_base)
        discovered(collect_skill_entries(os.path.join(agent_dir, "skills"), "pi"),
                   _Meta("auto", "user", agent_dir), user_entries, agent_dir)
        user_agents_base = os.path.dirname(user_agents_skills)
        discovered(collect_skill_entries(user_agents_skills, "agents"), _Meta("auto", "user", user_agents_base),
                   user_entries, user_agents_base)
    else:
        if project_trusted:
            discovered(collect_prompt_entries(os.path.join(project_base, "prompts")),
                       _Meta("auto", "project", project_base), project_entries, project_base)
        discovered(collect_prompt_entries(os.path.join(agent_dir, "prompts")),
                   _Meta("auto", "user", agent_dir), user_entries, agent_dir)

    ordered = sorted(found.items(), key=lambda item: item[1][0].rank())  # stable: insertion order within a rank
    seen: set[str] = set()
    out: list[Resource] = []
    for path, (meta, enabled) in ordered:
        key = canonical(path)
        if key in seen:
            continue
        seen.add(key)
        if enabled:
            out.append(Resource(path, SourceInfo(path, meta.source, meta.scope, "top-level", meta.base_dir)))
    return out


def path_resources(kind: ResourceKind, paths: Iterable[tuple[str, SourceInfo]], base_dir: str,
                   home: str | None = None) -> list[Resource]:
    """Resources named explicitly (``--skill``/``--prompt-template``, an extension's
    ``resources_discover``): a file as it is, a directory's resource files as Pi finds them; each
    with the source info given (its ``path`` the file's). A path reached twice counts once."""
    out: list[Resource] = []
    seen: set[str] = set()
    for raw, info in paths:
        for file in _files_from_paths([resolve_path(raw, base_dir, home)], kind):
            key = canonical(file)
            if key not in seen:
                seen.add(key)
                out.append(Resource(file, attrs.evolve(info, path=file)))
    return out
