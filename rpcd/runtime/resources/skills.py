"""Skills as Pi 0.85.0 loads, lists and expands them (``core/skills.js``, ``agent-session.js``).

A skill is a Markdown file with frontmatter — a folder's ``SKILL.md``, or a loose ``*.md`` where
Pi discovers those (``rpcd.runtime.resources.discovery``). Validation follows the Agent Skills standard as
Pi applies it: most problems are warnings and the skill still loads (a name longer than 64
characters, outside ``a-z0-9-``, with a leading/trailing/double hyphen; a description longer than
1024 characters); a ``SKILL.md`` that cannot be read or parsed, or has no description, is a
warning and is not loaded; a loose ``*.md`` without a description is no skill at all (silently).
The name defaults to the folder's name. The first skill of a name wins; later ones are collision
warnings. Nothing here ever raises for a broken file.

The system prompt lists the skills the model may load (``format_skills_for_prompt``: the
``<available_skills>`` XML, without ``disable-model-invocation`` ones), and ``/skill:name args``
expands to the skill's body in a ``<skill>`` block (``expand_skill_command``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

import attrs

from rpcd.core.files import read_regular
from rpcd.core.jstext import js_length, js_trim
from rpcd.core.values import Diagnostic
from rpcd.runtime.resources.discovery import Resource, SourceInfo, canonical
from rpcd.runtime.resources.frontmatter import FrontmatterError, parse_frontmatter

__all__ = [
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "SKILL_COMMAND_PREFIX",
    "Skill",
    "SkillReadError",
    "expand_skill_command",
    "format_skills_for_prompt",
    "load_skills",
]

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
SKILL_COMMAND_PREFIX = "/skill:"
_NAME = re.compile(r"[a-z0-9-]+")


@attrs.frozen
class Skill:
    name: str
    description: str
    file_path: str
    base_dir: str
    """The skill's folder: relative references in it resolve against this."""
    source_info: SourceInfo
    disable_model_invocation: bool = False


class SkillReadError(Exception):
    """The skill's file could not be read (or parsed) when ``/skill:name`` was expanded."""

    def __init__(self, skill: Skill, message: str) -> None:
        super().__init__(message)
        self.skill = skill


def _read_text(path: str) -> str:
    return read_regular(path).decode("utf-8", errors="replace")


def _os_message(exc: OSError, path: str) -> str:
    return f"{exc.strerror or type(exc).__name__}: {path}"


def validate_name(name: str) -> list[str]:
    errors: list[str] = []
    if js_length(name) > MAX_NAME_LENGTH:
        errors.append(f"name exceeds {MAX_NAME_LENGTH} characters ({js_length(name)})")
    if not _NAME.fullmatch(name):
        errors.append("name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)")
    if name.startswith("-") or name.endswith("-"):
        errors.append("name must not start or end with a hyphen")
    if "--" in name:
        errors.append("name must not contain consecutive hyphens")
    return errors


def validate_description(description: object) -> list[str]:
    if not isinstance(description, str) or js_trim(description) == "":
        return ["description is required"]
    if js_length(description) > MAX_DESCRIPTION_LENGTH:
        return [f"description exceeds {MAX_DESCRIPTION_LENGTH} characters ({js_length(description)})"]
    return []


def _warning(message: str, path: str) -> Diagnostic:
    return Diagnostic("warning", f"Skill {path}: {message}")


def load_skill_file(path: str, info: SourceInfo) -> tuple[Skill | None, list[Diagnostic]]:
    """``loadSkillFromFile``: the skill (or ``None``) and its warnings."""
    declared = os.path.basename(path) == "SKILL.md"
    try:
        content = _read_text(path)
    except OSError as exc:
        return None, [_warning(_os_message(exc, path), path)]
    try:
        frontmatter = parse_frontmatter(content).data
    except FrontmatterError as exc:
        return None, [_warning(str(exc), path)] if declared else []
    description = frontmatter.get("description")
    has_description = isinstance(description, str) and js_trim(description) != ""
    if not declared and not has_description:
        return None, []
    diagnostics = [_warning(error, path) for error in validate_description(description)]
    skill_dir = os.path.dirname(path)
    given = frontmatter.get("name")
    name = given if isinstance(given, str) and given else os.path.basename(skill_dir)
    diagnostics += [_warning(error, path) for error in validate_name(name)]
    if not has_description:
        return None, diagnostics
    assert isinstance(description, str)
    skill = Skill(
        name=name,
        description=description,
        file_path=path,
        base_dir=skill_dir,
        source_info=attrs.evolve(info, path=path),
        disable_model_invocation=frontmatter.get("disable-model-invocation") is True,
    )
    return skill, diagnostics


def load_skills(resources: Sequence[Resource]) -> tuple[list[Skill], list[Diagnostic]]:
    """``loadSkills`` over the resolved skill files: the skills in order, the first of a name
    winning, then the warnings (collisions last, as in Pi)."""
    skills: dict[str, Skill] = {}
    real_paths: set[str] = set()
    diagnostics: list[Diagnostic] = []
    collisions: list[Diagnostic] = []
    for resource in resources:
        if not resource.path.endswith(".md"):
            diagnostics.append(_warning("skill path is not a markdown file", resource.path))
            continue
        skill, found = load_skill_file(resource.path, resource.info)
        diagnostics += found
        if skill is None:
            continue
        real = canonical(skill.file_path)
        if real in real_paths:
            continue
        winner = skills.get(skill.name)
        if winner is not None:
            collisions.append(Diagnostic(
                "warning",
                f'Skill name "{skill.name}" collision: keeping {winner.file_path}, ignoring {skill.file_path}',
            ))
            continue
        skills[skill.name] = skill
        real_paths.add(real)
    return list(skills.values()), diagnostics + collisions


def _escape_xml(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
            .replace("'", "&apos;"))


def format_skills_for_prompt(skills: Sequence[Skill], file_read_tool: str = "read") -> str:
    """``formatSkillsForPrompt``: the skills section of the system prompt ("" without visible skills)."""
    visible = [skill for skill in skills if not skill.disable_model_invocation]
    if not visible:
        return ""
    how = (
        "Use the read tool to load a skill's file when the task matches its description."
        if file_read_tool == "read"
        else "Use bash to load a skill's file when the task matches its description."
    )
    lines = [
        "\n\nThe following skills provide specialized instructions for specific tasks.",
        how,
        "When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md "
        "/ dirname of the path) and use that absolute path in tool commands.",
        "",
        "<available_skills>",
    ]
    for skill in visible:
        lines += [
            "  <skill>",
            f"    <name>{_escape_xml(skill.name)}</name>",
            f"    <description>{_escape_xml(skill.description)}</description>",
            f"    <location>{_escape_xml(skill.file_path)}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


def find_skill_command(text: str, skills: Sequence[Skill]) -> tuple[Skill, str] | None:
    """``/skill:name args`` → the skill and the trimmed arguments (split at the first space, as Pi)."""
    if not text.startswith(SKILL_COMMAND_PREFIX):
        return None
    space = text.find(" ")
    name = text[len(SKILL_COMMAND_PREFIX):] if space == -1 else text[len(SKILL_COMMAND_PREFIX):space]
    args = "" if space == -1 else js_trim(text[space + 1 :])
    skill = next((s for s in skills if s.name == name), None)
    return None if skill is None else (skill, args)


def expand_skill_command(text: str, skills: Sequence[Skill]) -> str:
    """Pi's ``_expandSkillCommand``: the skill's body (read now, frontmatter stripped) in a
    ``<skill>`` block, then the arguments; any other text unchanged. Raises
    :class:`SkillReadError` when the file cannot be read — the caller reports it and keeps the text."""
    found = find_skill_command(text, skills)
    if found is None:
        return text
    skill, args = found
    try:
        body = js_trim(parse_frontmatter(_read_text(skill.file_path)).body)
    except OSError as exc:
        raise SkillReadError(skill, _os_message(exc, skill.file_path)) from exc
    except FrontmatterError as exc:
        raise SkillReadError(skill, str(exc)) from exc
    block = (f'<skill name="{skill.name}" location="{skill.file_path}">\n'
             f"References are relative to {skill.base_dir}.\n\n{body}\n</skill>")
    return f"{block}\n\n{args}" if args else block
