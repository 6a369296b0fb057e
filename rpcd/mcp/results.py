"""MCP content as Pi's tool content (text and images), bounded as Pi bounds tool output.

A ``tools/call`` result, a ``resources/read`` result or a prompt's messages can hold text, images,
audio, links to resources and embedded resources (text or binary). Pi's tool results hold text and
images only, so: text stays text; an image stays an image (when it is a picture type Pi's providers
take and not larger than ``IMAGE_LIMIT``); everything else becomes a line of text that says what it
was. The text of one result is cut as Pi cuts a ``read`` (the head: 2000 lines or 50 KB, whichever
comes first) with a note saying how much was left out; ``structuredContent`` goes to ``details``
when it is small, and becomes the text when the server sent no content blocks.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from rpcd.tools.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_head, utf8_len

IMAGE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
IMAGE_LIMIT: Final = 5 * 1024 * 1024
"""Decoded bytes an image may have to be passed on (larger: a note)."""
DETAILS_LIMIT: Final = 16 * 1024
"""Bytes of ``structuredContent`` JSON kept in ``details`` (larger: only its size)."""


def convert_blocks(blocks: Sequence[Any]) -> list[dict[str, Any]]:
    """SDK content blocks (pydantic models or plain dicts) as Pi content, unbounded."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        item = block.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(block, "model_dump") \
            else dict(block) if isinstance(block, Mapping) else {}
        out.append(_convert(item))
    return out


def _convert(item: Mapping[str, Any]) -> dict[str, Any]:
    kind = item.get("type")
    if kind == "text":
        return _text(str(item.get("text", "")))
    if kind == "image":
        mime = str(item.get("mimeType", ""))
        data = str(item.get("data", ""))
        size = _decoded_size(data)
        if mime in IMAGE_TYPES and size is not None and size <= IMAGE_LIMIT:
            return {"type": "image", "data": data, "mimeType": mime}
        why = "too large" if size is not None and size > IMAGE_LIMIT else "not a picture type Pi passes on"
        return _text(f"[image: {mime or 'unknown type'}, {format_size(size or 0)}, not shown: {why}]")
    if kind == "audio":
        size = _decoded_size(str(item.get("data", "")))
        return _text(f"[audio: {item.get('mimeType') or 'unknown type'}, {format_size(size or 0)}, not shown]")
    if kind == "resource_link":
        parts = [str(item.get("uri", ""))]
        if item.get("name"):
            parts.append(f"({item['name']})")
        if item.get("mimeType"):
            parts.append(str(item["mimeType"]))
        if item.get("description"):
            parts.append(f"- {item['description']}")
        return _text(f"[resource link: {' '.join(parts)}]")
    if kind == "resource":
        resource = item.get("resource")
        return resource_content(resource if isinstance(resource, Mapping) else {})
    return _text(f"[{kind or 'unknown'} content not shown]")


def resource_content(resource: Mapping[str, Any]) -> dict[str, Any]:
    """One ``TextResourceContents`` / ``BlobResourceContents`` as Pi content."""
    uri = str(resource.get("uri", ""))
    mime = resource.get("mimeType")
    if "text" in resource:
        return _text(f"[resource {uri}]\n{resource.get('text', '')}")
    blob = str(resource.get("blob", ""))
    if isinstance(mime, str) and mime in IMAGE_TYPES:
        size = _decoded_size(blob)
        if size is not None and size <= IMAGE_LIMIT:
            return {"type": "image", "data": blob, "mimeType": mime}
    size = _decoded_size(blob)
    return _text(f"[resource {uri}: {mime or 'binary data'}, {format_size(size or 0)}, not shown]")


def bounded(content: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """``content`` with its text cut to Pi's limits; the truncation facts when something was cut."""
    texts = [block["text"] for block in content if block.get("type") == "text"]
    total = "\n".join(texts)
    if utf8_len(total) <= DEFAULT_MAX_BYTES and total.count("\n") < DEFAULT_MAX_LINES:
        return content, None
    truncation = truncate_head(total)
    kept = truncation["content"]
    if truncation["firstLineExceedsLimit"]:
        kept = total.encode("utf-8")[:DEFAULT_MAX_BYTES].decode("utf-8", "ignore")
    note = (f"\n\n[Output truncated: {truncation['outputLines']} of {truncation['totalLines']} lines "
            f"({format_size(utf8_len(kept))} of {format_size(truncation['totalBytes'])}) shown; "
            f"the rest of the MCP result was not kept]")
    images = [block for block in content if block.get("type") != "text"]
    return [_text(kept + note), *images], {key: truncation[key] for key in truncation if key != "content"}


def tool_result(result: Any, *, server: str, tool: str) -> dict[str, Any]:
    """A ``CallToolResult`` as the seam's ``{content, details, isError}``."""
    blocks = convert_blocks(getattr(result, "content", None) or [])
    structured = getattr(result, "structuredContent", None)
    details: dict[str, Any] = {"server": server, "tool": tool}
    if structured is not None:
        text = json.dumps(structured, ensure_ascii=False, indent=2)
        if not blocks:
            blocks = [_text(text)]
        if utf8_len(text) <= DETAILS_LIMIT:
            details["structuredContent"] = structured
        else:
            details["structuredContentBytes"] = utf8_len(text)
    content, truncation = bounded(blocks)
    if truncation is not None:
        details["truncation"] = truncation
    out: dict[str, Any] = {"content": content, "details": details}
    if getattr(result, "isError", False):
        out["isError"] = True
    return out


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _decoded_size(data: str) -> int | None:
    try:
        return len(base64.b64decode(data, validate=False)) if len(data) < 4 * IMAGE_LIMIT else (len(data) * 3) // 4
    except (binascii.Error, ValueError):
        return None
