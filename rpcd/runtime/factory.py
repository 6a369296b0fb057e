"""The default runtime factory: process-global inputs closed over once, everything
cwd-bound rebuilt for the target cwd on every call.

This is the seed's ``createRuntime`` (§3): ``authorize_project`` and the process
inputs (absolute extension paths, flags, trust override, the model flags) are fixed when
the daemon starts; each call builds fresh services for *its* cwd (settings, context files,
extensions, trust), re-reads the providers (catalog, ``models.json``, ``auth.json``, the
environment), picks the session's model as Pi does (``rpcd.providers.model_selection``), then
builds a session over the given SessionManager and returns it with the diagnostics as one
coherent result. Nothing is cached per cwd, so a switch back to a project re-reads its
settings and re-imports its extensions.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from rpcd.core.values import Diagnostic
from rpcd.providers import default_registry
from rpcd.providers.base import ProviderRegistry
from rpcd.providers.faux import FauxProvider, FauxScriptError
from rpcd.providers.model_selection import ModelInputs, resolve_cli_model, scoped_models, select_session_model
from rpcd.runtime.runtime import CreateRuntimeResult, RuntimeFactory
from rpcd.runtime.services import AuthorizeProject, ProcessInputs, create_services
from rpcd.runtime.session import configured_sandbox, create_agent_session
from rpcd.store import SessionManager
from rpcd.tools import POLICY_SETTING
from rpcd.tools.environment import SETTING as ENVIRONMENT_SETTING
from rpcd.tools.environment import environment_policy
from rpcd.tools.sandbox import sandbox_diagnostics

if TYPE_CHECKING:
    import httpx

    from rpcd.mcp.session import SessionMcp

FAUX_SCRIPT_SETTING = "fauxScript"


def _apply_faux_script(services: Any, registry: ProviderRegistry) -> list[Diagnostic]:
    """Honour the ``fauxScript`` setting (a path, relative to the cwd) for the faux provider; a
    ``$RPCD_FAUX_SCRIPT`` script that could not be used is reported here too."""
    found = [Diagnostic("warning", provider.script_warning) for provider in registry.providers()
             if isinstance(provider, FauxProvider) and provider.script_warning]
    path = services.settings.get(FAUX_SCRIPT_SETTING)
    if not isinstance(path, str) or not path:
        return found
    absolute = path if os.path.isabs(path) else os.path.join(services.cwd, path)
    for provider in registry.providers():
        if isinstance(provider, FauxProvider):
            try:
                provider.use_script_file(absolute)
            except FauxScriptError as exc:
                return [*found, Diagnostic("warning", str(exc))]
            return found
    return [*found, Diagnostic("warning", f'Setting "{FAUX_SCRIPT_SETTING}" ignored: no faux provider registered')]


def refresh_providers(
    registry: ProviderRegistry,
    agent_dir: str,
    *,
    settings: Any = None,
    inputs: ModelInputs | None = None,
    env: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> list[Diagnostic]:
    """Replace the registry's network providers by a fresh composition (catalog, models.json,
    auth.json, environment) and give ``--api-key`` to the provider of the selected model.

    A broken file is a diagnostic, never a failure; the faux provider (and any provider
    registered by other code) stays. Imports the provider modules on first use only."""
    from rpcd.providers.remote import RemoteProvider, build_providers

    effective = getattr(settings, "effective", settings) if settings is not None else {}
    providers, diagnostics = build_providers(agent_dir, settings=effective or {}, env=env, transport=transport)
    for old in registry.providers():
        if isinstance(old, RemoteProvider):
            registry.unregister(old.name)
    for provider in providers:
        if registry.provider(provider.name) is None:
            registry.register(provider)
    inputs = inputs or ModelInputs()
    if inputs.api_key:
        cli = resolve_cli_model(registry, inputs.provider, inputs.model, inputs.thinking)
        target = cli.model.provider if cli.model is not None else None
        if target is None:
            scope = scoped_models(registry, settings, inputs)
            target = scope[0].model.provider if scope else None
        if target is None:
            diagnostics.append(Diagnostic("warning", "--api-key requires a model to be specified via --model, "
                                                     "--provider/--model, or --models; the key is not used"))
        else:
            for provider in providers:
                provider.use_credentials(attrs.evolve(provider.credentials, runtime_keys={target: inputs.api_key}))
    return diagnostics


async def open_mcp(process_inputs: ProcessInputs, services: Any, diagnostics: list[Diagnostic]) -> SessionMcp | None:
    """The MCP servers of a session in ``services.cwd``: the ``mcp.json`` files (the project's only
    when it is trusted) and the front's list, started or shared through the process's pool. Nothing
    MCP but its config reader is imported (and no pool started) when no file names a server and the
    front names none."""
    get_pool = process_inputs.mcp_pool
    if get_pool is None:
        return None
    from rpcd.mcp.config import dedupe, load_file_configs

    files = load_file_configs(services.cwd, services.agent_dir, project_trusted=services.project_trusted)
    diagnostics.extend(files.diagnostics)
    configs = dedupe([*files.servers, *process_inputs.mcp_servers])
    if not configs:
        return None
    from rpcd.mcp.session import SessionMcp

    mcp = await SessionMcp.open(await get_pool(), configs)
    diagnostics.extend(mcp.diagnostics())
    return mcp


def make_default_factory(
    process_inputs: ProcessInputs,
    *,
    authorize_project: AuthorizeProject | None = None,
    provider_registry: ProviderRegistry | None = None,
    model_inputs: ModelInputs | None = None,
    provider_env: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> RuntimeFactory:
    """The factory rpcd uses; ``provider_registry`` defaults to ``default_registry()``
    (the faux provider) and is shared by every session the factory creates. Each call
    also re-reads the network providers (``refresh_providers``) and picks the model."""
    registry = provider_registry if provider_registry is not None else default_registry()
    inputs = model_inputs or ModelInputs()

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
            *session_manager.load_diagnostics,  # what its file's reading skipped (unreadable or too long lines)
            *services.diagnostics,
            *refresh_providers(registry, agent_dir, settings=services.settings, inputs=inputs, env=provider_env,
                               transport=transport),
            *_apply_faux_script(services, registry),
            *(Diagnostic("warning", warning)
              for warning in environment_policy(services.settings.get(ENVIRONMENT_SETTING))[1]),
        ]
        if process_inputs.approval is not None:
            diagnostics += process_inputs.approval.diagnostics(services.settings.get(POLICY_SETTING))
        if process_inputs.sandbox is not None:
            diagnostics += sandbox_diagnostics(process_inputs.sandbox, *configured_sandbox(services), services.cwd)
        mcp = await open_mcp(process_inputs, services, diagnostics)
        try:
            session, selection = create_agent_session(
                services=services,
                session_manager=session_manager,
                registry=registry,
                session_start_event=session_start_event,
                model_inputs=inputs,
                tool_selection=process_inputs.tool_selection,
                approval=process_inputs.approval,
                tool_operations=process_inputs.tool_operations,
                sandbox=process_inputs.sandbox,
                mcp=mcp,
            )
        except BaseException:
            if mcp is not None:
                mcp.release()
            raise
        diagnostics.extend(selection.diagnostics)
        return CreateRuntimeResult(
            session=session, services=services, diagnostics=diagnostics,
            model_fallback_message=selection.fallback_message,
        )

    return factory


__all__ = ["ModelInputs", "make_default_factory", "refresh_providers", "select_session_model"]
