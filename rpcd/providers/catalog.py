"""Pi 0.85.0's built-in providers and models, as data (``catalog.json``).

The file is generated from the installed Pi package by ``scripts/gen_catalog.py``; it is
read once per process, on first use (the daemon's startup does not pay for it unless a
session needs a model). Each provider entry keeps Pi's model objects unchanged, plus what
``scripts/gen_catalog.py`` learnt from Pi's credential code:

* ``auth.env``: ``[variable, "apiKey" | "bearer"]`` in the order Pi reads them (a
  ``bearer`` value is sent as ``Authorization: Bearer``, as Anthropic's
  ``ANTHROPIC_AUTH_TOKEN``);
* ``auth.oauth``: the provider supports Pi's OAuth login (``/login``);
* ``auth.custom``: Pi's resolution needs more than one variable or files (AWS profiles,
  Vertex ADC, Cloudflare account ids) — rpcd does not implement it, so only a stored
  ``auth.json`` key or a models.json ``apiKey`` makes such a provider usable;
* ``auth.apiKey`` / ``auth.stored``: the provider accepts API keys at all / stored ones.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

import attrs


@attrs.frozen
class AuthSpec:
    env: tuple[tuple[str, str], ...] = ()
    oauth: bool = False
    custom: bool = False
    api_key: bool = True
    stored: bool = True

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> AuthSpec:
        return cls(
            env=tuple((str(name), str(kind)) for name, kind in raw.get("env", ())),
            oauth=bool(raw.get("oauth")),
            custom=bool(raw.get("custom")),
            api_key=bool(raw.get("apiKey", True)),
            stored=bool(raw.get("stored", True)),
        )

    @property
    def env_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.env)


@attrs.frozen
class BuiltinProvider:
    id: str
    name: str
    base_url: str | None
    auth: AuthSpec
    models: tuple[Mapping[str, Any], ...] = attrs.field(repr=False)
    """Pi's ``Model`` objects, unchanged."""


@attrs.frozen
class Catalog:
    pi_version: str
    generated_at: str
    providers: Mapping[str, BuiltinProvider]
    default_model_per_provider: tuple[tuple[str, str], ...]
    """Pi's ``defaultModelPerProvider`` in its order (the order is the preference)."""

    def default_model_id(self, provider: str) -> str | None:
        return next((m for p, m in self.default_model_per_provider if p == provider), None)


def _load_json() -> Any:
    # The package's own file, beside this module (rpcd is installed as files: a wheel, or the checkout).
    # ``importlib.resources`` reads the same bytes, after importing ``tempfile`` and ``shutil`` for the
    # zipped packages it also serves (~5 ms of every daemon's start; ``tests/daemon/test_first_answer_imports.py``).
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog.json"), "rb") as file:
        raw = file.read()
    try:
        import orjson

        return orjson.loads(raw)
    except ImportError:  # pragma: no cover - orjson is a dependency
        import json

        return json.loads(raw)


@functools.lru_cache(maxsize=1)
def builtin_catalog() -> Catalog:
    data = _load_json()
    providers = {
        str(p["id"]): BuiltinProvider(
            id=str(p["id"]),
            name=str(p.get("name") or p["id"]),
            base_url=p.get("baseUrl"),
            auth=AuthSpec.from_json(p.get("auth") or {}),
            models=tuple(p.get("models") or ()),
        )
        for p in data["providers"]
    }
    return Catalog(
        pi_version=str(data.get("piVersion", "")),
        generated_at=str(data.get("generatedAt", "")),
        providers=providers,
        default_model_per_provider=tuple((str(p), str(m)) for p, m in data.get("defaultModelPerProvider", ())),
    )
