"""Prompt templates as Pi 0.85.0 loads and expands them (``core/prompt-templates.js``).

A template is a Markdown file; its name is the file name without ``.md`` (``review.md`` is
``/review``). Frontmatter gives ``description`` (else the first non-empty body line, cut at 60
characters with ``...``) and ``argument-hint``. A file that cannot be read or whose frontmatter
is malformed is skipped silently, as in Pi; two templates of one name: the first wins, the others
are collision warnings.

``/name args`` expands to the template body with Pi's argument rules (``substitute_args``):
``$1``..``$N``, ``$@`` / ``$ARGUMENTS`` (all, space-joined), ``${N:-default}``,
``${@:-default}``, ``${@:N}`` and ``${@:N:L}`` (bash-style slices); arguments split like a shell
line (``"two words"``, ``'x y'``), and what they contain is never substituted again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

import attrs

from rpcd.core.files import read_regular
from rpcd.core.jstext import JS_WHITESPACE, is_js_space, js_length, js_slice, js_trim
from rpcd.core.values import Diagnostic
from rpcd.runtime.resources.discovery import Resource, SourceInfo
from rpcd.runtime.resources.frontmatter import FrontmatterError, parse_frontmatter

__all__ = ["PromptTemplate", "expand_prompt_template", "load_prompt_templates", "parse_command_args",
           "substitute_args"]

DESCRIPTION_LIMIT = 60
_SPACE_CLASS = "[" + re.escape(JS_WHITESPACE) + "]"
_COMMAND = re.compile(r"^/([^" + re.escape(JS_WHITESPACE) + r"]+)(?:" + _SPACE_CLASS + r"+(.*))?\Z", re.DOTALL)
_PLACEHOLDER = re.compile(r"\$\{([0-9]+|ARGUMENTS|@):-([^}]*)\}|\$\{@:([0-9]+)(?::([0-9]+))?\}|\$(ARGUMENTS|@|[0-9]+)")


@attrs.frozen
class PromptTemplate:
    name: str
    description: str
    content: str
    file_path: str
    source_info: SourceInfo
    argument_hint: str | None = None


def parse_command_args(text: str) -> list[str]:
    """``parseCommandArgs``: whitespace separates, ``"..."`` and ``'...'`` group (quotes dropped)."""
    args: list[str] = []
    current = ""
    quote: str | None = None
    for char in text:
        if quote is not None:
            if char == quote:
                quote = None
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif is_js_space(char):
            if current:
                args.append(current)
                current = ""
        else:
            current += char
    if current:
        args.append(current)
    return args


def _arg(args: Sequence[str], number: str) -> str | None:
    index = int(number) - 1
    return args[index] if 0 <= index < len(args) else None


def substitute_args(content: str, args: Sequence[str]) -> str:
    """``substituteArgs``: one pass over the template; the values put in are not scanned again."""
    everything = " ".join(args)

    def replace(match: re.Match[str]) -> str:
        default_target, default_value, slice_start, slice_length, simple = match.groups()
        if default_target is not None:
            value = everything if default_target in ("@", "ARGUMENTS") else _arg(args, default_target)
            return value if value else default_value
        if slice_start is not None:
            start = max(int(slice_start) - 1, 0)
            if slice_length is not None:
                return " ".join(args[start : start + int(slice_length)])
            return " ".join(args[start:])
        if simple in ("ARGUMENTS", "@"):
            return everything
        return _arg(args, simple) or ""

    return _PLACEHOLDER.sub(replace, content)


def split_command(text: str) -> tuple[str, str] | None:
    """``/name rest`` → ``(name, rest)`` (Pi's ``^\\/([^\\s]+)(?:\\s+([\\s\\S]*))?$``)."""
    match = _COMMAND.match(text)
    if match is None:
        return None
    return match.group(1), match.group(2) or ""


def expand_prompt_template(text: str, templates: Sequence[PromptTemplate]) -> str:
    """``expandPromptTemplate``: ``/name args`` of a known template → its expanded body; any other
    text unchanged."""
    if not text.startswith("/"):
        return text
    parts = split_command(text)
    if parts is None:
        return text
    name, rest = parts
    template = next((t for t in templates if t.name == name), None)
    if template is None:
        return text
    return substitute_args(template.content, parse_command_args(rest))


def load_template_file(path: str, info: SourceInfo) -> PromptTemplate | None:
    """``loadTemplateFromFile``; ``None`` when it cannot be read or parsed (Pi skips it silently)."""
    try:
        parsed = parse_frontmatter(read_regular(path).decode("utf-8", errors="replace"))
    except (OSError, FrontmatterError):
        return None
    description = _description_text(parsed.data.get("description"))
    if not description:
        first = next((line for line in parsed.body.split("\n") if js_trim(line)), None)
        if first is not None:
            description = js_slice(first, DESCRIPTION_LIMIT) + ("..." if js_length(first) > DESCRIPTION_LIMIT else "")
    hint = parsed.data.get("argument-hint")
    return PromptTemplate(
        name=os.path.basename(path).removesuffix(".md"),
        description=description,
        content=parsed.body,
        file_path=path,
        source_info=attrs.evolve(info, path=path),
        argument_hint=_description_text(hint) or None,
    )


def _description_text(value: object) -> str:
    """A frontmatter value used as text (Pi uses it as given when truthy)."""
    if value is None or value is False or value == "" or value == 0:
        return ""
    if value is True:
        return "true"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else str(value)


def _templates_in_dir(directory: str, info: SourceInfo) -> list[PromptTemplate]:
    """``loadTemplatesFromDir``: ``*.md`` directly in ``directory`` (symlinks followed)."""
    out: list[PromptTemplate] = []
    try:
        names = sorted(os.listdir(directory), key=os.fsencode)
    except OSError:
        return out
    for name in names:
        path = os.path.join(directory, name)
        if name.endswith(".md") and os.path.isfile(path):
            template = load_template_file(path, info)
            if template is not None:
                out.append(template)
    return out


def load_prompt_templates(resources: Sequence[Resource]) -> tuple[list[PromptTemplate], list[Diagnostic]]:
    """The templates of the resolved prompt files, in order; the first of a name wins."""
    loaded: list[PromptTemplate] = []
    for resource in resources:
        if os.path.isdir(resource.path):
            loaded += _templates_in_dir(resource.path, resource.info)
        elif os.path.isfile(resource.path) and resource.path.endswith(".md"):
            template = load_template_file(resource.path, resource.info)
            if template is not None:
                loaded.append(template)
    seen: dict[str, PromptTemplate] = {}
    diagnostics: list[Diagnostic] = []
    for template in loaded:
        winner = seen.get(template.name)
        if winner is not None:
            diagnostics.append(Diagnostic(
                "warning",
                f'Prompt template name "/{template.name}" collision: keeping {winner.file_path}, '
                f"ignoring {template.file_path}",
            ))
            continue
        seen[template.name] = template
    return list(seen.values()), diagnostics
