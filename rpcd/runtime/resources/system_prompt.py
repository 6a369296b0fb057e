"""The system prompt, as Pi 0.85.0's ``buildSystemPrompt`` (``core/system-prompt.js``) writes it.

The active tools with their one-line snippets, the guidelines that follow from which tools are
active plus each tool's own, the project's context files, ``APPEND_SYSTEM.md``, and the cwd;
``SYSTEM.md`` replaces the default text but keeps the rest. One deliberate difference: Pi's
"Pi documentation" block (paths into Pi's npm package) is left out — rpcd ships no Pi docs to
read (``docs/pi-compat.md``). Skills are not loaded by rpcd yet, so none are listed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from rpcd.runtime.resources.skills import Skill, format_skills_for_prompt

DEFAULT_TOOLS = ("read", "bash", "edit", "write")
_WHITESPACE = re.compile(r"\s+")
_NEWLINES = re.compile(r"[\r\n]+")


class ContextFileLike(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def content(self) -> str: ...


def normalize_snippet(text: str | None) -> str | None:
    """``_normalizePromptSnippet``: one line, single spaces, or ``None``."""
    if not text:
        return None
    one_line = _WHITESPACE.sub(" ", _NEWLINES.sub(" ", text)).strip()
    return one_line or None


def normalize_guidelines(guidelines: Sequence[str]) -> list[str]:
    """``_normalizePromptGuidelines``: trimmed, non-empty, each once."""
    out: list[str] = []
    for guideline in guidelines:
        text = guideline.strip()
        if text and text not in out:
            out.append(text)
    return out


def _context_section(context_files: Sequence[ContextFileLike]) -> str:
    if not context_files:
        return ""
    out = "\n\n<project_context>\n\nProject-specific instructions and guidelines:\n\n"
    for file in context_files:
        out += f'<project_instructions path="{file.path}">\n{file.content}\n</project_instructions>\n\n'
    return out + "</project_context>\n"


def build_system_prompt(
    *,
    cwd: str,
    selected_tools: Sequence[str] | None,
    tool_snippets: Mapping[str, str],
    prompt_guidelines: Sequence[str] = (),
    custom_prompt: str | None = None,
    append_system_prompt: str | None = None,
    context_files: Sequence[ContextFileLike] = (),
    skills: Sequence[Skill] = (),
) -> str:
    prompt_cwd = cwd.replace("\\", "/")
    append_section = f"\n\n{append_system_prompt}" if append_system_prompt else ""
    tools = list(selected_tools) if selected_tools is not None else list(DEFAULT_TOOLS)
    read_tool = next((name for name in ("read", "bash") if name in tools), None)
    skills_section = format_skills_for_prompt(skills, read_tool) if read_tool is not None and skills else ""
    if custom_prompt:
        prompt = custom_prompt + append_section + _context_section(context_files) + skills_section
        return prompt + f"\nCurrent working directory: {prompt_cwd}\n"

    visible = [name for name in tools if tool_snippets.get(name)]
    tools_list = "\n".join(f"- {name}: {tool_snippets[name]}" for name in visible) if visible else "(none)"
    guidelines: list[str] = []

    def add(guideline: str) -> None:
        if guideline not in guidelines:
            guidelines.append(guideline)

    has_bash = "bash" in tools
    has_powershell = "powershell" in tools
    explores = any(name in tools for name in ("grep", "find", "ls"))
    if (has_bash or has_powershell) and not explores:
        if has_bash and has_powershell:
            add("Use bash or PowerShell for file operations like listing, searching, and finding files")
        elif has_powershell:
            add("Use PowerShell for file operations like listing, searching, and finding files")
        else:
            add("Use bash for file operations like ls, rg, find")
    for guideline in prompt_guidelines:
        text = guideline.strip()
        if text:
            add(text)
    add("Be concise in your responses")
    add("Show file paths clearly when working with files")
    guideline_text = "\n".join(f"- {g}" for g in guidelines)
    prompt = (
        "You are an expert coding assistant operating inside pi, a coding agent harness. You help users by reading "
        "files, executing commands, editing code, and writing new files.\n\n"
        f"Available tools:\n{tools_list}\n\n"
        "In addition to the tools above, you may have access to other custom tools depending on the project.\n\n"
        f"Guidelines:\n{guideline_text}"
    )
    prompt += append_section + _context_section(context_files) + skills_section
    return prompt + f"\nCurrent working directory: {prompt_cwd}"
