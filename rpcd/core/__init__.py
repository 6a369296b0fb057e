"""The shared vocabulary every room may import: typed failures (``errors``), the value types the
rooms exchange (``values``), secret redaction (``redact``), durable-write helpers (``durable``),
the one JSON encoding of files and wire (``codec``), safe opening of files (``files``), the
progress reporter of long operations (``progress``), JavaScript's string rules where text must
match Pi's (``jstext``), JSON with comments (``jsonc``) and the model flags as one value
(``model_inputs``).

Doors: imports nothing of rpcd outside ``rpcd.core`` (third-party: attrs and orjson only).
"""
