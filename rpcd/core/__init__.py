"""The shared vocabulary every room may import: typed failures (``errors``), the value types the
rooms exchange (``values``), secret redaction (``redact``) and durable-write helpers (``durable``).

Doors: imports nothing of rpcd outside ``rpcd.core`` (third-party: attrs only).
"""
