"""Image files for ``read``: Pi's MIME sniffing (``utils/mime.js``) and the size check of its
image pipeline (``image-process.js``), without an image codec.

Pi sends a PNG, JPEG, GIF or WebP as it is when it fits (at most 2000×2000 pixels and under
4.5 MB of base64); otherwise it re-encodes it with Photon (WASM), and a BMP is always converted
to PNG. rpcd has no image codec: an image that would need resizing or converting gets the
message Pi gives when Photon cannot do it (see ``docs/pi-compat.md``). Dimensions are read
from the file headers; a header that cannot be read is what Photon failing to decode is.
"""

from __future__ import annotations

import base64
import struct

IMAGE_SNIFF_BYTES = 4100
MAX_DIMENSION = 2000
MAX_BASE64_BYTES = int(4.5 * 1024 * 1024)
_PNG = b"\x89PNG\r\n\x1a\n"

NOT_CONVERTIBLE = "[Image omitted: could not be converted to a supported inline image format.]"
NOT_RESIZABLE = "[Image omitted: could not be resized below the inline image size limit.]"
NON_VISION_NOTE = "[Current model does not support images. The image will be omitted from this request.]"


def _u32be(data: bytes, offset: int) -> int:
    chunk = data[offset:offset + 4].ljust(4, b"\0")
    return int(struct.unpack(">I", chunk)[0])


def _u32le(data: bytes, offset: int) -> int:
    chunk = data[offset:offset + 4].ljust(4, b"\0")
    return int(struct.unpack("<I", chunk)[0])


def _u16le(data: bytes, offset: int) -> int:
    chunk = data[offset:offset + 2].ljust(2, b"\0")
    return int(struct.unpack("<H", chunk)[0])


def _is_png(data: bytes) -> bool:
    return len(data) >= 16 and _u32be(data, 8) == 13 and data[12:16] == b"IHDR"


def _is_animated_png(data: bytes) -> bool:
    offset = len(_PNG)
    while offset + 8 <= len(data):
        length = _u32be(data, offset)
        kind = data[offset + 4:offset + 8]
        if kind == b"acTL":
            return True
        if kind == b"IDAT":
            return False
        nxt = offset + 8 + length + 4
        if nxt <= offset or nxt > len(data):
            return False
        offset = nxt
    return False


def _is_bmp(data: bytes) -> bool:
    if len(data) < 26:
        return False
    declared = _u32le(data, 2)
    pixel_offset = _u32le(data, 10)
    dib = _u32le(data, 14)
    if declared != 0 and declared < 26:
        return False
    if pixel_offset < 14 + dib:
        return False
    if declared != 0 and pixel_offset >= declared:
        return False
    if dib == 12:
        planes, bits = _u16le(data, 22), _u16le(data, 24)
    elif 40 <= dib <= 124:
        if len(data) < 30:
            return False
        planes, bits = _u16le(data, 26), _u16le(data, 28)
    else:
        return False
    return planes == 1 and bits in (1, 4, 8, 16, 24, 32)


def detect_image_mime(head: bytes) -> str | None:
    """``detectSupportedImageMimeType`` over the first bytes of a file."""
    if head.startswith(b"\xff\xd8\xff"):
        return None if len(head) > 3 and head[3] == 0xF7 else "image/jpeg"
    if head.startswith(_PNG):
        return "image/png" if _is_png(head) and not _is_animated_png(head) else None
    if head.startswith(b"GIF"):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"BM") and _is_bmp(head):
        return "image/bmp"
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    offset = 2
    while offset + 4 <= len(data):
        if data[offset] != 0xFF:
            return None
        marker = data[offset + 1]
        if marker == 0xFF:
            offset += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            offset += 2
            continue
        length = int.from_bytes(data[offset + 2:offset + 4], "big")
        if length < 2:
            return None
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            if offset + 9 > len(data):
                return None
            height = int.from_bytes(data[offset + 5:offset + 7], "big")
            width = int.from_bytes(data[offset + 7:offset + 9], "big")
            return (width, height) if width and height else None
        offset += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        return _u16le(data, 26) & 0x3FFF, _u16le(data, 28) & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = _u32le(data, 21)
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        width = 1 + int.from_bytes(data[24:27], "little")
        height = 1 + int.from_bytes(data[27:30], "little")
        return width, height
    return None


def image_size(data: bytes, mime: str) -> tuple[int, int] | None:
    """``(width, height)`` from the header, or ``None`` when it cannot be read."""
    if mime == "image/png" and _is_png(data) and len(data) >= 24:
        return _u32be(data, 16), _u32be(data, 20)
    if mime == "image/gif" and len(data) >= 10:
        width, height = _u16le(data, 6), _u16le(data, 8)
        return (width, height) if width and height else None
    if mime == "image/jpeg":
        return _jpeg_size(data)
    if mime == "image/webp":
        return _webp_size(data)
    return None


def image_content(data: bytes, mime: str, *, auto_resize: bool, supports_images: bool | None) -> list[dict[str, str]]:
    """The ``content`` of reading an image file, as Pi builds it."""
    note = NON_VISION_NOTE if supports_images is False else None
    encoded_size = (len(data) + 2) // 3 * 4
    failure: str | None = None
    if mime == "image/bmp":
        failure = NOT_CONVERTIBLE
    elif auto_resize:
        size = image_size(data, mime)
        if size is None or size[0] > MAX_DIMENSION or size[1] > MAX_DIMENSION or encoded_size >= MAX_BASE64_BYTES:
            failure = NOT_RESIZABLE
    if failure is not None:
        text = f"Read image file [{mime}]\n{failure}"
        if note:
            text += f"\n{note}"
        return [{"type": "text", "text": text}]
    text = f"Read image file [{mime}]"
    if note:
        text += f"\n{note}"
    return [{"type": "text", "text": text},
            {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime}]
