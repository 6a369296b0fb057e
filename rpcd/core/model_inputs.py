"""The daemon's model flags as one value (imported by the composition root at startup, so it
imports nothing else: the providers load when a session needs a model)."""

from __future__ import annotations

import attrs


@attrs.frozen
class ModelInputs:
    """``--provider`` / ``--model`` / ``--thinking`` / ``--api-key`` / ``--models`` (Pi's flags),
    applied to every session the factory creates."""

    provider: str | None = None
    model: str | None = None
    thinking: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    models: tuple[str, ...] | None = None
    """``--models`` patterns (scope for ``cycleModel``); ``None``: settings ``enabledModels``."""
