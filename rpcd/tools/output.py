"""Streaming command output with bounded memory (Pi's ``output-accumulator.js``).

Raw chunks are decoded incrementally (invalid UTF-8 → U+FFFD, a leading BOM dropped, as
``TextDecoder`` does); only a decoded tail (twice the byte limit) is kept for snapshots, and
once the output outgrows the limits every raw byte goes to a temp file
(``$TMPDIR/pi-bash-<hex>.log``, 0600) whose path the result names.
"""

from __future__ import annotations

import codecs
import os
from typing import IO, Any

from rpcd.core.durable import create_temporary
from rpcd.tools.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, truncate_tail, utf8_len


def create_temp_output(prefix: str) -> tuple[str, int]:
    """A new ``$TMPDIR/<prefix>-<hex>.log`` and a descriptor open for writing: created exclusively
    (never an existing file, nor one a symbolic link planted under that name points to) and private
    (0600: the shared temp dir is readable by everyone, and a command's output may hold secrets)."""
    import tempfile

    fd, path = create_temporary(tempfile.gettempdir(), f"{prefix}-", ".log")
    return path, fd


class OutputAccumulator:
    def __init__(self, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES,
                 temp_file_prefix: str = "pi-output") -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.max_rolling_bytes = max(max_bytes * 2, 1)
        self.temp_file_prefix = temp_file_prefix
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._raw_chunks: list[bytes] = []
        self._tail = ""
        self._tail_bytes = 0
        self._tail_at_line_start = True
        self.total_raw_bytes = 0
        self.total_decoded_bytes = 0
        self._completed_lines = 0
        self.total_lines = 0
        self._current_line_bytes = 0
        self._open_line = False
        self._finished = False
        self.temp_file_path: str | None = None
        self._temp_file: IO[bytes] | None = None

    def append(self, data: bytes) -> None:
        if self._finished:
            raise RuntimeError("Cannot append to a finished output accumulator")
        self.total_raw_bytes += len(data)
        self._append_text(self._decoder.decode(data))
        if self._temp_file is not None or self._should_use_temp_file():
            self._ensure_temp_file()
            if self._temp_file is not None:
                self._temp_file.write(data)
        elif data:
            self._raw_chunks.append(data)

    def finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        self._append_text(self._decoder.decode(b"", final=True))
        if self._should_use_temp_file():
            self._ensure_temp_file()

    def snapshot(self, *, persist_if_truncated: bool = False) -> tuple[str, dict[str, Any], str | None]:
        """``(content, truncation, full_output_path)``."""
        tail = truncate_tail(self._snapshot_text(), max_lines=self.max_lines, max_bytes=self.max_bytes)
        truncated = self.total_lines > self.max_lines or self.total_decoded_bytes > self.max_bytes
        truncated_by = None
        if truncated:
            truncated_by = tail["truncatedBy"] or ("bytes" if self.total_decoded_bytes > self.max_bytes else "lines")
        truncation = dict(tail)
        truncation.update(truncated=truncated, truncatedBy=truncated_by, totalLines=self.total_lines,
                          totalBytes=self.total_decoded_bytes, maxLines=self.max_lines, maxBytes=self.max_bytes)
        if persist_if_truncated and truncated:
            self._ensure_temp_file()
        return truncation["content"], truncation, self.temp_file_path

    def close_temp_file(self) -> None:
        handle, self._temp_file = self._temp_file, None
        if handle is not None:
            handle.close()

    @property
    def last_line_bytes(self) -> int:
        return self._current_line_bytes

    def _append_text(self, text: str) -> None:
        if not text:
            return
        size = utf8_len(text)
        self.total_decoded_bytes += size
        self._tail += text
        self._tail_bytes += size
        if self._tail_bytes > self.max_rolling_bytes * 2:
            self._trim_tail()
        newlines = text.count("\n")
        if newlines == 0:
            self._current_line_bytes += size
            self._open_line = True
        else:
            self._completed_lines += newlines
            rest = text[text.rfind("\n") + 1:]
            self._current_line_bytes = utf8_len(rest)
            self._open_line = bool(rest)
        self.total_lines = self._completed_lines + (1 if self._open_line else 0)

    def _trim_tail(self) -> None:
        data = self._tail.encode("utf-8", "surrogatepass")
        if len(data) <= self.max_rolling_bytes:
            self._tail_bytes = len(data)
            return
        start = len(data) - self.max_rolling_bytes
        while start < len(data) and (data[start] & 0xC0) == 0x80:
            start += 1
        if start != 0:
            self._tail_at_line_start = data[start - 1] == 0x0A
        self._tail = data[start:].decode("utf-8", "replace")
        self._tail_bytes = utf8_len(self._tail)

    def _snapshot_text(self) -> str:
        if self._tail_at_line_start:
            return self._tail
        first = self._tail.find("\n")
        return self._tail if first == -1 else self._tail[first + 1:]

    def _should_use_temp_file(self) -> bool:
        return (self.total_raw_bytes > self.max_bytes or self.total_decoded_bytes > self.max_bytes
                or self.total_lines > self.max_lines)

    def _ensure_temp_file(self) -> None:
        if self.temp_file_path is not None:
            return
        self.temp_file_path, fd = create_temp_output(self.temp_file_prefix)
        self._temp_file = os.fdopen(fd, "wb")  # closed by close_temp_file()
        for chunk in self._raw_chunks:
            self._temp_file.write(chunk)
        self._raw_chunks = []
