"""``session/prompt``'s ``ContentBlock[]`` as one prompt for the session.

* ``text`` — as written, blocks joined without separators (editors split a message around mentions);
* ``resource_link`` — an inline mention ``[@name](uri)`` (the agent reads the file with its tools);
* ``resource`` (embedded context) — the same mention inline, and the resource's text after the
  message as ``<context ref="uri">…</context>``; a binary resource is named, not inlined;
* ``image`` — refused while the host takes text only (``promptCapabilities.image`` is ``false``);
* ``audio`` — refused (no model input for it).

A refusal is ``-32602`` naming the block (``$.prompt[2]``), before anything reaches the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from rpcd.acp.errors import invalid_params

PROMPT_METHOD = "session/prompt"


@attrs.frozen
class Prompt:
    text: str
    images: tuple[tuple[str, str], ...] = ()
    """``(mimeType, base64 data)`` of each image, in order (only when images are accepted)."""


def _mention(name: str, uri: str) -> str:
    return f"[@{name}]({uri})"


def _name_of(uri: str) -> str:
    tail = uri.rstrip("/").rsplit("/", 1)[-1]
    return tail or uri


def build_prompt(blocks: Sequence[Any], *, accept_images: bool) -> Prompt:
    parts: list[str] = []
    context: list[str] = []
    images: list[tuple[str, str]] = []
    refused: list[dict[str, str]] = []
    for index, block in enumerate(blocks):
        where = f"$.prompt[{index}]"
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(_mention(block.name or _name_of(block.uri), block.uri))
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            parts.append(_mention(_name_of(resource.uri), resource.uri))
            if isinstance(resource, TextResourceContents):
                context.append(f'<context ref="{resource.uri}">\n{resource.text}\n</context>')
            elif isinstance(resource, BlobResourceContents):
                mime = resource.mime_type or "application/octet-stream"
                context.append(f'<context ref="{resource.uri}">(binary {mime} content, not included)</context>')
        elif isinstance(block, ImageContentBlock):
            if accept_images:
                images.append((block.mime_type, block.data))
            else:
                refused.append({"path": where, "message": "image input is not supported (promptCapabilities.image "
                                                          "is false)"})
        elif isinstance(block, AudioContentBlock):
            refused.append({"path": where, "message": "audio input is not supported (promptCapabilities.audio "
                                                      "is false)"})
        else:
            refused.append({"path": where, "message": f"unsupported content block {type(block).__name__}"})
    if refused:
        raise invalid_params(PROMPT_METHOD, refused)
    text = "".join(parts)
    if context:
        text = "\n\n".join([text, *context]) if text else "\n\n".join(context)
    return Prompt(text, tuple(images))
