"""What a prompt's text may invoke, in Pi 0.85.0's order (``agent-session.js`` ``prompt``):

1. ``/name args`` of an **extension command** runs the command at once (even while a turn
   streams) and no turn starts; a command that raises is reported as an ``extension_error``
   (``extensionPath: "command:<name>"``, ``event: "command"``) and the session goes on;
2. otherwise ``/skill:name args`` expands to the skill's ``<skill>`` block (+ the arguments);
3. then ``/template args`` expands to the prompt template's body with the arguments put in.

``steer``/``followUp`` expand the same way but refuse an extension command (it cannot be
queued). ``list_commands`` is ``getCommands``: extension commands, templates, then skills.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rpcd.core.errors import InvalidArgumentError
from rpcd.core.values import CommandInfo, CommandRan, ExtensionError
from rpcd.runtime.resources.prompt_templates import PromptTemplate, expand_prompt_template
from rpcd.runtime.resources.skills import Skill, SkillReadError, expand_skill_command

__all__ = ["command_to_wire", "expand_input", "list_commands", "refuse_queued_command", "run_extension_command"]


def _split(text: str) -> tuple[str, str]:
    """Pi's command split: the name up to the first space, the rest (untrimmed) after it."""
    space = text.find(" ")
    return (text[1:], "") if space == -1 else (text[1:space], text[space + 1 :])


async def run_extension_command(runner: Any, text: str) -> CommandRan | None:
    """Run ``/name args`` if ``name`` is an extension command; ``None`` when it is not one."""
    if runner is None or not text.startswith("/"):
        return None
    name, args = _split(text)
    command = runner.get_command(name)
    if command is None:
        return None
    await runner.run_command(command, args)
    return CommandRan(command.invocation_name)


def refuse_queued_command(runner: Any, text: str) -> None:
    """Pi's ``_throwIfExtensionCommand`` for steer/followUp."""
    if runner is None or not text.startswith("/"):
        return
    name, _ = _split(text)
    if runner.get_command(name) is not None:
        raise InvalidArgumentError(
            f'Extension command "/{name}" cannot be queued. Use prompt() or execute the command when not streaming.',
            param="text",
        )


def expand_input(
    text: str,
    *,
    skills: Sequence[Skill],
    templates: Sequence[PromptTemplate],
    on_error: Callable[[ExtensionError], None],
) -> str:
    """Skill command, then prompt template (a skill that cannot be read: reported, text kept)."""
    try:
        expanded = expand_skill_command(text, skills)
    except SkillReadError as exc:
        on_error(ExtensionError(exc.skill.file_path, "skill_expansion", str(exc)))
        expanded = text
    return expand_prompt_template(expanded, templates)


def list_commands(runner: Any, *, templates: Sequence[PromptTemplate], skills: Sequence[Skill]) -> list[CommandInfo]:
    out: list[CommandInfo] = []
    if runner is not None:
        for command in runner.resolve_commands():
            definition = command.definition
            out.append(CommandInfo(
                name=command.invocation_name,
                source="extension",
                source_info=dict(runner.source_info(definition.extension_path)),
                description=definition.description,
                argument_hint=definition.argument_hint,
            ))
    for template in templates:
        out.append(CommandInfo(
            name=template.name,
            source="prompt",
            source_info=template.source_info.to_wire(),
            description=template.description,
            argument_hint=template.argument_hint,
        ))
    for skill in skills:
        out.append(CommandInfo(
            name=f"skill:{skill.name}",
            source="skill",
            source_info=skill.source_info.to_wire(),
            description=skill.description,
        ))
    return out


def command_to_wire(info: CommandInfo) -> dict[str, Any]:
    """A command as ``getCommands`` and ``commands_changed`` carry it (Pi's ``get_commands`` entry
    plus ``argumentHint``)."""
    out: dict[str, Any] = {"name": info.name, "source": info.source, "sourceInfo": dict(info.source_info)}
    if info.description is not None:
        out["description"] = info.description
    if info.argument_hint is not None:
        out["argumentHint"] = info.argument_hint
    return out
