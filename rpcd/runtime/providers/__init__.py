"""Model providers: the interface (``base``), the offline faux provider, the default registry."""

from __future__ import annotations

from rpcd.runtime.providers.base import (
    ModelInfo,
    Provider,
    ProviderRegistry,
    ProviderRequest,
    ToolSpec,
)


def default_registry() -> ProviderRegistry:
    """The registry the daemon starts with: the faux provider (scripted from
    ``$RPCD_FAUX_SCRIPT`` if set), the offline fallback. The network providers (catalog,
    models.json) are added by the factory when it creates a session (``refresh_providers``)."""
    from rpcd.runtime.providers.faux import FauxProvider

    return ProviderRegistry([FauxProvider.from_env()])


__all__ = ["ModelInfo", "Provider", "ProviderRegistry", "ProviderRequest", "ToolSpec", "default_registry"]
