"""The default runtime factory: process-global inputs closed over once, everything
cwd-bound rebuilt for the target cwd on every call.

This is the seed's ``createRuntime`` (§3): ``authorize_project`` and the process
inputs (absolute extension paths, flags, trust override) are fixed when the daemon
starts; each call builds fresh services for *its* cwd (settings, context files,
extensions, trust), then a session over the given SessionManager, and returns them
with a copy of the services' diagnostics as one coherent result. Nothing is cached
per cwd, so a switch back to a project re-reads its settings and re-imports its
extensions.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from rpcd.core.values import Diagnostic
from rpcd.runtime.providers import default_registry
from rpcd.runtime.providers.base import ProviderRegistry
from rpcd.runtime.providers.faux import FauxProvider, FauxScriptError
from rpcd.runtime.runtime import CreateRuntimeResult, RuntimeFactory
from rpcd.runtime.services import AuthorizeProject, ProcessInputs, create_services
from rpcd.runtime.session import create_agent_session
from rpcd.store import SessionManager

FAUX_SCRIPT_SETTING = "fauxScript"


def _apply_faux_script(services: Any, registry: ProviderRegistry) -> list[Diagnostic]:
    """Honour the ``fauxScript`` setting (a path, relative to the cwd) for the faux provider."""
    path = services.settings.get(FAUX_SCRIPT_SETTING)
    if not isinstance(path, str) or not path:
        return []
    absolute = path if os.path.isabs(path) else os.path.join(services.cwd, path)
    for provider in registry.providers():
        if isinstance(provider, FauxProvider):
            try:
                provider.use_script_file(absolute)
            except FauxScriptError as exc:
                return [Diagnostic("warning", str(exc))]
            return []
    return [Diagnostic("warning", f'Setting "{FAUX_SCRIPT_SETTING}" ignored: no faux provider registered')]


def _refresh_models_json(registry: ProviderRegistry, agent_dir: str, services: Any) -> list[Diagnostic]:
    """Re-read ``<agentDir>/models.json`` for every session, as Pi reloads it: an edit
    takes effect at the next replacement. A broken file is a diagnostic, never a failure."""
    from rpcd.runtime.providers.openai_compat import refresh_configured_providers

    settings = getattr(services.settings, "effective", None)
    return refresh_configured_providers(registry, agent_dir, settings=settings)


def make_default_factory(
    process_inputs: ProcessInputs,
    *,
    authorize_project: AuthorizeProject | None = None,
    provider_registry: ProviderRegistry | None = None,
) -> RuntimeFactory:
    """The factory rpcd uses; ``provider_registry`` defaults to ``default_registry()``
    (the faux provider) and is shared by every session the factory creates. Each call
    also (re)registers the OpenAI-compatible providers of ``<agentDir>/models.json``."""
    registry = provider_registry if provider_registry is not None else default_registry()

    async def factory(
        *,
        cwd: str,
        agent_dir: str,
        session_manager: SessionManager,
        session_start_event: Mapping[str, Any] | None,
    ) -> CreateRuntimeResult:
        # create_services asks authorize_project itself, with the reasons it found for *this* cwd.
        services = await create_services(
            cwd, agent_dir, process_inputs=process_inputs, authorize_project=authorize_project
        )
        diagnostics = [
            *services.diagnostics,
            *_refresh_models_json(registry, agent_dir, services),
            *_apply_faux_script(services, registry),
        ]
        session, fallback = create_agent_session(
            services=services,
            session_manager=session_manager,
            registry=registry,
            session_start_event=session_start_event,
            tool_selection=process_inputs.tool_selection,
        )
        if fallback is not None and session.model is not None:
            diagnostics.append(Diagnostic("warning", fallback))
        return CreateRuntimeResult(
            session=session, services=services, diagnostics=diagnostics, model_fallback_message=fallback
        )

    return factory
