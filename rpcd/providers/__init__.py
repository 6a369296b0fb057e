"""Model providers, Pi's pi-ai in Python: the interface (``base``), the offline faux provider, the
default registry, the provider APIs (``anthropic``, ``openai_compat``, ``openai_responses``,
``google``), the catalog, credentials, ``models.json`` (``models_config``) and model selection
(``model_selection``, from the flags of ``rpcd.core.model_inputs``).

Doors: may import ``rpcd.core`` only: nothing of the runtime, the store, the tools or any front.
"""

from __future__ import annotations

from rpcd.providers.base import (
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
    from rpcd.providers.faux import FauxProvider

    return ProviderRegistry([FauxProvider.from_env()])


__all__ = ["ModelInfo", "Provider", "ProviderRegistry", "ProviderRequest", "ToolSpec", "default_registry"]
