"""``session/prompt``'s ``ContentBlock[]`` as one prompt for the session.

* ``text`` — as written, blocks joined without separators (editors split a message around mentions);
* ``resource_link`` — an inline mention ``[@name](uri)`` (the agent reads the file with its tools);
* ``resource`` (embedded context) — the same mention inline, and the resource's text after the
  message as ``<context ref="uri">…</context>``; a binary resource is named, not inlined;
* ``image`` — the prompt's images (``ImageInput``: base64 data and MIME type, in order): the
  session checks them (valid base64 of a PNG, JPEG, GIF or WebP matching its ``mimeType``, for a
  model that takes images) before anything is recorded; its refusal names the block
  (:func:`at_blocks`: ``$.images[0].data`` → ``$.prompt[2].data``);
* ``audio`` — refused (no model input for it).

A refusal is ``-32602`` naming the block (``$.prompt[2]``), before anything reaches the session.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

import attrs
from acp.exceptions import RequestError
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
from rpcd.core.values import ImageInput

PROMPT_METHOD = "session/prompt"
_IMAGE_REF: Final = re.compile(r"^(\$\.)?images\[(\d+)\]")
"""How the session names an image it refuses: ``$.images[0].data`` (a path), ``images[0] is …`` (a message)."""


@attrs.frozen
class Prompt:
    text: str
    images: tuple[ImageInput, ...] = ()
    """The image blocks, in order."""
    image_blocks: tuple[int, ...] = ()
    """The index in ``prompt`` of each image (``images[i]`` came from ``prompt[image_blocks[i]]``)."""


def _mention(name: str, uri: str) -> str:
    return f"[@{name}]({uri})"


def _name_of(uri: str) -> str:
    tail = uri.rstrip("/").rsplit("/", 1)[-1]
    return tail or uri


def build_prompt(blocks: Sequence[Any]) -> Prompt:
    parts: list[str] = []
    context: list[str] = []
    images: list[ImageInput] = []
    image_blocks: list[int] = []
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
            images.append(ImageInput(data=block.data, mime_type=block.mime_type))
            image_blocks.append(index)
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
    return Prompt(text, tuple(images), tuple(image_blocks))


def at_blocks(error: RequestError, prompt: Prompt) -> RequestError:
    """``error`` (the session refusing an image) naming the content block, not the host's argument:
    ``$.images[1].mimeType`` → ``$.prompt[3].mimeType`` in the paths, ``images[1]`` → ``prompt[3]`` in
    the messages. Anything else is left as it is."""

    def rename(text: str) -> str:
        found = _IMAGE_REF.match(text)
        if found is None or int(found.group(2)) >= len(prompt.image_blocks):
            return text
        return f"{found.group(1) or ''}prompt[{prompt.image_blocks[int(found.group(2))]}]{text[found.end():]}"

    data = error.data
    if not prompt.images or not isinstance(data, dict) or not isinstance(data.get("errors"), list):
        return error
    items = [{**item, **{key: rename(item[key]) for key in ("path", "message") if isinstance(item.get(key), str)}}
             if isinstance(item, dict) else item for item in data["errors"]]
    return RequestError(error.code, rename(str(error)), {**data, "errors": items})
