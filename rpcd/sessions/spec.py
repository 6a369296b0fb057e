"""What a session is composed from: the process's flags (``ProcessSpec``, one per process) and what
one session adds to them (``SessionSpec``: its cwd, its MCP servers).

Every front builds these and nothing else: ``rpcd`` and ``rpcd acp`` from the same parsed flags
(``rpcd.daemon``), a test from keywords. The defaults of the flags live here, once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final, Literal

import attrs

from rpcd.core.model_inputs import ModelInputs
from rpcd.core.values import ApprovalPolicy, SandboxMode
from rpcd.tools import ToolSelection

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT",
    "DEFAULT_EXIT_TIMEOUT",
    "DEFAULT_TRUST_TIMEOUT",
    "DEFAULT_UI_TIMEOUT",
    "EXIT_FAILED",
    "EXIT_OK",
    "McpServer",
    "ProcessSpec",
    "SessionSpec",
    "TrustPolicy",
]

DEFAULT_TRUST_TIMEOUT: Final = 120.0
"""``--trust-timeout``: a person may have to read the reasons: generous, but finite (timeout ⇒ deny)."""
DEFAULT_UI_TIMEOUT: Final = 300.0
"""``--ui-timeout``: used when an extension passes no timeout of its own (Pi dialogs otherwise wait
forever)."""
DEFAULT_APPROVAL_TIMEOUT: Final = 300.0
"""``--approval-timeout``: how long a tool call waits for the client's decision (timeout ⇒ reject)."""
DEFAULT_EXIT_TIMEOUT: Final = 10.0
"""``--exit-timeout``: the orderly end's bound on the final disposal (and on stray threads)."""

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
"""The process's exit status after its orderly end: 1 when a final disposal failed (or never had a session)."""

TrustPolicy = Literal["ask", "deny", "trust"]


@attrs.frozen
class ProcessSpec:
    """The flags every session of the process is composed with (Pi's command line, rpcd's own)."""

    agent_dir: str
    cwd: str = attrs.field(factory=os.getcwd)
    """The directory rpcd was started in (``--cwd``): the startup session's, and the project whose
    trusted settings may name the session dir."""
    session_dir: str | None = None
    """``--session-dir`` as given (resolved with the environment and settings at start)."""
    extensions: tuple[str, ...] = ()
    extension_flags: Mapping[str, bool | str] = attrs.field(factory=dict)
    no_context_files: bool = False
    no_extensions: bool = False
    """``--no-extensions``: none discovered or listed in settings (``extensions``, ``-e``, still load)."""
    skill_paths: tuple[str, ...] = ()
    """``--skill PATH`` (absolute): skill files or folders, after the discovered ones."""
    no_skills: bool = False
    """``--no-skills``: none discovered or listed in settings (``skill_paths`` still load)."""
    prompt_template_paths: tuple[str, ...] = ()
    """``--prompt-template PATH`` (absolute): template files or folders, after the discovered ones."""
    no_prompt_templates: bool = False
    model_inputs: ModelInputs = attrs.field(factory=ModelInputs)
    """``--provider`` / ``--model`` / ``--thinking`` / ``--api-key`` / ``--models`` (Pi's flags)."""
    tool_selection: ToolSelection = attrs.field(factory=ToolSelection)
    trust_policy: TrustPolicy = "ask"
    """``ask``: ask the client when it can answer, else deny; ``deny`` / ``trust``: decided without
    asking (the daemon still asks a client that declared ``authorizeProject``)."""
    trust_timeout: float = DEFAULT_TRUST_TIMEOUT
    ui_timeout: float = DEFAULT_UI_TIMEOUT
    approval: ApprovalPolicy | None = None
    """``--approval``: the starting policy (else the ``approvalPolicy`` setting, else the front's default)."""
    approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT
    exit_timeout: float = DEFAULT_EXIT_TIMEOUT
    in_memory: bool = False
    """``--in-memory``: new sessions are never written."""
    sandbox: SandboxMode | None = None
    """``--sandbox``: the mode commands start in (else the ``sandbox`` setting, else ``off``)."""
    sandbox_network: bool | None = None
    """``--sandbox-network on|off`` (else the setting's ``network``, else off)."""


@attrs.frozen
class McpServer:
    """One MCP server a session asks for (ACP's ``mcpServers`` entry): a command to run over stdio,
    or a URL (streamable HTTP or SSE). The MCP client pool (a process service, issue 33) runs them."""

    name: str
    transport: Literal["stdio", "http", "sse"] = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    url: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class SessionSpec:
    """What one session adds to the process's flags."""

    cwd: str
    mcp_servers: tuple[McpServer, ...] = ()
    """The MCP servers whose tools this session gets (ACP: the request's ``mcpServers``)."""
    additional_directories: tuple[str, ...] = ()
    """More roots the session works in beside ``cwd`` (ACP's ``additionalDirectories``; absolute):
    writable in the ``workspace-write`` sandbox as the project is."""
