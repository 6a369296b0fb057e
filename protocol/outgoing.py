"""What the daemon sends a client: the params of its notifications (diagnostics, host status,
progress, extension UI) and of its own requests (trust prompt, extension dialogs, tool approval)
with their results, as attrs classes.

``rpcd.protocol.types`` re-exports every name here on first use (the daemon builds these classes
when it first sends one of them). The conventions are those of ``rpcd.protocol.types``.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import attrs

from rpcd.protocol.shapes import ApprovalDecision, DiagnosticType, HostStatus, McpServerInfo, ProgressToken, ToolKind


@attrs.frozen
class DiagnosticItem:
    type: DiagnosticType
    message: str


@attrs.frozen
class SessionDiagnosticsParams:
    operation: str
    generation: int
    cwd: str
    diagnostics: list[DiagnosticItem]
    session_file: str | None = None


@attrs.frozen
class HostStatusParams:
    status: HostStatus
    generation: int


@attrs.frozen
class McpStatusParams:
    """An MCP server of this process changed status (started, failed, stopped, restarted)."""

    server: McpServerInfo


@attrs.frozen
class ProgressBegin:
    kind: Literal["begin"]
    title: str
    message: str | None = None
    percentage: int | None = None


@attrs.frozen
class ProgressReport:
    kind: Literal["report"]
    message: str | None = None
    percentage: int | None = None


@attrs.frozen
class ProgressEnd:
    kind: Literal["end"]
    message: str | None = None


ProgressValue: TypeAlias = ProgressBegin | ProgressReport | ProgressEnd


@attrs.frozen
class ProgressParams:
    token: ProgressToken
    value: ProgressValue


@attrs.frozen
class UiNotifyParams:
    message: str
    notify_type: DiagnosticType = "info"


@attrs.frozen
class AuthPromptOption:
    id: str
    label: str


@attrs.frozen
class AuthPromptSpec:
    """Pi's login prompt: ``select`` one of ``options`` (answer its ``id``), ``text``, ``secret`` (show
    it masked), ``manual_code`` (paste an authorization code or the redirect URL; withdrawn with
    ``$/cancelRequest`` when the browser's redirect reached the daemon first)."""

    type: Literal["select", "text", "secret", "manual_code"]
    message: str
    options: list[AuthPromptOption] | None = None
    placeholder: str | None = None


@attrs.frozen
class AuthPromptParams:
    login_id: str
    """One ``login`` request's prompts and notices share it."""
    provider: str
    prompt: AuthPromptSpec


@attrs.frozen
class AuthPromptResult:
    value: str | None = None
    """The answer; absent (or ``cancelled: true``) declines, which ends the login."""
    cancelled: bool | None = None


@attrs.frozen
class AuthNotifyParams:
    login_id: str
    provider: str
    notice: dict[str, Any]
    """Pi's login notice: ``{"type": "auth_url", "url", "instructions"}`` (open it in a browser),
    ``{"type": "device_code", "userCode", "verificationUri", "intervalSeconds"?, "expiresInSeconds"?}``
    (show the code, open the page), ``{"type": "progress", "message"}``, ``{"type": "info", "message",
    "links"?}``."""


@attrs.frozen
class AuthorizeProjectParams:
    cwd: str
    reasons: list[str]
    """Why trust is asked (project-local extensions, settings, ...)."""


@attrs.frozen
class AuthorizeProjectResult:
    decision: Literal["trust", "trustOnce", "deny"]
    remember: bool | None = None


@attrs.frozen
class UiConfirmParams:
    title: str
    message: str


@attrs.frozen
class UiConfirmResult:
    confirmed: bool


@attrs.frozen
class UiSelectParams:
    title: str
    options: list[str]


@attrs.frozen
class UiSelectResult:
    value: str | None = None
    """Absent: the user cancelled."""


@attrs.frozen
class UiInputParams:
    title: str
    placeholder: str | None = None


@attrs.frozen
class UiInputResult:
    value: str | None = None
    """Absent: the user cancelled."""


@attrs.frozen
class UiEditorParams:
    title: str
    prefill: str | None = None
    """Text to start the multi-line editor with."""


@attrs.frozen
class UiEditorResult:
    value: str | None = None
    """The edited text; absent: the user cancelled."""


@attrs.frozen
class UiSetStatusParams:
    key: str
    text: str | None = None
    """Absent: clear the status entry ``key``."""


@attrs.frozen
class UiSetWidgetParams:
    key: str
    lines: list[str] | None = None
    """Absent: clear the widget ``key``."""
    placement: Literal["aboveEditor", "belowEditor"] = "aboveEditor"


@attrs.frozen
class UiSetTitleParams:
    title: str


@attrs.frozen
class UiSetEditorTextParams:
    text: str


@attrs.frozen
class ToolLocation:
    path: str
    """Absolute."""
    line: int | None = None


@attrs.frozen
class ToolAuthorizeParams:
    session_id: str
    generation: int
    tool_call_id: str
    tool_name: str
    kind: ToolKind
    """ACP's ToolKind word for the call."""
    title: str
    """One line for a person: ``bash: rm -rf build``, ``edit src/a.py``."""
    arguments: dict[str, Any]
    """The call's arguments; a string longer than 2000 characters is cut and ends ``… [N more characters]``
    — except a ``bash`` call's ``command``, which is always whole."""
    locations: list[ToolLocation]
    """The paths the call acts on, symbolic links resolved (empty for ``bash``)."""
    always_rule: ToolAuthorizeAlwaysRule | None = None
    """The rule an ``allowAlways`` / ``rejectAlways`` answer stores, so the client can show it first."""
    notices: list[str] = attrs.Factory(list)
    """Sentences to show beside the question: a command longer than its title (and the operators
    the title leaves out), a path that resolves through a symbolic link, arguments cut here."""


@attrs.frozen
class ToolAuthorizeAlwaysRule:
    """An approval rule's matcher: ``command`` (bash: ``words *`` or a whole command), ``path`` (a file
    tool's glob), neither (every call of the tool); ``description`` says it in words."""

    tool_name: str
    description: str
    command: str | None = None
    path: str | None = None


@attrs.frozen
class ToolAuthorizeResult:
    decision: ApprovalDecision
    reason: str | None = None
    """For a rejection: told to the model with the refusal."""
