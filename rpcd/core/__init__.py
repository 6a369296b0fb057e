"""The shared vocabulary every room may import: typed failures (``errors``), the value types the
rooms exchange (``values``), secret redaction (``redact``), durable-write helpers (``durable``),
the one JSON encoding of files and wire (``codec``), safe opening of files (``files``) and the
progress reporter of long operations (``progress``).

Doors: imports nothing of rpcd outside ``rpcd.core`` (third-party: attrs and orjson only).
"""
