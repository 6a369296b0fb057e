"""``<agentDir>/models-store.json``: the model lists Pi refreshes from the network (pi-coding-agent
``models-store``, pi-ai ``models.ts``), shared with Pi.

One entry per provider id: ``{"models": [Pi Model…], "checkedAt": ms, "lastModified"?: ms, "etag"?: …}``,
written as Pi writes it (the same lock and format as ``auth.json``: Pi uses one storage class for both).

* **Radius** (pi-ai ``providers/radius.ts``) has no built-in models: its list is the gateway's
  ``/v1/config`` (``oauth.radius.gateway_models``), fetched after a login and stored here; the
  stored models of provider ``radius`` are its models.
* **Built-in providers** (pi-coding-agent ``remote-catalog-provider``): Pi overlays the pi.dev catalog it
  stored here when it is newer than its built-in data (``lastModified`` after the catalog's
  ``generatedAt``): each stored model replaces the built-in one of its id or is added. rpcd reads these
  overlays (it never fetches them), so it lists the models Pi lists.

Reading never fails: a missing, unreadable or malformed file (or entry) is no overlay.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import attrs

from rpcd.providers.catalog import Catalog

MODELS_STORE_FILE: Final = "models-store.json"
RADIUS: Final = "radius"


def store_path(agent_dir: str) -> str:
    return os.path.join(agent_dir, MODELS_STORE_FILE)


def _generated_at_ms(catalog: Catalog) -> float | None:
    try:
        return datetime.fromisoformat(catalog.generated_at.replace("Z", "+00:00")).timestamp() * 1000
    except ValueError:
        return None


def _entry_models(entry: Any, provider: str) -> list[Mapping[str, Any]]:
    models = entry.get("models") if isinstance(entry, dict) else None
    if not isinstance(models, list):
        return []
    return [m for m in models if isinstance(m, dict) and isinstance(m.get("id"), str) and m.get("provider") == provider]


Models = Sequence[Mapping[str, Any]]


def _merge(baseline: Models, dynamic: Models) -> tuple[Mapping[str, Any], ...]:
    """pi-coding-agent ``mergeModels``: a stored model replaces the built-in one of its id, else is added."""
    merged = list(baseline)
    for model in dynamic:
        index = next((i for i, m in enumerate(merged) if m.get("id") == model["id"]), None)
        if index is None:
            merged.append(model)
        else:
            merged[index] = model
    return tuple(merged)


_OVERLAID: dict[str, tuple[object, Catalog, Catalog]] = {}
"""Per store file: (its revision, the catalog, the overlaid catalog) — one object per revision, so the
providers' per-spec caches (``builtin_spec``, ``remote._models``) keep hitting."""


def with_stored_models(catalog: Catalog, agent_dir: str) -> Catalog:
    """The catalog with the model lists Pi (or rpcd, for Radius) stored in ``models-store.json``."""
    from rpcd.providers.authfile import revision

    path = store_path(agent_dir)
    current = revision(path)
    if current is None:
        return catalog
    cached = _OVERLAID.get(path)
    if cached is not None and cached[0] == current and cached[1] is catalog:
        return cached[2]
    overlaid = _overlay(catalog, path)
    _OVERLAID[path] = (current, catalog, overlaid)
    return overlaid


def _overlay(catalog: Catalog, path: str) -> Catalog:
    from rpcd.providers.authfile import AuthFile, AuthFileError

    try:
        stored = AuthFile(path).read()
    except (AuthFileError, ValueError):
        return catalog
    generated_at = _generated_at_ms(catalog)
    providers = dict(catalog.providers)
    changed = False
    for provider_id, entry in stored.items():
        builtin = providers.get(provider_id)
        if builtin is None:
            continue
        models = _entry_models(entry, provider_id)
        if provider_id != RADIUS:  # Pi's remoteModels: only an overlay newer than the built-in data
            last_modified = entry.get("lastModified") if isinstance(entry, dict) else None
            if generated_at is not None and (not isinstance(last_modified, int | float)
                                             or isinstance(last_modified, bool) or last_modified <= generated_at):
                continue
        if not models:
            continue
        providers[provider_id] = attrs.evolve(builtin, models=_merge(builtin.models, models))
        changed = True
    return attrs.evolve(catalog, providers=providers) if changed else catalog


async def store_models(agent_dir: str, provider: str, models: Sequence[Mapping[str, Any]]) -> None:
    """Pi's ``publish({persist: {models, checkedAt}})``: the provider's entry replaced under the lock."""
    from rpcd.providers.authfile import AuthFile

    entry = {"models": [dict(m) for m in models], "checkedAt": int(time.time() * 1000)}

    async def replace(_current: dict[str, Any] | None) -> dict[str, Any]:
        return entry

    await AuthFile(store_path(agent_dir)).modify(provider, replace)
