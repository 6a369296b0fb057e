"""A server's ``elicitation/create`` asked through the session's UI (``rpcd.core.values.UiContext``).

A UI that can show a whole form says so with an ``elicit(title, message, schema)`` coroutine (the
ACP front, when the editor offers elicitation): the form goes there as it is. Otherwise the form is
asked one field at a time with Pi's dialogs, as ``pi-mcp-adapter`` asks it: an enum is a
``select``, a boolean a ``select`` of Yes/No, a number or a string an ``input`` (checked, asked
again at most ``ATTEMPTS`` times); a form without fields is one ``confirm``; a URL elicitation is a
``confirm`` naming the page. Dismissing any dialog cancels the whole form (MCP ``cancel``); saying
no to a confirmation declines it (``decline``). Without a UI the server is told ``decline``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from rpcd.core.values import UiContext

ATTEMPTS: Final = 3
Answer = tuple[str, dict[str, Any] | None]
YES, NO = "Yes", "No"


def elicit_handler(server: str, ui: Callable[[], UiContext | None]) -> Callable[[str, Mapping[str, Any]],
                                                                                Awaitable[Answer]]:
    """The connection's ``ElicitHandler`` for one session's calls (``ui`` read when asked)."""

    async def handle(message: str, schema: Mapping[str, Any]) -> Answer:
        current = ui()
        if current is None:
            return "decline", None
        return await ask_form(current, server, message, schema)

    return handle


async def ask_form(ui: UiContext, server: str, message: str, schema: Mapping[str, Any]) -> Answer:
    title = f"MCP server {server} asks"
    whole_form = getattr(ui, "elicit", None)
    url = schema.get("x-rpcd-url")
    if callable(whole_form) and url is None:
        answer: Answer = await whole_form(title, message, dict(schema))
        return answer
    if isinstance(url, str):
        ok = await ui.confirm(title, f"{message}\n\nOpen: {url}")
        return ("accept", {}) if ok else ("decline", None)
    properties = schema.get("properties")
    fields = dict(properties) if isinstance(properties, Mapping) else {}
    if not fields:
        ok = await ui.confirm(title, message)
        return ("accept", {}) if ok else ("decline", None)
    required = set(schema.get("required") or ())
    content: dict[str, Any] = {}
    first = True
    for name, raw in fields.items():
        spec = raw if isinstance(raw, Mapping) else {}
        label = str(spec.get("title") or name)
        prompt = f"{title}\n{message}\n\n{label}" if first else label
        if spec.get("description"):
            prompt += f" — {spec['description']}"
        first = False
        value = await _ask_field(ui, prompt, spec, required=name in required)
        if value is _CANCEL:
            return "cancel", None
        if value is not _SKIP:
            content[name] = value
    return "accept", content


class _Marker:
    pass


_CANCEL = _Marker()
_SKIP = _Marker()


async def _ask_field(ui: UiContext, prompt: str, spec: Mapping[str, Any], *, required: bool) -> Any:
    kind = spec.get("type")
    items = spec.get("items")
    if kind == "array" and isinstance(items, Mapping) and (picks := _choices(items)) is not None:
        picked = await ui.select(prompt, [label for label, _ in picks])  # Pi's dialog picks one
        return _CANCEL if picked is None else [dict(picks).get(picked, picked)]
    choices = _choices(spec)
    if choices is not None:
        shown = [label for label, _ in choices]
        picked = await ui.select(prompt, shown)
        if picked is None:
            return _CANCEL
        return dict(choices).get(picked, picked)
    if kind == "boolean":
        picked = await ui.select(prompt, [YES, NO])
        return _CANCEL if picked is None else picked == YES
    default = spec.get("default")
    placeholder = str(default) if default is not None else None
    for _ in range(ATTEMPTS):
        text = await ui.input(prompt, placeholder)
        if text is None:
            return _CANCEL
        if text == "":
            if default is not None:
                return default
            if not required:
                return _SKIP
            prompt = f"{prompt} (required)"
            continue
        if kind in ("number", "integer"):
            number = _number(text, integer=kind == "integer")
            if number is None:
                prompt = f"{prompt} ({'a whole number' if kind == 'integer' else 'a number'})"
                continue
            return number
        return text
    return _CANCEL


def _choices(spec: Mapping[str, Any]) -> list[tuple[str, Any]] | None:
    """An enum's (label, value) pairs: ``enum`` (+ ``enumNames``) or ``oneOf``/``anyOf`` of ``const``."""
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        names = spec.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(enum) else enum
        return [(str(label), value) for label, value in zip(labels, enum, strict=True)]
    for key in ("oneOf", "anyOf"):
        options = spec.get(key)
        if isinstance(options, list) and options and all(isinstance(o, Mapping) and "const" in o for o in options):
            return [(str(o.get("title") or o["const"]), o["const"]) for o in options]
    return None


def _number(text: str, *, integer: bool) -> int | float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    if integer:
        return int(value) if value.is_integer() else None
    return int(value) if value.is_integer() else value
